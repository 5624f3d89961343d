"""SynthOptions: validation, vintages, description."""

from __future__ import annotations

import pytest

from chakra.errors import ChakraError
from chakra.synth import VINTAGES, SynthOptions, SynthOptionsError, options_with_vintages


@pytest.mark.parametrize(
    "changes",
    [{"ranks": 0}, {"ranks": 65}, {"steps": 0}, {"ops_per_step": 0}, {"seed": -1},
     {"host_step": 2, "steps": 2}, {"ranks": True}, {"seed": 1.5}],
)  # fmt: skip
def test_out_of_range_options_raise_one_sentence(changes: dict) -> None:
    with pytest.raises(SynthOptionsError) as caught:
        SynthOptions(**changes)
    assert isinstance(caught.value, ChakraError)
    assert "\n" not in str(caught.value)


def test_vintages_switch_flags_and_combine() -> None:
    base = SynthOptions()
    assert base.vintages() == ("modern",)
    combined = options_with_vintages(base, ["no_rf_id", "no_flows"])
    assert (combined.rf_id_in_kineto, combined.flows) == (False, False)
    assert combined.vintages() == ("no_rf_id", "no_flows")
    legacy = options_with_vintages(base, ["legacy_1_0_1"])
    assert legacy.legacy_host_et and not legacy.kineto_has_rf_id
    assert options_with_vintages(base, ["modern"]) == base
    assert set(VINTAGES) == {"modern", "no_rf_id", "no_flows", "legacy_1_0_1", "tied_zero_ops",
                             "no_cuda_sync"}  # fmt: skip
    tied = options_with_vintages(base, ["tied_zero_ops"])
    assert tied.tied_zero_ops and tied.vintages() == ("tied_zero_ops",)


def test_unknown_vintage_names_the_known_ones() -> None:
    with pytest.raises(SynthOptionsError, match="legacy_1_0_1"):
        options_with_vintages(SynthOptions(), ["ancient"])


def test_describe_is_json_ready() -> None:
    described = SynthOptions(seed=3, host_step=1).describe()
    assert described["seed"] == 3 and described["host_step"] == 1
    assert described["vintages"] == ["modern"]
