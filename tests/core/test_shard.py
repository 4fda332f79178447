"""`--shard i/n`: parsing, a split that is stable across machines, balanced, and covers every unit once."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from assay.core.record import RunManifest
from assay.core.shard import (
    Shard,
    assign_shards,
    check_shard_set,
    parse_shard,
    shard_members,
    stable_hash,
)
from assay.errors import UsageError


@pytest.mark.parametrize("text", ["1/1", "2/4", " 3 / 3 "])
def test_shard_parses_one_based_index_of_count(text):
    shard = parse_shard(text)
    assert 1 <= shard.index <= shard.count


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "a/b", "1-2", "2"])
def test_shard_rejects_what_is_not_i_of_n(text):
    with pytest.raises(UsageError):
        parse_shard(text)


@pytest.mark.parametrize(("text", "message"), [
    ("3/2", "--shard 3/2: i must be between 1 and n, here 1 to 2"),
    ("0/4", "--shard 0/4: i must be between 1 and n, here 1 to 4"),
    ("1/0", "--shard 1/0: n, the number of shards, must be at least 1 (for example 1/4)"),
])
def test_a_shard_out_of_range_says_which_numbers_would_do(text, message):
    with pytest.raises(UsageError) as refused:
        parse_shard(text)
    assert str(refused.value) == message


def _greedy_over_every_shard(weights, count):
    """The split as first written: every shard's load looked at for every unit."""
    loads = [0] * count
    assignment = {}
    for key in sorted(weights, key=lambda key: (-weights[key], stable_hash(key), key)):
        lightest = min(range(count), key=lambda shard: (loads[shard], shard))
        loads[lightest] += max(0, weights[key])
        assignment[key] = lightest + 1
    return assignment


@pytest.mark.parametrize("seed", range(20))
def test_the_split_is_the_greedy_one_over_every_shard(seed):
    rng = random.Random(seed)
    weights = {f"unit{i}": rng.choice([0, 1, 1, 2, 3, 8]) for i in range(rng.randint(0, 40))}
    for count in (1, 2, 3, 7, 50):
        assert assign_shards(weights, count) == _greedy_over_every_shard(weights, count)


def test_a_huge_shard_count_costs_no_more_than_the_units():
    """`--shard 1/40000000` (for 1/4): every unit gets a shard of its own, at once and in little memory."""
    import time

    weights = {f"case{i}": 1 + i % 3 for i in range(200)}
    started = time.monotonic()
    assignment = assign_shards(weights, 10**12)
    assert time.monotonic() - started < 1.0
    assert sorted(assignment.values()) == list(range(1, 201))
    assert shard_members(list(weights), list(weights.values()), Shard(10**12, 10**12)) == set()


def test_every_unit_lands_in_exactly_one_shard():
    keys = [f"case{i}" for i in range(23)]
    weights = [1 + i % 5 for i in range(23)]
    members = [shard_members(keys, weights, Shard(index, 4)) for index in range(1, 5)]
    assert sorted(key for shard in members for key in shard) == sorted(keys)


def test_split_does_not_depend_on_input_order():
    weights = {f"eval/{i}": 1 + (i * 7) % 4 for i in range(40)}
    shuffled = list(weights.items())
    random.Random(3).shuffle(shuffled)
    assert assign_shards(weights, 5) == assign_shards(dict(shuffled), 5)


def test_split_is_balanced_within_one_unit_weight():
    weights = {f"case{i}": 1 + (i * 13) % 9 for i in range(50)}
    assignment = assign_shards(weights, 4)
    loads = [sum(w for key, w in weights.items() if assignment[key] == shard) for shard in range(1, 5)]
    assert max(loads) - min(loads) <= max(weights.values())


def test_hash_is_the_same_in_another_process():
    # Python's own hash() is salted per process; shards on different machines must agree.
    code = "from assay.core.shard import stable_hash; print(stable_hash('video/clip'))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123", "PATH": ""}).stdout.strip()
    assert int(other) == stable_hash("video/clip")


