"""Run a stand-in BookKeeper cluster until SIGTERM or SIGINT (the docs' live examples).

    python -m tests.standins.bookkeeper --zk-port 12181 --bookies 6 --racks 3 \\
        [--readonly 1] [--down 1] [--reports DIR]

It starts a ZooKeeper on 127.0.0.1:``--zk-port`` (Debian's ``zookeeper`` package, as the
online tests do), ``--bookies`` stand-in bookies ``bk<N>.example:3181`` answering
GET_BOOKIE_INFO on loopback ports (disks from 1 to 4 TB, a third of it free) registered in
``/ledgers/available`` (the last ``--readonly`` of them under ``readonly``, and ``--down`` more
registered at a port where nothing listens), Pulsar's ``/bookies`` map spreading them over
``--racks`` racks of region ``dc1``, and each ``--reports`` file as a broker's load report
``/loadbalance/brokers/<file stem>``. It prints one JSON line, ``{"zk": ..., "bookies": [...]}``,
once everything is registered.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path

from kazoo.client import KazooClient

from tests.online.conftest import ZooKeeperServer
from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo.v3server import BookieRpcServer
from trimtab.systems.bookkeeper.registry import encode_bookie_service_info

TB = 10**12


def _disk(index: int) -> BookieInfo:
    total = (1 + index % 4) * TB
    return BookieInfo.checked(total, total // 3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.standins.bookkeeper")
    parser.add_argument("--zk-port", type=int, default=12181)
    parser.add_argument("--bookies", type=int, default=6)
    parser.add_argument("--racks", type=int, default=3)
    parser.add_argument("--readonly", type=int, default=0)
    parser.add_argument("--down", type=int, default=0)
    parser.add_argument("--reports", type=Path)
    args = parser.parse_args(argv)
    logging.getLogger("kazoo").setLevel(logging.ERROR)  # its reconnect chatter
    workdir = Path(tempfile.mkdtemp(prefix="bk-standin-"))
    zookeeper = ZooKeeperServer(workdir)
    text = zookeeper.cfg.read_text()  # the port the docs name, not a free one
    zookeeper.cfg.write_text(
        text.replace(f"clientPort={zookeeper.port}", f"clientPort={args.zk_port}")
    )
    zookeeper.port = args.zk_port
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    zookeeper.start()
    servers: list[BookieRpcServer] = []
    client = KazooClient(hosts=zookeeper.hosts)
    try:
        client.start(timeout=30)
        bookies = _register(client, args, servers)
        if args.reports is not None:
            for report in sorted(args.reports.glob("*.json")):
                path = f"/loadbalance/brokers/{report.stem}"
                client.create(path, report.read_bytes(), ephemeral=True, makepath=True)
        print(json.dumps({"zk": zookeeper.hosts, "bookies": bookies}), flush=True)
        stop.wait()
    finally:
        client.stop()
        client.close()
        for server in servers:
            server.stop(0)
        zookeeper.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _register(
    client: KazooClient, args: argparse.Namespace, servers: list[BookieRpcServer]
) -> list[str]:
    """Start and register the bookies; write the rack map."""
    client.ensure_path("/ledgers/available/readonly")
    racks: dict[str, dict[str, str]] = {}
    names = []
    for index in range(args.bookies + args.down):
        name = f"bk{index + 1}.example:3181"
        if index < args.bookies:
            server = BookieRpcServer(functools.partial(_disk, index))
            server.start()
            servers.append(server)
            port = server.port
        else:
            port = 1  # registered, but nothing answers there
        readonly = args.bookies - args.readonly <= index < args.bookies
        side = "available/readonly" if readonly else "available"
        data = encode_bookie_service_info("127.0.0.1", port)
        client.create(f"/ledgers/{side}/{name}", data, ephemeral=True)
        racks[name] = {"rack": f"/dc1/rack{index % args.racks + 1}", "hostname": name[:-5]}
        names.append(name)
    client.create("/bookies", json.dumps({"default": racks}).encode())
    return names


if __name__ == "__main__":
    sys.exit(main())
