"""Make the doc test helpers (`doc_suites`, `doc_judges`) importable as top-level modules."""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from servers.fake_openai import fake_openai  # noqa: E402,F401  (the shared fake OpenAI-compatible server fixture)
