"""The table resolver: mappings, files, reloads and the listeners that hear what moved."""

from __future__ import annotations

import pytest

from trimtab.errors import InvalidTopologyError, ResolverError
from trimtab.readers.rack_table import RackTableFile
from trimtab.topology import Resolver, TableResolver

TEXT_TABLE = """\
# host      location
bk1.dc1     /dc1/r1
bk2.dc1     /dc1/r2   # moved in March

bk3.dc2     /dc2/r1
"""


class Recorder:
    """A listener that keeps every change set it was called with."""

    def __init__(self) -> None:
        self.calls: list[dict[str, tuple[str | None, str | None]]] = []

    def __call__(self, changes: dict[str, tuple[str | None, str | None]]) -> None:
        self.calls.append(changes)


class TestFromMapping:
    def test_known_hosts_get_their_location_and_others_the_default(self):
        """resolve answers per name, in order, with the default rack for unknown hosts."""
        table = TableResolver({"bk1": "/dc1/r1", "bk2": "/dc1/r2/"}, default_rack="/dc0/none")
        assert table.resolve(["bk2", "bk9", "bk1"]) == ["/dc1/r2", "/dc0/none", "/dc1/r1"]
        assert table.resolve([]) == []
        assert isinstance(table, Resolver)

    def test_a_bad_location_names_the_host(self):
        """Building from a mapping with a bad location raises, naming the host."""
        with pytest.raises(InvalidTopologyError, match=r"host 'bk2'.*must start with '/'"):
            TableResolver({"bk1": "/r1", "bk2": "r2"})

    def test_a_bad_default_rack_is_refused_at_once(self):
        """The default rack is checked when the resolver is built, not on the first miss."""
        with pytest.raises(InvalidTopologyError, match="default rack"):
            TableResolver({}, default_rack="/")

    def test_reload_of_a_mapping_table_changes_nothing(self):
        """A table built from a mapping has no file to re-read."""
        table = TableResolver({"bk1": "/r1"})
        assert table.reload() == {}
        table.reload_cached_mappings()
        assert table.as_dict() == {"bk1": "/r1"}
        assert table.path is None


class TestFromFile:
    def test_text_file_with_comments(self, tmp_path):
        """'host location' lines are read; comments and blank lines are skipped."""
        path = tmp_path / "racks.txt"
        path.write_text(TEXT_TABLE)
        table = TableResolver(file=RackTableFile(path))
        assert table.as_dict() == {"bk1.dc1": "/dc1/r1", "bk2.dc1": "/dc1/r2", "bk3.dc2": "/dc2/r1"}
        assert table.path == path and len(table) == 3

    def test_csv_file_with_extra_columns(self, tmp_path):
        """A .csv table is read by its host and location columns, in any order."""
        path = tmp_path / "racks.csv"
        path.write_text("# exported\nlocation,owner,host\n/dc1/r1,ops,bk1\n/dc1/r2,ops,bk2\n")
        assert TableResolver(file=RackTableFile(path)).resolve(["bk2", "bk1"]) == [
            "/dc1/r2",
            "/dc1/r1",
        ]

    def test_bad_location_line_names_file_line_and_host(self, tmp_path):
        """A bad location raises InvalidTopologyError with path:line and the host."""
        path = tmp_path / "racks.txt"
        path.write_text("bk1 /r1\n# note\nbk2 /\n")
        with pytest.raises(InvalidTopologyError, match=r"racks\.txt:3: host 'bk2'"):
            TableResolver(file=RackTableFile(path))

    def test_bad_csv_location_names_the_line(self, tmp_path):
        """CSV rows report their own line number too."""
        path = tmp_path / "racks.csv"
        path.write_text("host,location\nbk1,/r1\nbk2,rack2\n")
        with pytest.raises(InvalidTopologyError, match=r"racks\.csv:3: host 'bk2'"):
            TableResolver(file=RackTableFile(path))

    @pytest.mark.parametrize(
        ("name", "text", "match"),
        [
            pytest.param("t.txt", "bk1 /r1 extra\n", "expected 'host location'", id="3 fields"),
            pytest.param("t.txt", "bk1 /r1\nbk1 /r2\n", "already appears on line 1", id="dup"),
            pytest.param("t.csv", "host,location\nbk1\n", "expected 2 columns", id="short row"),
        ],
    )
    def test_malformed_lines_are_rejected(self, tmp_path, name, text, match):
        """Lines that are not one host and one location, or repeat a host, raise."""
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(InvalidTopologyError, match=match):
            TableResolver(file=RackTableFile(path))

    def test_missing_file_cannot_start(self, tmp_path):
        """A table file that cannot be read is a ResolverError (the resolver cannot start)."""
        with pytest.raises(ResolverError, match=r"cannot read rack table .*missing\.txt"):
            TableResolver(file=RackTableFile(tmp_path / "missing.txt"))

    def test_csv_without_the_columns_cannot_start(self, tmp_path):
        """A CSV without host and location columns is a ResolverError."""
        path = tmp_path / "racks.csv"
        path.write_text("name,rack\nbk1,/r1\n")
        with pytest.raises(ResolverError, match="'host' and 'location' columns"):
            TableResolver(file=RackTableFile(path))


