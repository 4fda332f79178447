"""Helpers for agent tests: scripted agents and running one eval in-process."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from servers.fake_openai import fake_openai  # noqa: E402,F401  (the shared fake OpenAI-compatible server)
