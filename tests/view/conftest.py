"""Viewer tests share one store filled by real runs of each kind (see filled_store.py)."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from filled_store import filled_store, store_env  # noqa: F401
from servers.fake_openai import fake_openai  # noqa: F401  (the shared fake OpenAI-compatible server)
