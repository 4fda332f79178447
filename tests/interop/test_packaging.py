"""The interop package ships: setuptools finds packages by their `__init__.py` (pyproject's packages.find)."""

from pathlib import Path

from setuptools import find_packages

SOURCE = Path(__file__).resolve().parents[2] / "src"


def test_the_interop_package_is_found_by_the_build():
    assert "assay.core.interop" in find_packages(str(SOURCE))
