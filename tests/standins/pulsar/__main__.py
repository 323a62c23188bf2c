"""Run the Pulsar admin stand-in as a process (subprocess and SIGKILL tests, the bench).

    python -m tests.standins.pulsar --brokers 3 --namespace public/default=8 \\
        [--cluster NAME] [--token-file F] [--tls-cert F --tls-key F [--client-ca F]] \\
        [--time-scale X] [--unload-seconds S] [--port P] [--cores 4,8,16]
    python -m tests.standins.pulsar --load-reports DIR [--port P] ...

``--load-reports`` plays the brokers of saved load reports (``pulsar-admin broker-stats
load-report`` output, one file per broker), each owning the bundles its report lists, so a
plan made from those reports (``trimtab shed --load-reports DIR --plan F``) runs against it.

It prints one JSON line, ``{"admin_url": ..., "brokers": [...], "cluster": ...}``, once every
broker listens, then serves until SIGTERM or SIGINT. ``--token-file`` holds the one token it
accepts (role ``admin``, a super-user).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from tests.standins.pulsar.standin import PulsarStandin, ServerTls
from trimtab.systems.pulsar.load_reports import read_report_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.standins.pulsar")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--namespace", action="append", default=[], metavar="NS=BUNDLES")
    parser.add_argument("--cluster", default="standalone")
    parser.add_argument("--token-file", type=Path)
    parser.add_argument("--tls-cert", type=Path)
    parser.add_argument("--tls-key", type=Path)
    parser.add_argument("--client-ca", type=Path)
    parser.add_argument("--time-scale", type=float, default=1000.0)
    parser.add_argument("--unload-seconds", type=float, default=30.0)
    parser.add_argument("--load-reports", type=Path, help="play the brokers of these reports")
    parser.add_argument("--port", type=int, default=0, help="the first broker's port")
    parser.add_argument(
        "--cores", default="", help="cores per broker, comma-separated (e.g. 4,8,16)"
    )
    args = parser.parse_args(argv)
    owners = _owners(args.load_reports) if args.load_reports else None
    namespaces = {}
    for spec in args.namespace or ["public/default=4"]:
        name, _, count = spec.partition("=")
        namespaces[name] = int(count or 4)
    tokens = {args.token_file.read_text().strip(): "admin"} if args.token_file else None
    tls = ServerTls(args.tls_cert, args.tls_key, args.client_ca) if args.tls_cert else None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with PulsarStandin(
        brokers=args.brokers,
        namespaces=namespaces,
        cluster=args.cluster,
        tokens=tokens,
        tls=tls,
        time_scale=args.time_scale,
        unload_seconds=args.unload_seconds,
        owners=owners,
        port=args.port,
    ) as standin:
        cores_each = args.cores.split(",") if args.cores else []
        for broker, cores in zip(standin.brokers, cores_each, strict=False):
            standin.cluster.set_limits(broker, cpu=100.0 * int(cores))
        line = {"admin_url": standin.admin_url, "brokers": standin.brokers, "cluster": args.cluster}
        print(json.dumps(line), flush=True)
        stop.wait()
    return 0


def _owners(path: Path) -> dict[str, list[str]]:
    """Broker name -> the bundles its saved report says it owns (read by trimtab's reader)."""
    reports, errors = read_report_dir(path)
    if errors:
        raise SystemExit(f"--load-reports {path}: {errors[0]}")
    return {r.broker: sorted(r.bundles or r.last_stats) for r in reports}


if __name__ == "__main__":
    sys.exit(main())
