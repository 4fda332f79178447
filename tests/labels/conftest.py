"""Label tests import their helpers (judged_runs.py) as top-level modules, like tests/view does."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
