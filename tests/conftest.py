"""Test-wide setup: make the shared test helpers (`media`, fixtures) importable as top-level modules."""

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
