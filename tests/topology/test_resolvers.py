"""Choosing and loading resolvers, the fallback rule, and asking a resolver about nodes."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import pytest

from trimtab.cluster import DEFAULT_REGION_RACK, NodeId
from trimtab.errors import InvalidTopologyError, ResolverError
from trimtab.readers.rack_table import RackTableFile
from trimtab.systems.bookkeeper.placement_setup import load_resolver, make_resolver
from trimtab.topology import (
    DefaultResolver,
    Resolver,
    ScriptResolver,
    TableResolver,
    resolve_locations,
)


def good_script(directory: Path) -> Path:
    path = directory / "rack.sh"
    path.write_text('#!/bin/sh\nfor host in "$@"; do echo "/rack-$host"; done\n')
    path.chmod(0o755)
    return path


class Scripted:
    """A resolver that returns canned answers and records each call."""

    def __init__(self, answers: object = None, error: Exception | None = None) -> None:
        self.answers = answers
        self.error = error
        self.calls: list[list[str]] = []

    def resolve(self, names: Sequence[str]) -> list[str]:
        self.calls.append(list(names))
        if self.error is not None:
            raise self.error
        if self.answers is None:
            return [f"/rack-{n}" for n in names]
        return self.answers  # type: ignore[return-value]

    def reload_cached_mappings(self) -> None:
        pass


class ScriptedOnDc0(Scripted):
    """A canned resolver with its own default rack."""

    default_rack = "/dc0/r0"


class NoReload:
    """Has resolve but not reload_cached_mappings."""

    def resolve(self, names: Sequence[str]) -> list[str]:
        return ["/r"] * len(names)


@pytest.fixture
def warnings_seen(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.WARNING, logger="trimtab.topology")
    return caplog


class TestDefaultResolver:
    def test_everything_goes_to_the_default_rack(self):
        """Every name gets the default rack, one per name, and [] gives []."""
        resolver = DefaultResolver(DEFAULT_REGION_RACK)
        assert resolver.resolve(["a", "b"]) == [DEFAULT_REGION_RACK] * 2
        assert resolver.resolve([]) == []
        resolver.reload_cached_mappings()
        assert isinstance(resolver, Resolver)

    def test_a_bad_default_rack_is_refused(self):
        """'/' is no rack, so it cannot be the default."""
        with pytest.raises(InvalidTopologyError, match="default rack"):
            DefaultResolver("/")


class TestLoadResolver:
    @pytest.mark.parametrize(
        "path",
        [
            pytest.param("trimtab.topology.resolvers:DefaultResolver", id="module colon class"),
            pytest.param("trimtab.topology.resolvers.DefaultResolver", id="dotted path"),
        ],
    )
    def test_an_import_path_is_loaded_and_built_with_kwargs(self, path):
        """The class is imported and constructed with the keyword arguments given."""
        resolver = load_resolver(path, default_rack="/dc0/r0")
        assert isinstance(resolver, DefaultResolver)
        assert resolver.resolve(["h"]) == ["/dc0/r0"]

    def test_a_nested_attribute_is_followed(self):
        """'module:Outer.Inner' walks attributes after the colon."""
        resolver = load_resolver("tests.topology.test_resolvers:TestLoadResolver.Nested.Inner")
        assert resolver.resolve(["h"]) == ["/nested"]

    class Nested:
        class Inner:
            def resolve(self, names: Sequence[str]) -> list[str]:
                return ["/nested"] * len(names)

            def reload_cached_mappings(self) -> None:
                pass

    @pytest.mark.parametrize(
        ("path", "match"),
        [
            pytest.param("DefaultResolver", "expected 'package.module:ClassName'", id="no module"),
            pytest.param("no_such_pkg.mod:Thing", "'no_such_pkg.mod' not importable", id="module"),
            pytest.param("trimtab.topology:NoSuchResolver", "has no 'NoSuchResolver'", id="class"),
            pytest.param("trimtab:__version__", "it is not a class", id="not callable"),
            pytest.param("collections:OrderedDict", "no resolve or reload_cached", id="no methods"),
            pytest.param(
                "tests.topology.test_resolvers:NoReload", "no reload_cached_mappings", id="half"
            ),
        ],
    )
    def test_bad_import_paths_raise_resolver_error(self, path, match):
        """Every way an import path can fail is a ResolverError that names the path."""
        with pytest.raises(ResolverError, match=match) as caught:
            load_resolver(path)
        assert repr(path) in str(caught.value)

    def test_a_failing_constructor_is_a_resolver_error(self):
        """An exception from the constructor is wrapped, naming the path and the cause."""
        with pytest.raises(ResolverError, match=r"cannot construct .*InvalidTopologyError"):
            load_resolver("trimtab.topology:DefaultResolver", default_rack="")


class TestMakeResolver:
    def test_default_kind(self):
        """kind 'default' is a DefaultResolver on the given default rack."""
        resolver = make_resolver(kind="default", default_rack=DEFAULT_REGION_RACK)
        assert resolver.resolve(["h"]) == [DEFAULT_REGION_RACK]

    def test_table_kind_from_a_mapping_or_a_file(self, tmp_path):
        """kind 'table' takes a mapping or a table file."""
        path = tmp_path / "racks.txt"
        path.write_text("h1 /r1\n")
        from_file = make_resolver(kind="table", table=RackTableFile(path))
        from_mapping = make_resolver(kind=" Table ", table={"h1": "/r2"})
        assert isinstance(from_file, TableResolver) and from_file.resolve(["h1"]) == ["/r1"]
        assert from_mapping.resolve(["h1", "h2"]) == ["/r2", "/default-rack"]

    def test_script_kind_passes_its_settings_on(self, tmp_path):
        """kind 'script' builds a ScriptResolver with the given limits and default rack."""
        resolver = make_resolver(
            kind="script",
            script=str(good_script(tmp_path)),
            number_args=7,
            timeout_s=2.5,
            default_rack="/dc0/r0",
        )
        assert isinstance(resolver, ScriptResolver)
        assert (resolver.number_args, resolver.timeout_s) == (7, 2.5)
        assert resolver.default_rack == "/dc0/r0"
        assert resolver.resolve(["h"]) == ["/rack-h"]

    def test_import_path_kind(self):
        """Any other kind containing a dot or colon is loaded as an import path."""
        resolver = make_resolver(kind="tests.topology.test_resolvers:Scripted")
        assert resolver.resolve(["h"]) == ["/rack-h"]

    @pytest.mark.parametrize(
        ("settings", "reason"),
        [
            pytest.param({"kind": "script"}, "none is configured", id="no script configured"),
            pytest.param(
                {"kind": "script", "script": "/nonexistent/rack.sh"}, "not found", id="gone"
            ),
            pytest.param({"kind": "table"}, "needs a table", id="no table configured"),
            pytest.param({"kind": "no_such.module:Thing"}, "not importable", id="bad import"),
        ],
    )
    def test_a_resolver_that_cannot_start_falls_back(self, warnings_seen, settings, reason):
        """Upstream's rule: log a warning and put every node on the default rack."""
        resolver = make_resolver(**settings, default_rack=DEFAULT_REGION_RACK)
        assert isinstance(resolver, DefaultResolver)
        assert resolver.default_rack == DEFAULT_REGION_RACK
        [record] = warnings_seen.records
        assert reason in record.getMessage() and "could not start" in record.getMessage()

    def test_a_script_failing_its_check_falls_back(self, tmp_path, warnings_seen):
        """A script whose start-up run fails is replaced by the default resolver."""
        script = tmp_path / "rack.sh"
        script.write_text("#!/bin/sh\nexit 1\n")
        script.chmod(0o755)
        resolver = make_resolver(kind="script", script=str(script))
        assert isinstance(resolver, DefaultResolver)
        assert "exit status 1" in warnings_seen.records[0].getMessage()

    def test_strict_re_raises_instead_of_falling_back(self):
        """With strict (enforceMinNumRacksPerWriteQuorum) the ResolverError propagates."""
        with pytest.raises(ResolverError, match="none is configured"):
            make_resolver(kind="script", strict=True)

    def test_an_unknown_kind_is_a_configuration_mistake(self):
        """A kind that is neither built in nor an import path raises ValueError."""
        with pytest.raises(ValueError, match="unknown resolver kind 'scrpt'"):
            make_resolver(kind="scrpt")


