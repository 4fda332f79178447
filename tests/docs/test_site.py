"""The user guide (mkdocs.yml, docs/) builds as a site in MkDocs' strict mode.

Strict mode with the `validation` settings of mkdocs.yml turns every broken link, missing anchor,
page left out of the nav and missing snippet into a failed build, so the guide cannot rot silently.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

try:
    import mkdocs  # noqa: F401
except ImportError:  # pragma: no cover - depends on the machine
    mkdocs = None

pytestmark = pytest.mark.skipif(
    mkdocs is None, reason="mkdocs is not installed: pip install -e '.[test]' (mkdocs, mkdocs-material)"
)


def _build(site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(REPO / "mkdocs.yml"),
         "--site-dir", str(site)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's banner about MkDocs 2, not a page problem
    )


def test_the_guide_builds_in_strict_mode_with_no_warning(tmp_path):
    result = _build(tmp_path / "site")
    warnings = [line for line in result.stderr.splitlines() if re.match(r"\s*WARNING\b", line)]
    assert result.returncode == 0 and not warnings, result.stderr
    for page in ("index.html", "video/case-files/index.html", "video/protocol/index.html",
                 "agent/assertions/index.html", "cli/index.html"):
        assert (tmp_path / "site" / page).is_file(), page


def test_every_page_of_docs_is_in_the_nav_and_no_nav_entry_is_missing():
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    in_nav = set(re.findall(r":\s*([\w./-]+\.md)\s*$", text, re.MULTILINE))
    docs = REPO / "docs"
    pages = {path.relative_to(docs).as_posix() for path in docs.rglob("*.md") if "examples" not in path.parts}
    assert pages == in_nav


def test_snippets_in_the_pages_name_files_that_exist():
    # The build fails on a missing snippet too; this names the page, which the build's traceback does not.
    docs = REPO / "docs"
    for page in docs.rglob("*.md"):
        for name in re.findall(r'--8<-- "([^"]+)"', page.read_text(encoding="utf-8")):
            assert (docs / name.split(":")[0]).is_file(), f"{page.relative_to(REPO)} includes {name}"
