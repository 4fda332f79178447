"""How numbers and times are shown to people: durations, latencies, rates, byte counts; the word meant;
lists of problems cut to the first few."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T")

# How many problems one message lists before it counts the rest.
PROBLEMS_SHOWN = 5


def short_repr(value: object, limit: int = 80) -> str:
    """Python `repr`, cut to `limit` characters with a trailing `...` (console and listings)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_duration(seconds: float) -> str:
    """`0.2s`, `2m 5.5s`, `1h 2m 3.0s`."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{int(minutes)}m {rest:.1f}s"
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}h {minutes}m {rest:.1f}s"


def format_latency(seconds: float) -> str:
    """Two decimals of a millisecond below 10 ms, whole ms below 1 s, then seconds."""
    milliseconds = seconds * 1000
    if milliseconds < 10:
        return f"{milliseconds:.2f}ms"
    if seconds < 1:
        return f"{milliseconds:.0f}ms"
    if seconds < 10:
        return f"{seconds:.2f}s"
    return f"{seconds:.1f}s"


def format_rate(rate: float) -> str:
    return f"{rate:.1%}"


def format_usd(amount: float) -> str:
    """`$0`, `$0.50`, `$0.0042`, `$0.000012`, `$1,234.50`: cents, or as many places as show two significant
    digits of a smaller amount, so a small estimated cost never reads as `$0.0000`."""
    if amount == 0 or not math.isfinite(amount):
        return "$0" if amount == 0 else f"${amount}"
    places = min(12, max(2, 1 - math.floor(math.log10(abs(amount)))))
    return f"${amount:,.{places}f}"


def format_bytes(count: int) -> str:
    """`0 B`, `512 B`, `64.9 KiB`, `1.2 MiB` …"""
    if count < 1024:
        return f"{count} B"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def did_you_mean(
    word: object, choices: Iterable[str], *, cutoff: float = 0.6, form: str = "; did you mean {}?",
    shown: Callable[[str], str] = repr,
) -> str:
    """`form` with the choice closest to a misspelt `word` (as `shown` writes it), or "" when none is close. A
    choice that differs only in case (`VIDEO` for `video`) is the one meant, however short. A `word` that is
    no string (a number or list where a name goes, as config files give them) is close to nothing."""
    import difflib

    if not isinstance(word, str):
        return ""

    choices = list(choices)
    folded = word.casefold()
    same = next((choice for choice in choices if choice.casefold() == folded and choice != word), None)
    if same is not None:
        return form.format(shown(same))
    # The same words in another order (`reuse_sandbox` for `sandbox_reuse`), which difflib scores low.
    words = sorted(folded.replace("-", "_").split("_"))
    if len(words) > 1:
        swapped = next((choice for choice in choices if choice != word
                        and sorted(choice.casefold().replace("-", "_").split("_")) == words), None)
        if swapped is not None:
            return form.format(shown(swapped))
    near = difflib.get_close_matches(word, choices, n=1, cutoff=cutoff)
    return form.format(shown(near[0])) if near else ""


def misspelt_variable(env: Iterable[str], prefix: str, known: Iterable[str], whose: str) -> str | None:
    """The message for a set variable of `prefix` that is none of `known` yet close to one of them, or None.
    Such a variable was ignored, so its default ran and nothing said so. Names are compared without the
    shared prefix, which would make any two of them look alike."""
    settings = [name[len(prefix):] for name in known]
    for name in env:
        if not name.startswith(prefix) or name[len(prefix):] in settings:
            continue
        near = did_you_mean(name[len(prefix):], settings, form="{}", shown=str)
        if near:
            return f"{name} is no {whose} setting (did you mean {prefix}{near}?); rename it, or unset it"
    return None


def variable_meant(env: Iterable[str], name: str, *, cutoff: float = 0.85) -> str | None:
    """For a variable `name` that is not set: a set variable whose whole name is close to it (`ASSAY_STOER`,
    `ASAY_STORE`, `assay_store`), which was surely meant; None when there is none. Whole names are compared, so
    a misspelt prefix counts too; the cutoff is high, as every name in the environment is a candidate."""
    names = list(env)
    if name in names:
        return None
    return next((candidate for candidate in names if did_you_mean(candidate, [name], cutoff=cutoff, form="{}", shown=str)),
                None)


def join_first(
    items: Sequence[T], *, limit: int = PROBLEMS_SHOWN, separator: str = "; ", shown: Callable[[T], str] = str
) -> str:
    """The first `limit` items as `shown` writes them, joined, then `and N more`: a file with
    20,000 mistakes gives a message a person can read, not a 789 KB line. Only the shown items are
    formatted."""
    text = separator.join(shown(item) for item in items[:limit])
    more = len(items) - limit
    return f"{text}{separator}and {more:,} more" if more > 0 else text
