"""What `assay video review` checks before it serves (GlassKit's order, spec/video.md §22.1), and its URL."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from assay.errors import AssayError, CaseError

__all__ = ["prepare_review", "review_url"]


def _declared_targets(case_path: Path) -> list[str]:
    from assay.video.loading import read_yaml_mapping

    try:
        raw_targets = read_yaml_mapping(case_path).get("targets")
    except AssayError:
        return []
    return [key for key in raw_targets if isinstance(key, str)] if isinstance(raw_targets, dict) else []


def prepare_review(eval_dir: Path, case: str | None, target: str | None) -> tuple[Path, str | None]:
    """The resolved eval dir and the case's file name, after the checks GlassKit makes before serving."""
    from assay.video.loading import discover_case_paths, load_eval_config, resolve_eval_dir

    root = resolve_eval_dir(eval_dir)
    load_eval_config(root)
    paths = discover_case_paths(root, case)
    if case is None:
        return root, None
    case_path = paths[0]
    if target is not None and target not in (declared := _declared_targets(case_path)):
        # GlassKit's words, then what the case has (as `run --target` says), nearest first.
        from assay.core.format import did_you_mean

        hint = did_you_mean(target, declared, form=" (did you mean {}?)")
        targets = ", ".join(repr(name) for name in sorted(declared)) or "none"
        raise CaseError(f"case {case_path.name!r} has no target matching {target!r}{hint}; its targets: {targets}")
    return root, case_path.name


def review_url(port: int, case_file: str | None, target: str | None, time: float | None) -> str:
    query = [(name, value) for name, value in (("case", case_file), ("target", target)) if value is not None]
    if time is not None:
        query.append(("time", str(time)))
    return f"http://127.0.0.1:{port}/" + (f"?{urlencode(query)}" if query else "")
