"""The in-memory cluster kept in a JSON file, so a ``trimtab execute`` process can be killed
and another resume it: ``python -m tests.execute.file_target STATE [trimtab args...]`` runs
the command with its connection pointed at the cluster in STATE (moves progress in wall-clock
time). Each call loads the file and writes it back atomically, so a write the process made
took effect exactly when its file was replaced."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.execute.fake import FakeClock, FakeCluster, _Move
from trimtab.plans.document import Action
from trimtab.plans.target import ThrottleSet

__all__ = ["FileTarget", "WallClock", "write_state"]


class WallClock(FakeClock):
    """Seconds since the epoch: the same clock in every process."""

    def monotonic(self) -> float:
        return time.time()


def write_state(path: Path, replicas: dict[str, list[int]]) -> None:
    body = {
        "replicas": replicas,
        "moves": {},
        "throttle": None,
        "submitted": {},
        "last": time.time(),
    }
    path.write_text(json.dumps(body))


class FileTarget:
    """A :class:`~trimtab.plans.target.Target` over the cluster in ``path``."""

    system = "kafka"

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> FakeCluster:
        body = json.loads(self.path.read_text())
        cluster = FakeCluster(WallClock(), body["replicas"])
        cluster.moves = {k: _Move(**v) for k, v in body["moves"].items()}
        cluster.throttle = body["throttle"]
        cluster.submitted = Counter(body["submitted"])
        cluster._last = body["last"]
        return cluster

    def _save(self, cluster: FakeCluster) -> None:
        body = {
            "replicas": cluster.replicas,
            "moves": {k: vars(m) for k, m in cluster.moves.items()},
            "throttle": cluster.throttle,
            "submitted": dict(cluster.submitted),
            "last": cluster._last,
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(body))
        tmp.replace(self.path)

    def _call(self, name: str, *args: Any) -> Any:
        cluster = self._load()
        result = getattr(cluster, name)(*args)
        self._save(cluster)
        return result

    def describe(self) -> str:
        return f"file://{self.path}"

    def observe(self, actions: Sequence[Action]) -> Any:
        return self._call("observe", actions)

    def submit(self, actions: Sequence[Action]) -> None:
        self._call("submit", actions)

    def poll(self, actions: Sequence[Action]) -> Any:
        return self._call("poll", actions)

    def cancel(self, actions: Sequence[Action]) -> None:
        self._call("cancel", actions)

    def set_throttle(self, rate: int, actions: Sequence[Action]) -> Any:
        return self._call("set_throttle", rate, actions)

    def preview_throttle(self, rate: int, actions: Sequence[Action]) -> Any:
        cluster = self._load()
        entry = {"resource": "broker", "key": "rate", "value": rate, "before": cluster.throttle}
        return ThrottleSet(rate, (entry,))

    def clear_throttle(self, throttle: Any) -> None:
        self._call("clear_throttle", throttle)

    def guards(self, moving: Sequence[Action]) -> Any:
        return self._call("guards", moving)

    def close(self) -> None:
        pass


def main(argv: list[str]) -> None:
    import trimtab.cli.execute as command
    from trimtab.cli import main as trimtab_main

    state = Path(argv[0])
    setattr(command, "connect", lambda plan, flags, where: FileTarget(state))  # noqa: B010
    trimtab_main(argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
