"""`sha256-seed-parity-v1` against fixed vectors (digests computed with node's JSON.stringify + sha256)."""

from __future__ import annotations

import pytest

from assay.doc.pairwise import (
    combine_order_verdicts,
    order_digest,
    parse_seed,
    randomize_pair,
    remap_winner,
    reversed_order,
)
from assay.errors import UsageError

VECTORS = [
    (0, "case-pair", "a.md", "b.md", "b17c8dfc1715af82345276f4608f7614ef544269e6af748a6dd2afff08c931eb", True),
    (1, "case-pair", "a.md", "b.md", "63d3bfe2dd495f373a28ec6851f2fe86889e0f8670b5d4bd16c9ba1340fbf319", True),
    (
        42,
        "case-one",
        "candidates/good.md",
        "candidates/bad.md",
        "8b857bce27b7d34df82ac02f7368b2e05b1d134ff26982898d449b0e86833285",
        True,
    ),
    (-7, "doc-1", "x/ü.md", "y.md", "24de3ea7b8cb9345c152d2f1df62e90608d075781e4d36b25fe13c8412e689f4", False),
    (9007199254740991, "c", "a", "b", "e5c249d3369f8f2d12809c986582bb089090f5437524f4fd314efae765e14cb2", True),
    (0, "case-one", "candidates/good.md", "candidates/bad.md", None, False),
]


@pytest.mark.parametrize(("seed", "case_id", "a", "b", "digest", "swapped"), VECTORS)
def test_order_matches_eval_kit_vectors(seed, case_id, a, b, digest, swapped):
    if digest is not None:
        assert order_digest(seed, case_id, a, b) == digest
    order = randomize_pair(seed, case_id, a, b)
    assert order.swapped is swapped
    assert order.original_order == ("candidate_a", "candidate_b")
    assert order.candidate_order == (("candidate_b", "candidate_a") if swapped else ("candidate_a", "candidate_b"))
    assert order.method == "sha256-seed-parity-v1"


def test_spec_example_seed_zero_case_pair_is_swapped_with_prefix_b1():
    assert order_digest(0, "case-pair", "a.md", "b.md")[:2] == "b1"


def test_winner_remapping_follows_the_displayed_order():
    swapped = randomize_pair(0, "case-pair", "a.md", "b.md")
    assert remap_winner("candidate_a", swapped) == "candidate_b"
    assert remap_winner("candidate_b", swapped) == "candidate_a"
    assert remap_winner("tie", swapped) == "tie" and remap_winner("unknown", swapped) == "unknown"
    straight = reversed_order(swapped)
    assert straight.candidate_order == ("candidate_a", "candidate_b")
    assert remap_winner("candidate_a", straight) == "candidate_a"


def test_order_agreement_rule():
    assert combine_order_verdicts("candidate_a", "candidate_a") == ("candidate_a", True)
    assert combine_order_verdicts("candidate_a", "candidate_b") == ("tie", False)
    assert combine_order_verdicts("unknown", "candidate_b") == ("tie", False)


@pytest.mark.parametrize(("text", "seed"), [("0", 0), ("-0", 0), ("+12", 12), (" 7 ", 7)])
def test_seed_parsing_accepts_base_ten_integers(text, seed):
    assert parse_seed(text) == seed


@pytest.mark.parametrize("text", ["", "abc", "0x10", "1e3", "12abc", "9007199254740992"])
def test_seed_parsing_rejects_what_javascript_would_mangle(text):
    with pytest.raises(UsageError, match="--seed must be"):
        parse_seed(text)
