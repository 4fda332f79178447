"""Make the fuzz helpers (`fuzz_formats`) importable as a top-level module, as benchmarks/fuzz.py imports them."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
