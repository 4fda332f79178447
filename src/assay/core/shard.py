"""`--shard i/n`: a stable, balanced split of a run's units over n independent jobs.

Every shard sees the same plan and computes the same assignment, so n machines (CI matrix jobs,
Kubernetes indexed jobs, Slurm arrays) cover the plan exactly once without talking to each other.
"""

from __future__ import annotations

import hashlib
import heapq
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.errors import UsageError

__all__ = ["Shard", "assign_shards", "check_shard_set", "parse_shard", "shard_members", "stable_hash"]

_SHARD = re.compile(r"^\s*([0-9]+)\s*/\s*([0-9]+)\s*$")  # not `\d`: it takes any script's digits


@dataclass(frozen=True, slots=True)
class Shard:
    index: int  # 1-based, as people count jobs
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, option: str = "--shard") -> Shard:
    match = _SHARD.match(text)
    if match is None:
        raise UsageError(f"{option} must look like i/n (for example 1/4), got {text!r}", option)
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1:
        raise UsageError(f"{option} {text}: n, the number of shards, must be at least 1 (for example 1/4)", option)
    if not 1 <= index <= count:
        raise UsageError(f"{option} {text}: i must be between 1 and n, here 1 to {count}", option)
    return Shard(index, count)


def stable_hash(key: str) -> int:
    """The same on every machine and Python (unlike `hash`, which is salted per process)."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def assign_shards(weights: Mapping[str, int], count: int) -> dict[str, int]:
    """unit key -> 1-based shard: heaviest first to the lightest shard (ties: hash order, lowest shard).

    Greedy longest-first keeps shards within one unit's weight of each other; hashing only breaks
    ties, so the split depends on the unit set and weights, never on input order.

    Only the shards that received a unit are kept (in a heap, by load and number): the lowest-numbered
    empty one is the next after them, so a huge n (a typo for 4) costs no more than n = the unit count.
    """
    used: list[tuple[int, int]] = []  # (load, 0-based shard) of the shards that received a unit
    assignment: dict[str, int] = {}
    for key in sorted(weights, key=lambda key: (-weights[key], stable_hash(key), key)):
        empty = (0, len(used)) if len(used) < count else None  # every shard below it was used
        lightest = heapq.heappop(used) if used and (empty is None or used[0] < empty) else empty
        assert lightest is not None
        load, shard = lightest
        heapq.heappush(used, (load + max(0, weights[key]), shard))
        assignment[key] = shard + 1
    return assignment


def shard_members(keys: Sequence[str], weights: Sequence[int], shard: Shard | None) -> set[str]:
    """The keys `shard` runs (all of them without a shard)."""
    if shard is None:
        return set(keys)
    combined: dict[str, int] = {}
    for key, weight in zip(keys, weights, strict=True):
        combined[key] = combined.get(key, 0) + weight
    assignment = assign_shards(combined, shard.count)
    return {key for key, index in assignment.items() if index == shard.index}


def check_shard_set(
    manifests: Sequence[Any], *, identity_keys: Sequence[str] = (), pace_options: Sequence[str] = ()
) -> Shard:
    """Refuse anything but shards 1..n of one invocation (same kind, identity, options and git commit), each once.

    `manifests` are run-record manifests whose options carry `shard: "i/n"`; returns the last shard. The shards
    may differ in `pace_options`: recorded options that change how fast a shard ran, never what a unit came to
    (each CI job sized to its machine, say)."""
    if not manifests:
        raise UsageError("give the shard runs to merge")
    first = manifests[0]
    seen: dict[int, str] = {}
    count = None
    shard = None
    for manifest in manifests:
        text = manifest.options.get("shard")
        if not text:
            # `runs merge .assay/records/*` a second time (merging again replaces the merged run) met the run the
            # first merge made, said to be "not started with --shard" as if a shard had been run wrongly.
            merged = manifest.options.get("merged_from")
            made = (f"it is the run `assay runs merge` made of {', '.join(map(str, merged))}" if merged
                    else "it was not started with --shard")
            raise UsageError(f"run {manifest.run_id} is not a shard run ({made}); give the shard runs only: the store's "
                             "records/ also holds whole and merged runs, so collect the shards' records in a folder of "
                             "their own, or name the shards by run id")
        shard = parse_shard(str(text))
        if manifest.kind != first.kind:
            raise UsageError(f"runs of different kinds cannot be merged: {first.run_id} is {first.kind}, "
                             f"{manifest.run_id} is {manifest.kind}")
        if count is not None and shard.count != count:
            raise UsageError(f"run {manifest.run_id} is shard {shard} but {first.run_id} is one of {count}")
        count = shard.count
        if shard.index in seen:
            if seen[shard.index] == manifest.run_id:
                raise UsageError(f"run {manifest.run_id} (shard {shard}) is given twice")
            raise UsageError(f"shard {shard} is given twice: {seen[shard.index]} and {manifest.run_id}")
        seen[shard.index] = manifest.run_id
        differing = _first_difference(first, manifest, identity_keys, pace_options)
        if differing is not None:
            name, theirs, ours = differing
            raise UsageError(
                f"runs {first.run_id} and {manifest.run_id} are shards of different invocations: "
                f"{name} is {_as_given(theirs)} in {first.run_id} and {_as_given(ours)} in {manifest.run_id}"
            )
    assert count is not None and shard is not None
    missing = [str(index) for index in range(1, count + 1) if index not in seen]
    if missing:
        named = ", ".join(f"{index}/{count}" for index in missing)
        raise UsageError(f"missing shard(s) {named} of {count}: give every shard's run id or record folder (a shard whose "
                         f"job recorded no run is run again with --shard {missing[0]}/{count}, then merged with the rest)")
    return shard


def _as_given(value: Any) -> str:
    """An option's recorded value as a person gave it: a flag given or not, else its value."""
    if value is None or value is False:
        return "not given"
    return "given" if value is True else repr(value)


def _first_difference(
    first: Any, other: Any, identity_keys: Sequence[str], pace_options: Sequence[str] = ()
) -> tuple[str, Any, Any] | None:
    """The first recorded option (or identity key) two shard runs differ in, so a person sees why."""
    for key in identity_keys:
        if other.identity.get(key) != first.identity.get(key):
            return key, first.identity.get(key), other.identity.get(key)
    # Jobs of one CI pipeline check out one commit: shards of two pipelines' runs are two runs' halves.
    commits = getattr(first, "git_commit", None), getattr(other, "git_commit", None)
    if None not in commits and commits[0] != commits[1]:
        return "the git commit", *commits
    for key in sorted((set(first.options) | set(other.options)) - {"shard", *pace_options}):
        if first.options.get(key) != other.options.get(key):
            return "--" + key.replace("_", "-"), first.options.get(key), other.options.get(key)
    return None
