"""One settings vocabulary: the enums of trimtab.config, their alias tables, and every place that
reads them (config files, simulate, sweep grids, shed, the shedder and policy tables)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trimtab import config as vocab
from trimtab.cli.shed import Strategy as ShedStrategy
from trimtab.cli.simulate import parse_strategies
from trimtab.config import (
    CapBasis,
    Choice,
    Config,
    PolicyName,
    Sampling,
    Strategy,
    WeightsMode,
    spelled,
)
from trimtab.errors import ConfigValueError, TrimtabError
from trimtab.placement import POLICIES
from trimtab.shedding import STRATEGIES
from trimtab.sim.sweep import DiskFillSetting, parse_grid

TABLES = [
    pytest.param(vocab.PLACEMENT_POLICIES, PolicyName, id="placement policies"),
    pytest.param(vocab.SHEDDERS, Strategy, id="shedders"),
    pytest.param(vocab.SAMPLING, Sampling, id="sampling"),
    pytest.param(vocab.WEIGHT_CAPS, CapBasis, id="cap basis"),
    pytest.param(vocab.WEIGHTS_MODES, WeightsMode, id="weights modes"),
]

TABLE_OF: dict[type[Choice], Mapping[str, Choice]] = {
    PolicyName: vocab.PLACEMENT_POLICIES,
    Strategy: vocab.SHEDDERS,
    Sampling: vocab.SAMPLING,
    CapBasis: vocab.WEIGHT_CAPS,
    WeightsMode: vocab.WEIGHTS_MODES,
}


@pytest.mark.parametrize(("table", "kind"), TABLES)
def test_every_value_spells_itself_and_every_alias_names_a_value(
    table: dict[str, Choice], kind: type[Choice]
) -> None:
    """Each member is accepted under its own text; every alias maps to a member."""
    for member in kind:
        assert table[member.value] is member
    assert all(isinstance(value, kind) for value in table.values())
    assert all(key == key.lower() for key in table)


@given(
    member=st.sampled_from([*PolicyName, *Strategy, *Sampling, *CapBasis, *WeightsMode]),
    upper=st.lists(st.booleans(), min_size=20, max_size=20),
)
def test_spellings_ignore_case_and_blanks(member: Choice, upper: list[bool]) -> None:
    """``spelled`` finds a value whatever the case of its letters and the blanks around it."""
    text = str(member)  # at most 12 letters: every one gets a case
    mixed = "".join(c.upper() if u else c for c, u in zip(text, upper, strict=False))
    table = TABLE_OF[type(member)]
    assert spelled(table, f"  {mixed} ") is member


def test_values_print_and_serialise_as_their_text() -> None:
    """str, repr, f-strings and JSON show the text, so outputs read as they did."""
    config = Config.of(weight_cap_basis="minimum", loadBalancerLoadSheddingStrategy="balanced")
    basis = config.placement.weight_cap_basis
    assert basis is CapBasis.MINIMUM
    assert (str(basis), repr(basis), f"{basis}") == ("minimum", "'minimum'", "minimum")
    doc = json.loads(json.dumps(asdict(config)))
    assert doc["placement"]["weight_cap_basis"] == "minimum"
    assert doc["shedding"]["strategy"] == "balanced"
    assert doc["placement"]["ensemble_placement_policy"] == "rackaware"


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("weight_cap_basis", "minimum", CapBasis.MINIMUM),
        ("weight_cap_basis", "min", CapBasis.MINIMUM),
        ("weight_cap_basis", "Median", CapBasis.MEDIAN),
        ("weighted_sampling", "successive", Sampling.SUCCESSIVE),
        ("ensemblePlacementPolicy", "rack-aware", PolicyName.RACKAWARE),
        (
            "ensemblePlacementPolicy",
            "org.apache.bookkeeper.client.RegionAwareEnsemblePlacementPolicy",
            PolicyName.REGIONAWARE,
        ),
        (
            "loadBalancerLoadSheddingStrategy",
            "org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder",
            Strategy.THRESHOLD,
        ),
    ],
)
def test_config_accepts_every_spelling(key: str, text: str, value: object) -> None:
    """Config keys take the values, aliases and Java class names, and hold the member."""
    config = Config.of(**{key: text})
    held = {
        "weight_cap_basis": config.placement.weight_cap_basis,
        "weighted_sampling": config.placement.weighted_sampling,
        "ensemblePlacementPolicy": config.placement.ensemble_placement_policy,
        "loadBalancerLoadSheddingStrategy": config.shedding.strategy,
    }[key]
    assert held is value


def test_a_bad_value_still_names_what_is_allowed() -> None:
    """The error lists the values, not every alias."""
    with pytest.raises(ConfigValueError, match="one of median, minimum"):
        Config.of(weight_cap_basis="mean")


def test_the_grid_accepts_what_the_config_accepts() -> None:
    """cap-mode min/minimum/median and the policy aliases parse to the same members in a
    --grid as in a config file; labels still say cap-mode=min."""
    grid = parse_grid("cap-mode=min,median;policy=rack-aware")
    assert [(s.cap_mode, s.policy) for s in grid.settings] == [
        (CapBasis.MINIMUM, PolicyName.RACKAWARE),
        (CapBasis.MEDIAN, PolicyName.RACKAWARE),
    ]
    assert grid.label(grid.settings[0]) == "cap-mode=min policy=rackaware"
    assert parse_grid("weight_cap_basis=minimum").settings == (
        DiskFillSetting(cap_mode=CapBasis.MINIMUM),
    )


def test_strategy_names_are_the_shedder_table_and_the_shed_option() -> None:
    """shed --strategy, the shedder table and simulate/sweep --strategies share one enum."""
    assert ShedStrategy is Strategy
    assert list(STRATEGIES) == list(Strategy)
    assert set(POLICIES) == set(PolicyName)
    assert parse_strategies("transfer, balanced") == [Strategy.TRANSFER, Strategy.BALANCED]
    with pytest.raises(TrimtabError, match="choose from transfer, balanced, threshold"):
        parse_strategies("transfer,magic")
