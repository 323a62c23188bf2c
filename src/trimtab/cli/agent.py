"""``trimtab agent``: run the GetBookieInfo agent of one storage node until SIGTERM or SIGINT."""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer

from trimtab._format import human_bytes
from trimtab.cli._addresses import free_port, listen_address
from trimtab.cli._common import ConfigOption, JsonFlag, app, load_config, out, user_errors
from trimtab.cli._metrics import (
    MetricsHostOption,
    MetricsPortOption,
    WebConfigOption,
    web_config_of,
)
from trimtab.cli._tls import TlsCaOption, TlsCertOption, TlsClientAuthFlag, TlsKeyOption
from trimtab.cluster import NodeId
from trimtab.config import Config
from trimtab.errors import AgentError, MembershipError
from trimtab.systems.bookkeeper.bookieinfo.agent import Agent, AgentOptions, AgentStatus
from trimtab.systems.bookkeeper.bookieinfo.metrics import AgentCollector
from trimtab.systems.bookkeeper.bookieinfo.tls_setup import server_tls
from trimtab.systems.prometheus import MetricsServer, WebConfig, registry_of
from trimtab.systems.zookeeper import ZkTarget, zk_security, zk_target

__all__ = ["agent", "print_event", "until_signalled", "wait_for"]


@contextmanager
def until_signalled() -> Iterator[threading.Event]:
    """An event set by SIGTERM or SIGINT while the block runs; old handlers restored after."""
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def print_event(as_json: bool, doc: dict[str, Any], text: str) -> None:
    """A daemon's news: one JSON line (flushed at once) with ``--json``, else one text line."""
    if as_json:
        sys.stdout.write(json.dumps(doc) + "\n")
        sys.stdout.flush()
    else:
        out.print(text, highlight=False, soft_wrap=True)


def _ready_doc(
    status: AgentStatus, zk: str | None, metrics: MetricsServer | None
) -> dict[str, Any]:
    usage = status.usage
    return {
        "event": "ready",
        "id": status.node_id,
        "address": status.address,
        "bookie_address": status.bookie_address,
        "readonly": status.readonly,
        "zk": zk,
        "metrics_port": metrics.port if metrics else None,
        "metrics_url": metrics.url if metrics else None,
        "total_bytes": usage.total_bytes if usage else None,
        "free_bytes": usage.free_bytes if usage else None,
    }


def _ready_text(
    status: AgentStatus, zk: str | None, target: ZkTarget | None, metrics: MetricsServer | None
) -> str:
    parts = [
        f"agent {status.node_id} answers GetBookieInfo on {status.address} (gRPC)"
        f" and {status.bookie_address} (BookKeeper v3)"
    ]
    if target is not None:
        parts.append(f"registered in ZooKeeper {zk} under {target.available}")
    else:
        parts.append("not registered (no ZooKeeper given)")
    if status.usage is not None:
        usage = status.usage
        parts.append(f"{human_bytes(usage.free_bytes)} free of {human_bytes(usage.total_bytes)}")
    if status.readonly:
        parts.append("read-only")
    if metrics is not None:
        parts.append(f"metrics on port {metrics.port}" + (" (TLS)" if metrics.tls else ""))
    return "; ".join(parts)


def _tls_text(options: AgentOptions) -> str:
    """What the ready line says of TLS; nothing without it (the plaintext line is unchanged)."""
    if options.tls is None:
        return ""
    if options.tls.client_auth:
        return f"; TLS on both ports, client certificates signed by {options.tls.ca} required"
    return "; TLS on both ports"


# The options of ``trimtab agent``, each declared once (the command's signature stays short).
_NodeIdOption = Annotated[
    str, typer.Option("--id", help="This node's id, host:port as BookKeeper names it.")
]
_LedgerDirs = Annotated[
    str, typer.Option("--ledger-dirs", help="Ledger directories to report, DIR[,DIR].")
]
_Listen = Annotated[
    str, typer.Option("--listen", help="gRPC address to bind; port 0 picks a free one.")
]
_Advertise = Annotated[
    str | None,
    typer.Option("--advertise", help="Address published in ZooKeeper (default: bound one)."),
]
_BookieListen = Annotated[
    str | None,
    typer.Option(
        "--bookie-listen",
        help="Address of the BookKeeper v3 (bookie-rpc) port; default: --listen's host, "
        "a free port.",
    ),
]
_Zk = Annotated[
    str | None,
    typer.Option("--zk", help="ZooKeeper HOST:PORT[,HOST:PORT]; none: do not register."),
]
_ZkRoot = Annotated[
    str | None,
    typer.Option(
        "--ledgers-root", "--zk-root", help="Registry root (zkLedgersRootPath, /ledgers)."
    ),
]
_Readonly = Annotated[
    bool, typer.Option("--readonly", help="Register read-only whatever the disks say.")
]
_DiskCheckSeconds = Annotated[
    float | None,
    typer.Option(
        "--disk-check-seconds",
        help="Disk check period (diskCheckInterval).",
        min=0.001,
        max=86_400.0,
    ),
]