def _manifest(run_id, shard, **options):
    return RunManifest(run_id=run_id, kind="video", created_at="t", options={"shard": shard, **options})


def test_a_complete_shard_set_is_accepted():
    assert check_shard_set([_manifest("b", "2/2"), _manifest("a", "1/2")]).count == 2


@pytest.mark.parametrize(
    ("manifests", "message"),
    [
        ([_manifest("a", "1/2")], "missing shard(s) 2/2 of 2"),
        ([_manifest("a", "1/2"), _manifest("b", "1/2")], "is given twice"),
        ([_manifest("a", "1/2"), _manifest("b", "2/3")], "is one of 2"),
        ([_manifest("a", "1/2", repeat=1), _manifest("b", "2/2", repeat=2)], "shards of different invocations"),
        ([RunManifest(run_id="a", kind="video", created_at="t")], "is not a shard run"),
    ],
)
def test_an_incomplete_or_mixed_shard_set_is_refused(manifests, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_shard_set(manifests)


def test_shards_of_different_invocations_are_refused_naming_what_differs():
    with pytest.raises(UsageError) as refused:
        check_shard_set([_manifest("a", "1/2", repeat=1, jobs=4), _manifest("b", "2/2", repeat=2, jobs=4)])
    assert str(refused.value) == (
        "runs a and b are shards of different invocations: --repeat is 1 in a and 2 in b"
    )
    # An option left out of one shard's command is said so, not shown as Python's None.
    with pytest.raises(UsageError) as refused:
        check_shard_set([_manifest("a", "1/2", attempts=None), _manifest("b", "2/2", attempts=2)])
    assert str(refused.value).endswith(": --attempts is not given in a and 2 in b")
    here = RunManifest(run_id="a", kind="video", created_at="t", options={"shard": "1/2"}, identity={"eval_dir": "/x"})
    there = RunManifest(run_id="b", kind="video", created_at="t", options={"shard": "2/2"}, identity={"eval_dir": "/y"})
    with pytest.raises(UsageError, match="eval_dir is '/x' in a and '/y' in b"):
        check_shard_set([here, there], identity_keys=("eval_dir",))


def test_one_run_given_twice_is_named_once():
    with pytest.raises(UsageError) as refused:
        check_shard_set([_manifest("a", "1/2"), _manifest("a", "1/2"), _manifest("b", "2/2")])
    assert str(refused.value) == "run a (shard 1/2) is given twice"


@pytest.mark.parametrize("text", ["١/3", "1/٣", "１/3"])
def test_a_shard_in_digits_of_another_script_is_refused(text):
    """`\\d` took them: `--shard ١/3` ran and recorded shard `١/3`, which no other spelling of 1/3 matched."""
    with pytest.raises(UsageError, match="must look like i/n"):
        parse_shard(text)


def test_shards_made_at_two_git_commits_are_two_runs_halves():
    """Shard records of two CI pipelines (same options, another commit) were merged into one run."""
    here = RunManifest(run_id="a", kind="video", created_at="t", options={"shard": "1/2"}, git_commit="abc")
    there = RunManifest(run_id="b", kind="video", created_at="t", options={"shard": "2/2"}, git_commit="def")
    with pytest.raises(UsageError) as refused:
        check_shard_set([here, there])
    assert str(refused.value) == (
        "runs a and b are shards of different invocations: the git commit is 'abc' in a and 'def' in b"
    )
    # The same commit, or one a job could not tell (no git there), is one invocation still.
    same = RunManifest(run_id="c", kind="video", created_at="t", options={"shard": "2/2"}, git_commit="abc")
    unknown = RunManifest(run_id="d", kind="video", created_at="t", options={"shard": "2/2"})
    assert check_shard_set([here, same]).count == check_shard_set([here, unknown]).count == 2