class TestChangesAndListeners:
    def test_reload_tells_listeners_exactly_what_changed(self, tmp_path):
        """Moved, added and removed hosts are reported with old and new; unchanged are not."""
        path = tmp_path / "racks.txt"
        path.write_text(TEXT_TABLE)
        table = TableResolver(file=RackTableFile(path))
        heard = Recorder()
        table.add_listener(heard)
        path.write_text("bk1.dc1 /dc1/r1\nbk2.dc1 /dc1/r9\nbk4.dc2 /dc2/r2\n")
        expected = {
            "bk2.dc1": ("/dc1/r2", "/dc1/r9"),
            "bk3.dc2": ("/dc2/r1", None),
            "bk4.dc2": (None, "/dc2/r2"),
        }
        assert table.reload() == expected
        assert heard.calls == [expected]
        assert table.resolve(["bk2.dc1", "bk3.dc2"]) == ["/dc1/r9", "/default-rack"]

    def test_reload_cached_mappings_re_reads_the_file(self, tmp_path):
        """reload_cached_mappings is upstream's name for reload."""
        path = tmp_path / "racks.txt"
        path.write_text("bk1 /r1\n")
        table = TableResolver(file=RackTableFile(path))
        path.write_text("bk1 /r2\n")
        table.reload_cached_mappings()
        assert table.resolve(["bk1"]) == ["/r2"]

    def test_listeners_are_not_called_when_nothing_changed(self, tmp_path):
        """Re-reading an unchanged file or setting the same location is silent."""
        path = tmp_path / "racks.txt"
        path.write_text(TEXT_TABLE)
        table = TableResolver(file=RackTableFile(path))
        heard = Recorder()
        table.add_listener(heard)
        table.reload()
        table.set("bk1.dc1", "/dc1/r1")
        assert heard.calls == []

    def test_set_and_update_report_their_changes(self):
        """set moves or forgets one host; update applies several and notifies once."""
        table = TableResolver({"bk1": "/r1", "bk2": "/r2"})
        heard = Recorder()
        table.add_listener(heard)
        table.set("bk1", "/r3")
        table.set("bk2", None)
        table.update({"bk5": "/r5", "bk6": "/r6", "bk1": "/r3"})
        assert heard.calls == [
            {"bk1": ("/r1", "/r3")},
            {"bk2": ("/r2", None)},
            {"bk5": (None, "/r5"), "bk6": (None, "/r6")},
        ]

    def test_a_bad_update_changes_nothing(self):
        """Every entry is checked before any is applied, and listeners hear nothing."""
        table = TableResolver({"bk1": "/r1"})
        heard = Recorder()
        table.add_listener(heard)
        with pytest.raises(InvalidTopologyError, match="host 'bk3'"):
            table.update({"bk2": "/r2", "bk3": ""})
        assert table.as_dict() == {"bk1": "/r1"}
        assert heard.calls == []

    def test_removed_listeners_hear_nothing_more(self):
        """remove_listener stops the calls and says whether the listener was registered."""
        table = TableResolver({})
        heard = Recorder()
        table.add_listener(heard)
        assert table.remove_listener(heard) is True
        assert table.remove_listener(heard) is False
        table.set("bk1", "/r1")
        assert heard.calls == []