class TestResolveLocations:
    def test_nodes_are_resolved_by_host_in_one_batched_call(self):
        """Every distinct host is asked once, in one call; ports share their host's answer."""
        resolver = Scripted()
        nodes = [NodeId("bk2:3181"), NodeId("bk1:3181"), NodeId("bk1:3182"), NodeId("[::1]:3181")]
        located = resolve_locations(resolver, nodes)
        assert resolver.calls == [["::1", "bk1", "bk2"]]
        assert located == {
            NodeId("[::1]:3181"): "/rack-::1",
            NodeId("bk1:3181"): "/rack-bk1",
            NodeId("bk1:3182"): "/rack-bk1",
            NodeId("bk2:3181"): "/rack-bk2",
        }
        assert list(located) == sorted(located)

    def test_no_nodes_asks_nothing(self):
        """An empty node list does not call the resolver."""
        resolver = Scripted()
        assert resolve_locations(resolver, []) == {}
        assert resolver.calls == []

    def test_answers_that_are_not_locations_get_the_resolvers_default(self, warnings_seen):
        """Bad answers fall back to the resolver's default_rack; None is quietly unknown."""
        resolver = ScriptedOnDc0(["rack1", None, "/r3"])
        located = resolve_locations(resolver, [NodeId("a"), NodeId("b"), NodeId("c")])
        assert located == {"a": "/dc0/r0", "b": "/dc0/r0", "c": "/r3"}
        [record] = warnings_seen.records
        assert "a='rack1'" in record.getMessage() and "'b'" not in record.getMessage()

    @pytest.mark.parametrize(
        ("resolver", "reason"),
        [
            pytest.param(Scripted(["/r1"]), "gave 1 answers for 2 host(s)", id="too few answers"),
            pytest.param(
                Scripted("/r1/r2"), "gave a str instead of a list", id="a string, not a list"
            ),
            pytest.param(Scripted(error=OSError("dns down")), "dns down", id="an exception"),
        ],
    )
    def test_unusable_replies_send_every_node_to_the_default(self, warnings_seen, resolver, reason):
        """A reply that cannot be matched to the hosts is replaced and logged."""
        located = resolve_locations(
            resolver, [NodeId("a"), NodeId("b")], default_rack=DEFAULT_REGION_RACK
        )
        assert located == {"a": DEFAULT_REGION_RACK, "b": DEFAULT_REGION_RACK}
        assert reason in warnings_seen.records[0].getMessage()