@app.command()
def agent(
    node_id: _NodeIdOption,
    ledger_dirs: _LedgerDirs,
    listen: _Listen = "127.0.0.1:0",
    advertise: _Advertise = None,
    bookie_listen: _BookieListen = None,
    zk: _Zk = None,
    zk_root: _ZkRoot = None,
    readonly: _Readonly = False,
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = "127.0.0.1",
    web_config: WebConfigOption = None,
    disk_check_seconds: _DiskCheckSeconds = None,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
    tls_cert: TlsCertOption = None,
    tls_key: TlsKeyOption = None,
    tls_ca: TlsCaOption = None,
    tls_client_auth: TlsClientAuthFlag = False,
) -> None:
    """Answer GetBookieInfo with the real space of the ledger directories and stay registered.

    Answers over gRPC on --listen and, as a bookie does, in BookKeeper's v3 protocol on
    --bookie-listen, so `trimtab bookieinfo` (or a BookKeeper client) can ask it as a bookie.

    Registers an ephemeral znode /ledgers/available/ID (or .../readonly/ID) holding the gRPC
    address, re-registers after a ZooKeeper session expiry, and turns read-only by itself when
    every ledger filesystem is used above diskUsageThreshold. Stops cleanly on SIGTERM/SIGINT.

    With --tls-cert and --tls-key both ports speak only TLS (the v3 port after START_TLS, as a
    bookie); --tls-client-auth refuses clients without a certificate signed by --tls-ca.
    Renewed certificate files are used from the next connection on, without a restart.
    --web-config secures --metrics-port as Prometheus exporters do (TLS, Basic auth).
    """
    with user_errors():
        full = load_config(config)
        cfg = full.bookie_info
        tls = server_tls(
            full.tls, cert=tls_cert, key=tls_key, ca=tls_ca, client_auth=tls_client_auth
        )
        web = web_config_of(web_config, metrics_port=metrics_port)
        _check_addresses(listen, bookie_listen, metrics_port, metrics_host)
        target = _registry(full, zk, zk_root)
        node = _node_id(node_id)
        options = AgentOptions(
            node_id=node,
            ledger_dirs=tuple(Path(d.strip()) for d in ledger_dirs.split(",") if d.strip()),
            listen=listen,
            advertise=advertise,
            bookie_listen=bookie_listen,
            zk=target,
            force_readonly=readonly,
            disk_usage_threshold=cfg.disk_usage_threshold,
            disk_usage_lwm_threshold=cfg.disk_usage_lwm_threshold,
            disk_check_seconds=disk_check_seconds or cfg.disk_check_interval_ms / 1000,
            session_timeout_seconds=cfg.zk_timeout_ms / 1000,
            tls=tls,
        )
        _serve(
            options,
            metrics_port=metrics_port,
            metrics_host=metrics_host,
            web_config=web,
            as_json=as_json,
        )
    print_event(as_json, {"event": "stopped", "id": node}, f"agent {node} stopped")


def _check_addresses(
    listen: str, bookie_listen: str | None, metrics_port: int | None, metrics_host: str
) -> None:
    """Every address the agent will listen on, in range and free, before it registers."""
    for option, text in (("--listen", listen), ("--bookie-listen", bookie_listen)):
        if text is not None:
            free_port(option, *listen_address(option, text))
    if metrics_port is not None:
        free_port("--metrics-port", metrics_host, metrics_port)


def _registry(full: Config, zk: str | None, zk_root: str | None) -> ZkTarget | None:
    """Where to register, logged in as the config says; None when no ZooKeeper is given
    anywhere (a bad one is an error)."""
    cfg = full.bookie_info
    try:
        target = zk_target(cfg, hosts=zk, root=zk_root)
    except MembershipError:
        if zk or cfg.zk_servers or cfg.metadata_service_uri:
            raise
        return None
    return zk_target(cfg, hosts=zk, root=zk_root, security=zk_security(full)) if target else None


def _node_id(text: str) -> NodeId:
    try:
        return NodeId(text)
    except ValueError as exc:
        raise AgentError(str(exc)) from None


def _serve(
    options: AgentOptions,
    *,
    metrics_port: int | None,
    metrics_host: str,
    web_config: WebConfig | None,
    as_json: bool,
) -> None:
    """Run the agent (and its metrics endpoint) until SIGTERM or SIGINT, saying when ready."""
    target = options.zk
    hosts = target.hosts if target else None
    with until_signalled() as stop, ExitStack() as cleanup:  # closes in reverse order
        running = Agent(options)
        running.start()
        cleanup.callback(running.close)
        metrics = None
        if metrics_port is not None:
            metrics = MetricsServer(
                registry_of(AgentCollector(running.status)),
                port=metrics_port,
                host=metrics_host,
                web_config=web_config,
            )
            cleanup.callback(metrics.close)
        status = running.status()
        print_event(
            as_json,
            _ready_doc(status, hosts, metrics),
            _ready_text(status, hosts, target, metrics) + _tls_text(options),
        )
        wait_for(stop)


def wait_for(stop: threading.Event) -> None:
    """Block until ``stop`` is set, waking often enough for signal handlers to run."""
    while not stop.wait(0.5):
        pass
