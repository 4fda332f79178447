"""Pairwise candidate order: eval-kit's `sha256-seed-parity-v1` draw, winner remapping and order agreement.

Pure functions: the same seed, case and paths always give eval-kit's order.
"""

from __future__ import annotations

import hashlib
import json
import re

from assay.doc.hooks import RandomizedOrder
from assay.errors import UsageError

__all__ = [
    "ORIGINAL_ORDER",
    "RANDOMIZATION_METHOD",
    "combine_order_verdicts",
    "order_digest",
    "parse_seed",
    "randomize_pair",
    "remap_winner",
    "reversed_order",
]

RANDOMIZATION_METHOD = "sha256-seed-parity-v1"
ORIGINAL_ORDER = ("candidate_a", "candidate_b")
MAX_SAFE_SEED = 2**53 - 1  # JavaScript numbers are exact only up to here; beyond it eval-kit's digest differs


def parse_seed(text: str) -> int:
    """A base-10 integer; eval-kit turned anything else into NaN (serialised as null), assay refuses."""
    if not isinstance(text, str) or re.fullmatch(r"[+-]?[0-9]+", text.strip()) is None:
        raise UsageError(f"--seed must be a base-10 integer, got {text}")
    seed = int(text.strip())
    if abs(seed) > MAX_SAFE_SEED:
        raise UsageError(f"--seed must be between -{MAX_SAFE_SEED} and {MAX_SAFE_SEED}, got {text}")
    return seed


def order_digest(seed: int, case_id: str, candidate_a: str, candidate_b: str) -> str:
    """SHA-256 hex of `JSON.stringify({seed, case_id, candidate_a, candidate_b})` (compact, that key order).

    The candidates are the original CLI paths, repo-relative with `/` separators.
    """
    payload = json.dumps(
        {"seed": seed, "case_id": case_id, "candidate_a": candidate_a, "candidate_b": candidate_b},
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def randomize_pair(seed: int, case_id: str, candidate_a: str, candidate_b: str) -> RandomizedOrder:
    """Swap when the digest's first byte is odd."""
    swapped = int(order_digest(seed, case_id, candidate_a, candidate_b)[:2], 16) % 2 == 1
    shown = ("candidate_b", "candidate_a") if swapped else ORIGINAL_ORDER
    return RandomizedOrder(RANDOMIZATION_METHOD, seed, ORIGINAL_ORDER, shown)


def reversed_order(order: RandomizedOrder) -> RandomizedOrder:
    """The other display order, for the second pass of `--both-orders`."""
    first, second = order.candidate_order
    return RandomizedOrder(order.method, order.seed, order.original_order, (second, first))


def remap_winner(winner: str, order: RandomizedOrder) -> str:
    """A winner named by displayed slot, as the original candidate label; tie/unknown unchanged."""
    if winner == "candidate_a":
        return order.candidate_order[0]
    if winner == "candidate_b":
        return order.candidate_order[1]
    return winner


def combine_order_verdicts(first: str, second: str) -> tuple[str, bool]:
    """(winner, position consistent): agreement stands, disagreement is a tie (MT-Bench's rule)."""
    if first == second:
        return first, True
    return "tie", False
