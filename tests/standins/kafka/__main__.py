"""``python -m tests.standins.kafka``: the Kafka stand-in as its own process.

For the subprocess tests (SIGKILL then ``--resume``) and the 10,000-partition bench::

    python -m tests.standins.kafka --port 0 --brokers 4 --topics orders:12:3:1000000 \\
        [--state-file assignment.json] [--scale 1000] [--dump counts.json] \\
        [--redpanda-admin-port 9644] [--log-dirs 2]

``--topics NAME:PARTITIONS:RF[:BYTES]`` (comma-separated) spreads replicas round-robin over
the brokers; ``--state-file`` loads a ``kafka-reassign-partitions`` document instead (entries
may carry ``"size"``). Brokers listen on ``--port``, ``--port``+1, ... (0: any free port each).
The first stdout line is ``ready BOOTSTRAP``; on SIGTERM or SIGINT it writes to ``--dump``
(JSON) the assignment, the calls by API, reads and writes, the reassignments started and
cancelled per partition, and the throttle configs left set, and exits.

``--log-dirs N`` gives each broker N log dirs (``/var/lib/kafka/data-0`` ...; JBOD), the
replicas in the first unless the state file's ``log_dirs`` says otherwise.

``--redpanda-admin-port`` makes it a Redpanda: it also serves the Admin API stand-in on that
port, and partition moves copy at its ``raft_learner_recovery_rate`` per node.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from tests.standins.kafka.cluster import Cluster
from tests.standins.kafka.server import KafkaStandin
from tests.standins.redpanda import RedpandaAdminStandin


def _build(args: argparse.Namespace) -> Cluster:
    cluster = Cluster(scale=args.scale)
    for b in range(1, args.brokers + 1):
        broker = cluster.add_broker(b, f"rack-{(b - 1) % args.racks}" if args.racks else None)
        if args.log_dirs > 1:
            broker.log_dirs = [f"/var/lib/kafka/data-{k}" for k in range(args.log_dirs)]
    if args.state_file:
        cluster.load_assignment(json.loads(Path(args.state_file).read_text()), size=args.size)
    for spec in filter(None, (args.topics or "").split(",")):
        name, parts, rf, *size = spec.split(":")
        for i in range(int(parts)):
            replicas = [(i + k) % args.brokers + 1 for k in range(int(rf))]
            cluster.add_partition(name, i, replicas, int(size[0]) if size else args.size)
    return cluster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.standins.kafka")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--racks", type=int, default=0)
    parser.add_argument("--topics", default="")
    parser.add_argument("--state-file")
    parser.add_argument("--size", type=int, default=0, help="bytes of a partition")
    parser.add_argument("--scale", type=float, default=1.0, help="simulated s per real s")
    parser.add_argument("--dump")
    parser.add_argument("--redpanda-admin-port", type=int, help="also serve Redpanda's Admin API")
    parser.add_argument("--log-dirs", type=int, default=1, help="log dirs per broker (JBOD)")
    args = parser.parse_args(argv)
    cluster = _build(args)
    ports = {b: args.port + i for i, b in enumerate(sorted(cluster.brokers))} if args.port else None
    admin = None
    if args.redpanda_admin_port is not None:
        admin = RedpandaAdminStandin(port=args.redpanda_admin_port).__enter__()
        cluster.node_rate = admin.recovery_rate
    standin = KafkaStandin(cluster, ports=ports).start()
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    print(f"ready {standin.bootstrap}", flush=True)
    done.wait()
    standin.stop()
    if admin is not None:
        admin.__exit__(None, None, None)
    if args.dump:
        report: dict[str, Any] = {
            "assignment": cluster.assignment(),
            "calls": dict(cluster.calls),
            "submissions": {f"{t}/{p}": n for (t, p), n in cluster.submissions.items()},
            "cancels": {f"{t}/{p}": n for (t, p), n in cluster.cancels.items()},
            "configs": {
                f"{'broker' if kind == 4 else 'topic'}:{name}": values
                for (kind, name), values in cluster.configs.items()
                if values
            },
            "reads": cluster.reads,
            "writes": cluster.writes,
        }
        Path(args.dump).write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
