"""The script resolver: ask an executable where hosts sit (upstream ``ScriptBasedMapping``).

The script is run with up to ``number_args`` host names as separate arguments and prints one
location per host, separated by whitespace, in the same order::

    $ ./rack.sh bk1.dc1 bk2.dc1
    /dc1/r1 /dc1/r2

It is run directly, never through a shell, so a host name such as ``a;b`` is one argument and
never a command. Upstream's rules carry over:

* **Validate at start.** The constructor runs the script once with no arguments; if that fails
  (missing, not executable, non-zero exit, time-out) it raises :class:`ResolverError`, and
  :func:`~trimtab.topology.resolvers.make_resolver` decides between falling back and failing.
* **Never fail a lookup.** During ``resolve`` a time-out, a non-zero exit, a wrong number of
  answers or an answer that is not a location gives the affected hosts the default rack and
  logs a warning on ``trimtab.topology``. Placement goes on; the operator sees why. A batch
  that fails as a whole is asked again one host at a time, so one host that breaks the script
  does not send the others to the default rack (not after a time-out: a hung script would
  then hang once per host).
* **Cache answers, not failures.** Good answers are kept per host until
  ``reload_cached_mappings``; a default given because of a failure is not kept, so the next
  lookup asks the script again.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from trimtab.cluster import DEFAULT_RACK, validate_location
from trimtab.errors import ResolverError
from trimtab.topology._common import LOG, checked_default_rack

__all__ = ["ScriptResolver"]

_STDERR_EXCERPT = 200
_HOSTS_IN_WARNING = 5


class _RunFailedError(Exception):
    """One run of the script did not produce usable output; ``reason`` says why."""

    def __init__(self, reason: str, *, retry: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry  # worth asking about each host alone (not after a time-out)


class ScriptResolver:
    """Resolves hosts by running ``script`` in batches of ``number_args``, caching good answers."""

    __slots__ = ("_cache", "default_rack", "number_args", "script", "timeout_s")

    def __init__(
        self,
        script: str | Path,
        *,
        number_args: int = 100,
        timeout_s: float = 10.0,
        default_rack: str = DEFAULT_RACK,
    ) -> None:
        if number_args < 1:
            raise ValueError(f"number_args must be at least 1, got {number_args}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.default_rack = checked_default_rack(default_rack)
        self.number_args = number_args
        self.timeout_s = timeout_s
        self.script = _checked_script(Path(script))
        self._cache: dict[str, str] = {}
        try:
            self._run(())
        except _RunFailedError as exc:
            raise ResolverError(
                f"rack script {self.script} failed its start-up check (run with no arguments):"
                f" {exc.reason}"
            ) from None

    def __repr__(self) -> str:
        return (
            f"ScriptResolver({str(self.script)!r}, number_args={self.number_args},"
            f" timeout_s={self.timeout_s}, default_rack={self.default_rack!r})"
        )

    def resolve(self, names: Sequence[str]) -> list[str]:
        """One location per name, in order; see the module docstring for failures."""
        cache = self._cache
        missing = list(dict.fromkeys(n for n in names if n.strip() and n not in cache))
        fresh: dict[str, str] = {}
        for start in range(0, len(missing), self.number_args):
            fresh.update(self._resolve_batch(missing[start : start + self.number_args]))
        return [cache.get(n) or fresh.get(n, self.default_rack) for n in names]

    def reload_cached_mappings(self) -> None:
        """Forget every cached answer, so the next lookups ask the script again."""
        self._cache.clear()

    def _resolve_batch(self, hosts: list[str]) -> dict[str, str]:
        """The good answers for ``hosts``; what failed is one warning for the whole batch
        (a script that fails for every host is one line, not one per host: issue 43)."""
        answers, failed, reason, retry = self._attempt(hosts)
        if failed and retry and len(hosts) > 1:
            batch_failed, batch_reason = failed, reason
            answers, failed, reason = self._one_by_one(hosts, reason)
            if answers:  # asked alone some hosts got answers: the batch's failure is news
                self._warn(batch_failed, batch_reason)
        if failed:
            self._warn(failed, reason)
        return answers

    def _attempt(self, hosts: list[str]) -> tuple[dict[str, str], list[str], str, bool]:
        """One run on ``hosts``: the good answers, the hosts (or ``host=answer``) that got
        none, why, and whether asking about each host alone may help."""
        try:
            tokens = self._run(hosts)
        except _RunFailedError as exc:
            return {}, hosts, exc.reason, exc.retry
        if len(tokens) != len(hosts):
            return {}, hosts, f"expected {len(hosts)} answers, got {len(tokens)}", True
        answers: dict[str, str] = {}
        bad: list[str] = []
        for host, token in zip(hosts, tokens, strict=True):
            try:
                answers[host] = validate_location(token)
            except ValueError:
                bad.append(f"{host}={token!r}")
        self._cache.update(answers)
        return answers, bad, "answers that are not network locations", False

    def _one_by_one(
        self, hosts: list[str], batch_reason: str
    ) -> tuple[dict[str, str], list[str], str]:
        """Ask again about each host of a failed batch alone (upstream
        ``ScriptBasedMapping``), so one bad host does not send the batch to the default rack;
        the hosts that still failed, with the first reason given."""
        answers: dict[str, str] = {}
        failed: list[str] = []
        reasons: list[str] = []
        for host in hosts:
            got, lost, reason, _ = self._attempt([host])
            answers.update(got)
            failed += lost
            reasons += [reason] if lost else []
        return answers, failed, reasons[0] if reasons else batch_reason

    def _run(self, hosts: Sequence[str]) -> list[str]:
        """Run the script on ``hosts`` (separate arguments, no shell) and split its answer."""
        try:
            done = subprocess.run(
                [str(self.script), *hosts],
                shell=False,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=self.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise _RunFailedError(f"timed out after {self.timeout_s:g}s", retry=False) from None
        except OSError as exc:
            raise _RunFailedError(f"could not run it: {exc}") from None
        if done.returncode != 0:
            stderr = done.stderr.decode("utf-8", errors="replace").strip()
            excerpt = stderr[:_STDERR_EXCERPT] + ("…" if len(stderr) > _STDERR_EXCERPT else "")
            raise _RunFailedError(f"exit status {done.returncode}, stderr: {excerpt!r}")
        return done.stdout.decode("utf-8", errors="replace").split()

    def _warn(self, hosts: Sequence[str], reason: str) -> None:
        shown = ", ".join(hosts[:_HOSTS_IN_WARNING])
        more = (
            f" and {len(hosts) - _HOSTS_IN_WARNING} more" if len(hosts) > _HOSTS_IN_WARNING else ""
        )
        LOG.warning(
            "rack script %s failed for %d host(s) (%s%s): %s; using the default rack %s",
            self.script,
            len(hosts),
            shown,
            more,
            reason,
            self.default_rack,
        )


def _checked_script(path: Path) -> Path:
    """The script as an absolute path (so it never goes through a PATH search), or why not."""
    if not path.exists():
        raise ResolverError(f"rack script {path} not found")
    if not path.is_file():
        raise ResolverError(f"rack script {path} is not a file")
    if not os.access(path, os.X_OK):
        raise ResolverError(f"rack script {path} is not executable (try chmod +x)")
    return path.absolute()
