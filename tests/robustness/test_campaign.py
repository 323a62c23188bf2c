"""The fuzzing campaign: every input-reading command on malformed files and option values.

Each test draws malformed inputs (tests/robustness/strategies.py), runs the command as a user
types it (typer's CliRunner on ``trimtab.cli.app``) and checks the error contract
(tests/robustness/harness.py): exit 0 or 2, no traceback, one ``error:`` line and nothing
written on exit 2, no raw control characters echoed. The examples are fixed (derandomized),
so every run tries the same cases; ``TRIMTAB_CAMPAIGN_EXAMPLES`` sets how many per test, and
``TRIMTAB_CAMPAIGN_RECORD=FILE`` lists every broken contract instead of failing on the first.
Commands run through :func:`trimtab.cli.main`, the ``trimtab`` script's entry point.

Files come in two kinds: *rows* (clean UTF-8, wrong rows, columns, numbers, duplicates,
timestamps) and *bytes* (the same, then other encodings, a BOM, junk, truncation, control
characters). The pipeline's share of the campaign is in test_campaign_pipeline.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.robustness.harness import (
    CAMPAIGN,
    check_contract,
    dead_ports,
    fresh_dir,
    invoke,
    write_case,
)
from tests.robustness.strategies import (
    BASE_TS,
    FileCase,
    Row,
    config_files,
    csv_file,
    existing_files,
    numbered_nodes,
    option_values,
    registry_rows,
    run_outputs,
    small_disks,
    table_files,
)

#: A --now after the valid tables' samples: the future_timestamp rule is judged against it.
NOW = str(BASE_TS + 600)
_JSON = st.sampled_from([[], ["--json"]])

#: The two kinds of file: clean UTF-8 with wrong rows, and the same with spoilt bytes.
KINDS = [
    pytest.param(False, id="rows"),
    pytest.param(True, id="bytes"),
]


def _place(inventory: Path, *extra: str) -> list[str]:
    return ["place", "-i", str(inventory), "-E", "3", "-W", "2", "-A", "2", "--count", "20", *extra]


def _topology(inventory: Path, *extra: str) -> list[str]:
    return ["topology", "-i", str(inventory), *extra]


def _diskfill(inventory: Path, *extra: str) -> list[str]:
    return ["simulate", "diskfill", "-i", str(inventory), *extra]


# -- topology, place, simulate diskfill: the inventory alone -------------------------------

_INVENTORY_COMMANDS: dict[str, tuple[Callable[..., list[str]], Callable[[], list[Row]] | None]] = {
    "topology": (_topology, None),
    "place": (_place, None),
    "diskfill": (_diskfill, small_disks),
}


def _inventory_case(command: str, inventory: FileCase, json_flag: list[str]) -> None:
    with fresh_dir() as tmp:
        path = write_case(tmp, inventory)
        series = tmp / "series"
        extra = ["--out", str(series)] if command == "diskfill" else []
        args = _INVENTORY_COMMANDS[command][0](path, *extra, *json_flag)
        check_contract(invoke(args), outputs=[series])


def _inventories(command: str, *, raw: bool) -> st.SearchStrategy[FileCase]:
    return table_files("nodes", rows=_INVENTORY_COMMANDS[command][1], raw=raw)


@pytest.mark.parametrize("raw", KINDS)
@pytest.mark.parametrize("command", list(_INVENTORY_COMMANDS))
@CAMPAIGN
@given(data=st.data(), json_flag=_JSON)
def test_inventory_commands_keep_the_contract_on_malformed_files(
    command: str, raw: bool, data: st.DataObject, json_flag: list[str]
) -> None:
    """topology, place, simulate diskfill on an inventory with wrong rows (and, for
    ``bytes``, in another encoding, with a BOM, junk, truncated or control bytes)."""
    _inventory_case(command, data.draw(_inventories(command, raw=raw)), json_flag)


# -- shed: inventory, node_metrics, bundle_metrics ------------------------------------------

_SHED_TABLES = ("nodes", "node_metrics", "bundle_metrics")


@st.composite
def _shed_inputs(draw: st.DrawFn, *, raw: bool) -> dict[str, FileCase]:
    spoilt = draw(st.sampled_from(_SHED_TABLES))
    return {t: draw(table_files(t, raw=raw)) if t == spoilt else csv_file(t) for t in _SHED_TABLES}


def _shed_case(inputs: dict[str, FileCase], extra: list[str]) -> None:
    with fresh_dir() as tmp:
        paths = {t: write_case(tmp, case) for t, case in inputs.items()}
        args = ["shed", "-i", str(paths["nodes"]), "--brokers", str(paths["node_metrics"])]
        check_contract(invoke([*args, "--bundles", str(paths["bundle_metrics"]), *extra]))


_SHED_OUTPUTS = st.sampled_from(
    [[], ["--json"], ["--format", "pulsar-admin"], ["--until-balanced", "--json"]]
)


@pytest.mark.parametrize("raw", KINDS)
@CAMPAIGN
@given(data=st.data(), output=_SHED_OUTPUTS)
def test_shed_keeps_the_contract_on_malformed_files(
    raw: bool, data: st.DataObject, output: list[str]
) -> None:
    """shed with one of its three tables malformed (--now after the samples): a plan or one
    error line."""
    _shed_case(data.draw(_shed_inputs(raw=raw)), ["--now", NOW, *output])


# -- allocate: inventory, requests, --existing ----------------------------------------------


@st.composite
def _allocate_inputs(draw: st.DrawFn, *, raw: bool) -> dict[str, FileCase]:
    spoilt = draw(st.sampled_from(("nodes", "allocation_requests", "existing")))
    rows = {"nodes": numbered_nodes, "allocation_requests": None}
    inputs = {
        t: draw(table_files(t, rows=rows[t], raw=raw)) if t == spoilt else csv_file(t, rows[t])
        for t in ("nodes", "allocation_requests")
    }
    if spoilt == "existing":
        inputs["existing"] = draw(existing_files(5, raw=raw))
    return inputs


def _allocate_case(inputs: dict[str, FileCase], output: list[str], rebalance: bool) -> None:
    with fresh_dir() as tmp:
        paths = {t: write_case(tmp, case) for t, case in inputs.items()}
        written = tmp / "plan.json"
        args = ["allocate", "-i", str(paths["nodes"]), "-r", str(paths["allocation_requests"])]
        if "existing" in paths:
            args += ["--existing", str(paths["existing"]), *(["--rebalance"] * rebalance)]
        args += [*output, *(["-o", str(written)] if output else [])]
        check_contract(invoke(args), outputs=[written])


_ALLOCATE_OUTPUTS = st.sampled_from([[], ["--format", "json"], ["--format", "kafka-reassignment"]])


@pytest.mark.parametrize("raw", KINDS)
@CAMPAIGN
@given(data=st.data(), output=_ALLOCATE_OUTPUTS, rebalance=st.booleans())
def test_allocate_keeps_the_contract_on_malformed_files(
    raw: bool, data: st.DataObject, output: list[str], rebalance: bool
) -> None:
    """allocate on a malformed inventory, requests or --existing: a plan, or one error and no
    file."""
    _allocate_case(data.draw(_allocate_inputs(raw=raw)), output, rebalance)


# -- bookieinfo --registry ------------------------------------------------------------------

_PORTS = dead_ports(4)


def _registries(*, raw: bool) -> st.SearchStrategy[FileCase]:
    return table_files("registry", rows=lambda: registry_rows(_PORTS), raw=raw)


def _bookieinfo_case(registry: FileCase, json_flag: list[str]) -> None:
    with fresh_dir() as tmp:
        path = write_case(tmp, registry)
        args = ["bookieinfo", "--registry", str(path), "--timeout", "0.2", *json_flag]
        check_contract(invoke(args))


@pytest.mark.parametrize("raw", KINDS)
@CAMPAIGN
@given(data=st.data(), json_flag=_JSON)
def test_bookieinfo_keeps_the_contract_on_malformed_registries(
    raw: bool, data: st.DataObject, json_flag: list[str]
) -> None:
    """bookieinfo --registry (nodes on loopback ports nobody listens on): a table of nodes
    that did not answer, or one error line."""
    _bookieinfo_case(data.draw(_registries(raw=raw)), json_flag)


# -- config files, report -------------------------------------------------------------------


def _config_case(config: FileCase, command: str, extra: list[str]) -> None:
    with fresh_dir() as tmp:
        path = write_case(tmp, config)
        nodes = write_case(tmp, csv_file("nodes"))
        args = {"config": ["config"], "topology": _topology(nodes), "place": _place(nodes)}
        check_contract(invoke([*args[command], "-c", str(path), *extra]))


_CONFIG_COMMANDS = st.sampled_from(["config", "config", "topology", "place"])
_CONFIG_EXTRA = st.sampled_from([[], ["--json"], ["--verbose"]])


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(False, id="rows"),
        pytest.param(True, id="bytes"),
    ],
)
@CAMPAIGN
@given(data=st.data(), command=_CONFIG_COMMANDS, extra=_CONFIG_EXTRA)
def test_config_files_keep_the_contract_when_malformed(
    raw: bool, data: st.DataObject, command: str, extra: list[str]
) -> None:
    """config, topology and place with a --config of bad keys, values or encodings (and, for
    ``bytes``, junk, truncated or control bytes): their output, or one error line."""
    config = data.draw(config_files(raw=raw))
    _config_case(config, command, extra if command == "config" else [])


@CAMPAIGN
@given(files=run_outputs(), json_flag=_JSON)
def test_report_keeps_the_contract_on_damaged_outputs(
    files: list[FileCase], json_flag: list[str]
) -> None:
    """report on a damaged pipeline output: the page, or one error line and no page."""
    with fresh_dir() as tmp:
        for case in files:
            write_case(tmp / "out", case)
        page = tmp / "report.html"
        args = ["report", "--input", str(tmp / "out"), "--out", str(page), *json_flag]
        check_contract(invoke(args), outputs=[page])


# -- option values ------------------------------------------------------------------------


def _not_huge(value: str) -> bool:
    """Leaves out counts that make place run for a long time (a count past #23's bound is
    refused at once: test_found_cli.py's test_place_count_beyond_the_bound_is_refused_at_once)."""
    try:
        return int(value) <= 100_000
    except ValueError:
        return True


def _set_option(args: list[str], option: str, value: str) -> list[str]:
    if option in args:
        args[args.index(option) + 1] = value
        return args
    return [*args, option, value]


@CAMPAIGN
@given(
    option=st.sampled_from(["-E", "-W", "-A", "--count", "--seed", "--exclude", "--policy"]),
    value=option_values().filter(_not_huge),
)
def test_place_keeps_the_contract_on_bad_option_values(option: str, value: str) -> None:
    """place with a bad count, quorum, seed, exclusion or policy: ensembles or one error line."""
    with fresh_dir() as tmp:
        args = _place(write_case(tmp, csv_file("nodes")))
        check_contract(invoke(_set_option(args, option, value)))


@CAMPAIGN
@given(
    option=st.sampled_from(["--cycles", "--max-cycles", "--now", "--seed", "--strategy"]),
    value=option_values(),
    until_balanced=st.booleans(),
)
def test_shed_keeps_the_contract_on_bad_option_values(
    option: str, value: str, until_balanced: bool
) -> None:
    """shed with a bad cycle count, time, seed or strategy: a plan or one error line."""
    with fresh_dir() as tmp:
        paths = {t: write_case(tmp, csv_file(t)) for t in _SHED_TABLES}
        args = ["shed", "-i", str(paths["nodes"]), "--brokers", str(paths["node_metrics"])]
        args += ["--bundles", str(paths["bundle_metrics"]), "--now", NOW]
        args += ["--until-balanced"] * until_balanced
        check_contract(invoke(_set_option(args, option, value)))


@CAMPAIGN
@given(
    option=st.sampled_from(["--seed", "--max-moves", "--mode", "--format", "--cluster"]),
    value=option_values(),
)
def test_allocate_keeps_the_contract_on_bad_option_values(option: str, value: str) -> None:
    """allocate with a bad seed, move budget, mode or format: a plan or one error, no file."""
    with fresh_dir() as tmp:
        nodes = write_case(tmp, csv_file("nodes", numbered_nodes))
        requests = write_case(tmp, csv_file("allocation_requests"))
        written = tmp / "plan.json"
        args = ["allocate", "-i", str(nodes), "-r", str(requests), "-o", str(written)]
        args += ["--format", "json"]
        check_contract(invoke(_set_option(args, option, value)), outputs=[written])


@CAMPAIGN
@given(
    option=st.sampled_from(["--cap", "--refresh", "--seed", "--cap-mode", "--weights"]),
    value=option_values(),
)
def test_diskfill_keeps_the_contract_on_bad_option_values(option: str, value: str) -> None:
    """simulate diskfill with a bad cap, refresh period, seed or mode: figures or one error."""
    with fresh_dir() as tmp:
        nodes = write_case(tmp, csv_file("nodes", small_disks))
        series = tmp / "series"
        args = _diskfill(nodes, "--json", "--out", str(series))
        check_contract(invoke(_set_option(args, option, value)), outputs=[series])


@CAMPAIGN
@given(value=option_values())
def test_bookieinfo_keeps_the_contract_on_bad_timeouts(value: str) -> None:
    """bookieinfo --timeout with a bad value: the nodes that did not answer, or one error."""
    with fresh_dir() as tmp:
        registry = write_case(tmp, csv_file("registry", lambda: registry_rows(_PORTS)))
        if _seconds(value) > 0.2:
            value = "0.2"  # a long time-out is fine, only slow: the nodes never answer
        check_contract(invoke(["bookieinfo", "--registry", str(registry), "--timeout", value]))


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        return 0.0
    return seconds if seconds == seconds else 0.0


# -- pipeline run: options are refused before Spark starts ----------------------------------

PIPELINE_OPTIONS = [
    pytest.param(["--window", value], id=f"--window {value}")
    for value in ("0m", "-1m", "nanm", "1e308m", "99999999999999999999h", "soon", "")
] + [
    pytest.param(option, id=" ".join(option))
    for option in (
        ["--strategy", "bogus"],
        ["--cycles", "-1"],
        ["--cycles", "0"],
        ["--conf", "notakeyvalue"],
        ["--now", "yesterday"],
        ["--seed", "abc"],
    )
]


@pytest.mark.parametrize("option", PIPELINE_OPTIONS)
def test_pipeline_refuses_bad_options_before_spark_starts(
    option: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """pipeline run with a bad option value: one error line, exit 2, no Spark, no output."""
    from trimtab.pipeline import session

    def no_spark(**_: object) -> None:
        raise AssertionError("Spark was started for a run with a bad option")

    monkeypatch.setattr(session, "spark_session", no_spark)
    with fresh_dir() as tmp:
        out = tmp / "out"
        args = ["pipeline", "run", "--input", str(tmp), "--output", str(out), *option]
        run = invoke(args)
        check_contract(run, outputs=[out])
        assert run.result.exit_code == 2, run.describe()
