"""UTC time as assay's files and ids write it: one ISO 8601 timestamp function and one time-ordered id.

Records, doc bundles and labels stamp times to the millisecond; checkpoint manifests and journals keep
Python's full precision (their files always have): the precision is a parameter, the format is one.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

__all__ = ["time_ordered_id", "utc_timestamp"]


def utc_timestamp(moment: datetime | None = None, *, precision: str = "milliseconds") -> str:
    """`2026-11-29T18:43:19.936Z`: UTC ISO 8601 with `Z` instead of `+00:00`; `precision` is
    `datetime.isoformat`'s timespec (`"auto"`: microseconds, or none when they are zero)."""
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    return moment.isoformat(timespec=precision).replace("+00:00", "Z")


def time_ordered_id(prefix: str, moment: datetime | None = None) -> str:
    """`<prefix>-<YYYYMMDDTHHMMSSZ>-<8 hex>`: sorts by time, unique without coordination. Every run id
    and checkpoint id has this shape (`video-…`, `agent-…`, `doc-…`, `run-…`)."""
    moment = (moment or datetime.now(UTC)).astimezone(UTC)
    return f"{prefix}-{moment.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(4)}"
