"""The script resolver, run against real shell scripts the tests write into tmp_path."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from trimtab.errors import ResolverError
from trimtab.topology import Resolver, ScriptResolver

# Each run appends one line to calls.log: "call" then a tab before every argument.
LOG_ARGS = """\
log="$(dirname "$0")/calls.log"
printf 'call' >> "$log"
for arg in "$@"; do printf '\\t%s' "$arg" >> "$log"; done
printf '\\n' >> "$log"
"""
ECHO_RACKS = 'for host in "$@"; do echo "/rack-$host"; done\n'
ONLY_WITH_HOSTS = 'if [ "$#" -eq 0 ]; then exit 0; fi\n'  # so the start-up check passes


def write_script(directory: Path, body: str, *, name: str = "rack.sh", mode: int = 0o755) -> Path:
    """A /bin/sh script that logs its arguments, then runs ``body``."""
    path = directory / name
    path.write_text("#!/bin/sh\n" + LOG_ARGS + body)
    path.chmod(mode)
    return path


def calls(directory: Path) -> list[list[str]]:
    """The argument lists of every run of the script, start-up check included."""
    log = directory / "calls.log"
    if not log.exists():
        return []
    return [line.split("\t")[1:] for line in log.read_text().splitlines()]


@pytest.fixture
def warnings_seen(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.WARNING, logger="trimtab.topology")
    return caplog


class TestGoodScript:
    def test_answers_one_rack_per_host_in_order(self, tmp_path):
        """Each host gets the token the script printed for it, in the order asked."""
        resolver = ScriptResolver(write_script(tmp_path, ECHO_RACKS))
        assert resolver.resolve(["b", "a", "c"]) == ["/rack-b", "/rack-a", "/rack-c"]
        assert isinstance(resolver, Resolver)

    def test_start_up_runs_the_script_once_without_arguments(self, tmp_path):
        """Construction validates the script by running it with no hosts."""
        ScriptResolver(write_script(tmp_path, ECHO_RACKS))
        assert calls(tmp_path) == [[]]

    def test_empty_input_runs_nothing(self, tmp_path):
        """resolve([]) is [] and does not run the script."""
        resolver = ScriptResolver(write_script(tmp_path, ECHO_RACKS))
        assert resolver.resolve([]) == []
        assert len(calls(tmp_path)) == 1

    def test_hosts_are_batched_as_separate_arguments_without_a_shell(self, tmp_path):
        """number_args=2 over 5 hosts is 3 runs; 'a;b' arrives as one literal argument."""
        resolver = ScriptResolver(write_script(tmp_path, ECHO_RACKS), number_args=2)
        hosts = ["h1", "a;b", "h3", "$(id)", "h5"]
        answers = resolver.resolve(hosts)
        assert answers == ["/rack-h1", "/rack-a;b", "/rack-h3", "/rack-$(id)", "/rack-h5"]
        assert calls(tmp_path) == [[], ["h1", "a;b"], ["h3", "$(id)"], ["h5"]]

    def test_answers_are_cached_per_host(self, tmp_path):
        """A second resolve of known hosts does not run the script; new hosts alone are asked."""
        resolver = ScriptResolver(write_script(tmp_path, ECHO_RACKS))
        resolver.resolve(["h1", "h2"])
        assert resolver.resolve(["h2", "h1", "h2"]) == ["/rack-h2", "/rack-h1", "/rack-h2"]
        resolver.resolve(["h1", "h3", "h3"])
        assert calls(tmp_path) == [[], ["h1", "h2"], ["h3"]]

    def test_reload_cached_mappings_asks_again(self, tmp_path):
        """After reload_cached_mappings the script is run again for the same hosts."""
        resolver = ScriptResolver(write_script(tmp_path, ECHO_RACKS))
        resolver.resolve(["h1"])
        resolver.reload_cached_mappings()
        resolver.resolve(["h1"])
        assert calls(tmp_path) == [[], ["h1"], ["h1"]]

    def test_a_relative_script_path_is_run_from_where_it_is(self, tmp_path, monkeypatch):
        """A script named relative to the working directory is found without a PATH search."""
        write_script(tmp_path, ECHO_RACKS)
        monkeypatch.chdir(tmp_path)
        assert ScriptResolver("rack.sh").resolve(["h"]) == ["/rack-h"]


class TestFailingLookups:
    def test_a_slow_script_gives_the_default_rack_and_a_warning(self, tmp_path, warnings_seen):
        """A run past timeout_s sends its hosts to the default rack and logs why."""
        script = write_script(tmp_path, ONLY_WITH_HOSTS + "exec sleep 5\n")
        resolver = ScriptResolver(script, timeout_s=0.5, default_rack="/dc0/none")
        assert resolver.resolve(["h1", "h2"]) == ["/dc0/none", "/dc0/none"]
        [record] = warnings_seen.records
        assert record.name == "trimtab.topology"
        message = record.getMessage()
        assert str(script) in message and "2 host(s)" in message and "timed out" in message

    def test_a_non_zero_exit_gives_the_default_rack_with_stderr(self, tmp_path, warnings_seen):
        """A failing run is logged with its exit status and stderr excerpt."""
        script = write_script(tmp_path, ONLY_WITH_HOSTS + "echo 'ldap down' >&2\nexit 3\n")
        assert ScriptResolver(script).resolve(["h1"]) == ["/default-rack"]
        message = warnings_seen.records[0].getMessage()
        assert "exit status 3" in message and "ldap down" in message

    def test_a_wrong_answer_count_asks_again_host_by_host(self, tmp_path, warnings_seen):
        """One token for two hosts cannot be matched up; each host asked alone gets its own."""
        script = write_script(tmp_path, ONLY_WITH_HOSTS + "echo /r1\n")
        assert ScriptResolver(script).resolve(["h1", "h2"]) == ["/r1"] * 2
        assert "expected 2 answers, got 1" in warnings_seen.records[0].getMessage()

    def test_one_host_that_breaks_the_script_sends_only_itself_to_the_default(
        self, tmp_path, warnings_seen
    ):
        """A batch that fails as a whole is retried one host at a time (upstream's rule)."""
        body = ONLY_WITH_HOSTS + (
            'for host in "$@"; do [ "$host" = bad ] && exit 1; done\n'
            'for host in "$@"; do echo "/rack-$host"; done\n'
        )
        resolver = ScriptResolver(write_script(tmp_path, body))
        assert resolver.resolve(["h1", "bad", "h2"]) == ["/rack-h1", "/default-rack", "/rack-h2"]
        assert len(warnings_seen.records) == 2  # the batch, then "bad" alone

    def test_an_answer_that_is_not_a_location_affects_only_its_host(self, tmp_path, warnings_seen):
        """A token without a leading slash is replaced by the default; the others are kept."""
        body = (
            'for host in "$@"; do if [ "$host" = bad ]; then echo oops; else echo /r1; fi; done\n'
        )
        resolver = ScriptResolver(write_script(tmp_path, body))
        assert resolver.resolve(["h1", "bad", "h2"]) == ["/r1", "/default-rack", "/r1"]
        assert "bad='oops'" in warnings_seen.records[0].getMessage()
        resolver.resolve(["h1", "bad", "h2"])
        assert calls(tmp_path)[-1] == ["bad"]  # the good answers were cached, the bad one not

    def test_failed_answers_are_not_cached(self, tmp_path, warnings_seen):
        """After a failure the next resolve asks the script again and keeps its real answer."""
        flag = tmp_path / "broken"
        flag.touch()
        body = ONLY_WITH_HOSTS + f'if [ -e "{flag}" ]; then exit 1; fi\n' + ECHO_RACKS
        resolver = ScriptResolver(write_script(tmp_path, body))
        assert resolver.resolve(["h1"]) == ["/default-rack"]
        flag.unlink()
        assert resolver.resolve(["h1"]) == ["/rack-h1"]
        assert resolver.resolve(["h1"]) == ["/rack-h1"]
        assert calls(tmp_path) == [[], ["h1"], ["h1"]]

    def test_blank_names_get_the_default_without_asking(self, tmp_path):
        """An empty host name is never passed to the script."""
        resolver = ScriptResolver(write_script(tmp_path, ECHO_RACKS))
        assert resolver.resolve(["", "h1"]) == ["/default-rack", "/rack-h1"]
        assert calls(tmp_path) == [[], ["h1"]]


class TestStartUp:
    def test_a_missing_script_cannot_start(self, tmp_path):
        """A script path that does not exist raises ResolverError naming it."""
        with pytest.raises(ResolverError, match=r"nope\.sh not found"):
            ScriptResolver(tmp_path / "nope.sh")

    def test_a_script_that_is_not_executable_cannot_start(self, tmp_path):
        """Without the execute bit the resolver refuses to start and says so."""
        script = write_script(tmp_path, ECHO_RACKS, mode=0o644)
        with pytest.raises(ResolverError, match=rf"{script}.*not executable"):
            ScriptResolver(script)

    def test_a_directory_is_not_a_script(self, tmp_path):
        """A directory path is refused even though it has the execute bit."""
        with pytest.raises(ResolverError, match="is not a file"):
            ScriptResolver(tmp_path)

    def test_a_script_failing_its_check_cannot_start(self, tmp_path):
        """A non-zero exit on the argument-less run raises with the path and stderr."""
        script = write_script(tmp_path, "echo 'no rack database' >&2\nexit 2\n")
        with pytest.raises(ResolverError) as caught:
            ScriptResolver(script)
        message = str(caught.value)
        assert str(script) in message and "exit status 2" in message
        assert "no rack database" in message

    def test_a_script_hanging_at_start_cannot_start(self, tmp_path):
        """A start-up run past the time-out raises ResolverError saying it timed out."""
        script = write_script(tmp_path, "exec sleep 5\n")
        with pytest.raises(ResolverError, match=r"timed out after 0\.3s"):
            ScriptResolver(script, timeout_s=0.3)

    def test_a_script_without_an_interpreter_cannot_start(self, tmp_path):
        """An executable the system cannot run is reported, not raised as OSError."""
        path = tmp_path / "rack.sh"
        path.write_text("#!/nonexistent/interpreter\n")
        path.chmod(0o755)
        with pytest.raises(ResolverError, match="could not run it"):
            ScriptResolver(path)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            pytest.param({"number_args": 0}, "number_args", id="no hosts per call"),
            pytest.param({"timeout_s": 0}, "timeout_s", id="no time to answer"),
        ],
    )
    def test_nonsense_limits_are_refused(self, tmp_path, kwargs, match):
        """number_args and timeout_s must be positive."""
        with pytest.raises(ValueError, match=match):
            ScriptResolver(write_script(tmp_path, ECHO_RACKS), **kwargs)
