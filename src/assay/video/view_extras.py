"""What the results viewer shows of a video unit beyond what every unit has (the video kind's `KindView`):
whether its sampled frame can be shown (the unit recorded the video it was read from)."""

from __future__ import annotations

from typing import Any

from assay.core.record import UnitResult
from assay.core.run.kinds import KindView

__all__ = ["VIEW"]


def unit_extras(unit: UnitResult) -> dict[str, Any]:
    return {"has_frame": bool((unit.artifacts or {}).get("video"))}


VIEW = KindView(unit_extras=unit_extras)
