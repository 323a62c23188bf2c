"""Run many GetBookieInfo agents in one process, driven line by line on stdin (soak tests).

Fifty agent processes would spend most of a short soak test starting Python; one process of fifty
real :class:`~trimtab.systems.bookkeeper.bookieinfo.agent.Agent` objects (each its own gRPC server
and ZooKeeper session on loopback) exercises the same network paths. Commands, one per line:

    start I [readonly]      start agent I (registered writable, or read-only)
    stop I                  stop agent I cleanly (its znode goes at once)
    quit                    stop every agent and exit

Each command is answered with one JSON line: ``{"ok": true, ...}`` or ``{"ok": false, "error"}``.
Usage: ``python agent_pool.py ZK_HOSTS ZK_ROOT WORKDIR COUNT``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from trimtab.cluster import NodeId
from trimtab.systems.bookkeeper.bookieinfo.agent import Agent, AgentOptions
from trimtab.systems.zookeeper import ZkTarget


def node_id(index: int) -> NodeId:
    return NodeId(f"soak{index:02d}:3181")


def main(argv: list[str]) -> int:
    hosts, root, workdir, count = argv[0], argv[1], Path(argv[2]), int(argv[3])
    target = ZkTarget(hosts, root)
    running: dict[int, Agent] = {}

    def reply(**doc: object) -> None:
        sys.stdout.write(json.dumps(doc) + "\n")
        sys.stdout.flush()

    def start(index: int, readonly: bool) -> None:
        ledgers = workdir / f"ledgers{index:02d}"
        ledgers.mkdir(parents=True, exist_ok=True)
        agent = Agent(
            AgentOptions(
                node_id=node_id(index),
                ledger_dirs=(ledgers,),
                zk=target,
                force_readonly=readonly,
                disk_check_seconds=3600,
                session_timeout_seconds=4.0,
            )
        )
        agent.start()
        running[index] = agent

    for index in range(count):
        start(index, False)
    reply(ok=True, started=count)
    for line in sys.stdin:
        words = line.split()
        try:
            if words[0] == "quit":
                break
            index = int(words[1])
            if words[0] == "start":
                start(index, len(words) > 2 and words[2] == "readonly")
            elif words[0] == "stop":
                running.pop(index).close(grace=0)
            else:
                raise ValueError(f"unknown command {words[0]!r}")
            reply(ok=True)
        except Exception as exc:  # report and carry on: the test decides
            reply(ok=False, error=f"{type(exc).__name__}: {exc}")
    for agent in running.values():
        agent.close(grace=0)
    reply(ok=True, stopped=len(running))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
