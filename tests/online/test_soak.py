"""A bounded soak: 50 agents on loopback, membership churn, one reader; nothing may leak."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.online.agent_pool import node_id
from tests.online.helpers import RecordingSink, wait_until
from trimtab.systems.bookkeeper.bookieinfo.client import GrpcBookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.reader import BookieInfoReader
from trimtab.systems.bookkeeper.registry import ZooKeeperWatcher
from trimtab.systems.zookeeper import ZkTarget

pytestmark = [pytest.mark.server, pytest.mark.slow]  # agent_pool.py: fifty agents

AGENTS = 50
CHURN_STEPS = 80
CHURN_SECONDS = 15.0


def socket_fds() -> int:
    """Sockets this process holds open."""
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            if str(fd.readlink()).startswith("socket:"):
                count += 1
        except OSError:
            continue
    return count


class Pool:
    def __init__(self, target: ZkTarget, workdir: Path) -> None:
        script = Path(__file__).with_name("agent_pool.py")
        with (workdir / "pool.log").open("w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(script), target.hosts, target.root, str(workdir), str(AGENTS)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )

    def reply(self) -> dict[str, object]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, f"agent pool exited with {self.proc.poll()}"
        doc: dict[str, object] = json.loads(line)
        return doc

    def send(self, command: str) -> dict[str, object]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.reply()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.send("quit")
            self.proc.wait(timeout=60)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def test_fifty_agents_with_churn(zk_target: ZkTarget, tmp_path: Path) -> None:
    """No crash, no leaked thread or socket, every query answered or counted as an error."""
    # warm gRPC up so its process-wide sockets/threads are in the baseline
    warm = GrpcBookieInfoClient()
    warm.fetch_many({node_id(99): "127.0.0.1:1"}, timeout=0.5)
    warm.close()
    threads_before = {t.name for t in threading.enumerate()}
    sockets_before = socket_fds()

    sink = RecordingSink()
    reader = BookieInfoReader(
        sink,
        GrpcBookieInfoClient(),
        interval_seconds=0.5,
        retry_interval_seconds=0.3,
        timeout_seconds=2.0,
    )
    watcher = ZooKeeperWatcher(zk_target, reader.on_membership, session_timeout=4.0)
    reader.start()
    watcher.start(timeout=10)
    pool = Pool(zk_target, tmp_path)
    everyone = {node_id(i) for i in range(AGENTS)}
    try:
        assert pool.reply()["started"] == AGENTS
        wait_until(lambda: set(sink.latest()) == everyone, timeout=40, what="all 50 weighed")

        rng = random.Random(20260901)
        down: set[int] = set()
        readonly: set[int] = set()
        deadline = time.monotonic() + CHURN_SECONDS
        for _ in range(CHURN_STEPS):
            if time.monotonic() > deadline:
                break
            index = rng.randrange(AGENTS)
            if index in down:
                mode = "readonly" if rng.random() < 0.3 else ""
                assert pool.send(f"start {index} {mode}".strip())["ok"]
                down.discard(index)
                if mode:
                    readonly.add(index)
            else:
                assert pool.send(f"stop {index}")["ok"]
                down.add(index)
                readonly.discard(index)
            time.sleep(rng.random() * 0.05)

        expected_writable = {node_id(i) for i in range(AGENTS) if i not in down | readonly}
        expected_readonly = {node_id(i) for i in readonly}
        wait_until(
            lambda: (
                sink.writable == expected_writable
                and sink.readonly == expected_readonly
                and set(sink.latest()) == expected_writable
            ),
            timeout=30,
            what="the reader's map to settle after churn",
        )
        assert reader.alive
        stats = reader.snapshot().stats
        assert stats.queries == stats.answers + stats.error_count
        assert stats.pushes == stats.scans and stats.sink_failures == 0
        assert stats.membership_changes >= 2
        assert sink.kinds().count("info") == stats.pushes
    finally:
        pool.close()
        watcher.stop()
        reader.close()
    assert pool.proc.returncode == 0

    wait_until(
        lambda: not ({t.name for t in threading.enumerate()} - threads_before),
        timeout=20,
        what="threads to end",
    )
    wait_until(lambda: socket_fds() <= sockets_before, timeout=20, what="sockets to close")
