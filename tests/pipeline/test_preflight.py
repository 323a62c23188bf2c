"""The checks made before a Spark JVM starts: master URLs and ``--conf`` values (issue 43)."""

from __future__ import annotations

import socket

import pytest

from trimtab.errors import TrimtabError
from trimtab.pipeline.preflight import check_conf, check_master


@pytest.mark.parametrize(
    "master",
    [
        "local",
        "local[4]",
        "local[*]",
        "local[2,3]",
        "local[*,2]",
        "local-cluster[2,1,1024]",
        "yarn",
    ],
)
def test_masters_spark_runs_without_a_server_are_accepted(master: str) -> None:
    """Local and YARN masters need no connection and pass as they are."""
    check_master(master)


@pytest.mark.server
def test_a_listening_standalone_master_is_accepted() -> None:
    """Any one master of a standby list that accepts a connection is enough."""
    with socket.socket() as dead, socket.socket() as live:
        dead.bind(("127.0.0.1", 0))
        live.bind(("127.0.0.1", 0))
        live.listen()
        dead_port, live_port = dead.getsockname()[1], live.getsockname()[1]
        dead.close()
        check_master(f"spark://127.0.0.1:{dead_port},127.0.0.1:{live_port}")


@pytest.mark.parametrize(
    ("master", "expected"),
    [
        pytest.param("foo://bar", "not a Spark master URL", id="an unknown scheme"),
        pytest.param("local[two]", "not a Spark master URL", id="local with a word"),
        pytest.param("mesos://zk:5050", "not a Spark master URL", id="mesos, gone in Spark 4"),
        pytest.param("spark://host:notaport", "is not HOST:PORT", id="a word as port"),
    ],
)
def test_a_master_of_no_known_form_is_refused_listing_the_forms(master: str, expected: str) -> None:
    """The error lists the accepted forms, or says which address does not parse."""
    with pytest.raises(TrimtabError, match=expected):
        check_master(master)


@pytest.mark.parametrize(
    "conf",
    [
        {"spark.driver.memory": "4g"},
        {"spark.driver.memory": "512M"},
        {"spark.executor.memory": "1073741824"},
        {"spark.sql.autoBroadcastJoinThreshold": "-1"},
        {"spark.network.timeout": "120s"},
        {"spark.sql.shuffle.partitions": "8"},
        {"spark.memory.fraction": "0.6"},
        {"spark.ui.enabled": "False"},
        {"spark.some.unknown.key": "anything"},
    ],
    ids=str,
)
def test_values_spark_parses_are_accepted(conf: dict[str, str]) -> None:
    """Sizes, durations, counts, fractions and booleans in Spark's forms pass; keys not
    checked pass whatever their value."""
    check_conf(conf)


@pytest.mark.parametrize(
    ("conf", "expected"),
    [
        ({"spark.driver.memory": "lots"}, "a size"),
        ({"spark.driver.memory": "1.5g"}, "a size"),
        ({"spark.network.timeout": "soon"}, "a duration"),
        ({"spark.executor.cores": "-2"}, "a whole number"),
        ({"spark.memory.fraction": "1.5"}, "from 0 to 1"),
        ({"spark.ui.enabled": "yes"}, "true or false"),
    ],
    ids=str,
)
def test_values_spark_would_refuse_are_refused_naming_the_key(
    conf: dict[str, str], expected: str
) -> None:
    """The error names the key, the value and what it takes."""
    (key,) = conf
    with pytest.raises(TrimtabError, match=f"--conf {key}=.*expected .*{expected}"):
        check_conf(conf)
