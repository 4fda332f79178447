"""`Experiment(lifetime=-5)`, `sandbox_reuse="true"`, `attempts=0`: the message said what the field must be but not
what it was given, so an Experiment built from a config file or a variable left the author to find the value."""

from __future__ import annotations

import pytest

from assay.agent import Experiment, Turn, complete_evidence_coverage, define_agent, message
from assay.errors import ConfigError


async def _send(turn_input, ctx):
    return Turn([message("x")])


AGENT = define_agent(name="a", send=_send, evidence_coverage=complete_evidence_coverage)


@pytest.mark.parametrize("options, said", [
    ({"attempts": 0}, "Experiment attempts must be an integer >= 1; got 0"),
    ({"attempts": 10**9}, "Experiment attempts must be at most 10,000; got 1,000,000,000"),
    ({"timeout": -1}, "Experiment timeout must be > 0; got -1"),
    ({"budget": -0.5}, "Experiment budget must be >= 0; got -0.5"),
    ({"early_exit": "yes"}, "Experiment early_exit must be True or False; got 'yes'"),
    ({"sandbox_reuse": "true", "lifetime": 60}, "Experiment sandbox_reuse must be True or False; got 'true'"),
])
def test_a_wrong_value_is_shown_beside_what_the_field_must_be(options, said):
    with pytest.raises(ConfigError) as refused:
        Experiment(agent=AGENT, **options)
    assert str(refused.value) == said
