"""Video evals (GlassKit Eval compatible): cases, sampling, adapters and the run.

Submodules are imported where used so `import assay.video` stays cheap.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["js_kit_path", "js_kit_types_path"]

_JS_DIR = Path(__file__).resolve().parent / "js"


def js_kit_path() -> Path:
    """The shipped node adapter kit (`adapter-kit.mjs`): copy it beside an `adapter.mjs` (as
    `assay video init --adapter js` does) or import it from this path."""
    return _JS_DIR / "adapter-kit.mjs"


def js_kit_types_path() -> Path:
    """The kit's TypeScript declarations (`adapter-kit.d.mts`, the name TypeScript looks for beside a `.mjs`)."""
    return _JS_DIR / "adapter-kit.d.mts"
