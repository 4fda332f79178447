"""Test-wide setup: shared helpers (`media`, fixtures) importable as top-level modules, and a
throwaway results store so runs made by tests never land in the checkout's `.assay/`."""

import os
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


@pytest.fixture(autouse=True, scope="session")
def _private_results_store(tmp_path_factory):
    previous = os.environ.get("ASSAY_STORE")
    os.environ["ASSAY_STORE"] = str(tmp_path_factory.mktemp("store") / "assay.db")
    yield
    if previous is None:
        os.environ.pop("ASSAY_STORE", None)
    else:
        os.environ["ASSAY_STORE"] = previous
