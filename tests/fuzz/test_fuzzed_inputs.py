"""Mutated variants of every user-written file format, run through the command that reads it.

Each variant must be accepted, or refused with a documented exit code and a message naming the file —
never a traceback or a long run. Modest, derandomized example counts keep this part of every test run;
`benchmarks/fuzz.py` runs the same operators 10,000 times per format.
"""

from __future__ import annotations

import pytest
from fuzz_formats import FORMATS, mutate, operators_for, prepare, problem_with
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES_PER_FORMAT = 60
SLOWEST_VARIANT_S = 5.0


@pytest.mark.parametrize("format_name", list(FORMATS))
def test_a_fuzzed_file_is_accepted_or_refused_in_one_message(format_name, tmp_path_factory):
    fmt = FORMATS[format_name]
    work = prepare(fmt, tmp_path_factory.mktemp(format_name))

    @settings(
        max_examples=EXAMPLES_PER_FORMAT,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(first=st.sampled_from(operators_for(fmt.syntax)), rng=st.randoms(use_true_random=False))
    def variant_behaves(first, rng):
        data, operators = mutate(fmt.seed, fmt.syntax, rng, first=first)
        outcome = fmt.run(work, data)
        problem = problem_with(fmt, work, outcome)
        assert problem is None, f"{format_name} after {'+'.join(operators)}: {problem}"
        assert outcome.seconds < SLOWEST_VARIANT_S, f"{format_name} after {'+'.join(operators)}: {outcome.seconds:.1f} s"

    variant_behaves()


@pytest.mark.parametrize("format_name", list(FORMATS))
def test_the_unmutated_seed_is_accepted(format_name, tmp_path):
    """The seeds are valid files: a refusal of a variant is the mutation's doing, not the seed's."""
    fmt = FORMATS[format_name]
    work = prepare(fmt, tmp_path)
    outcome = fmt.run(work, fmt.seed)
    assert problem_with(fmt, work, outcome) is None
    # Without experiments/, `agent run` stops (exit 2) right after reading pyproject.toml.
    expected = 2 if format_name == "agent-pyproject" else 0
    assert outcome.exit_code == expected, outcome.output
