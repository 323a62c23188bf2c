"""``trimtab bookieinfo`` (one look, like ``bookkeeper shell bookieinfo``) and ``trimtab watch``
(membership + reader running, weights exported to Prometheus)."""

from __future__ import annotations

import random
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import typer

from trimtab._format import human_bytes, plural
from trimtab.cli._addresses import free_port
from trimtab.cli._common import (
    ConfigOption,
    JsonFlag,
    app,
    bounded,
    err,
    figures_table,
    load_config,
    out,
    print_json,
    printable,
    progress_bar,
    user_errors,
)
from trimtab.cli._metrics import WebConfigOption, web_config_of
from trimtab.cli._tls import TlsCaOption, TlsCertOption, TlsKeyOption
from trimtab.cli.agent import print_event, until_signalled, wait_for
from trimtab.cluster import NodeId
from trimtab.config import BookieInfoConfig, Config
from trimtab.diskinfo import BookieInfo
from trimtab.errors import MembershipError
from trimtab.systems.bookkeeper.bookieinfo.client import SurveyRow, survey
from trimtab.systems.bookkeeper.bookieinfo.feed import PlacementWeightsCollector, PolicyFeed
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError
from trimtab.systems.bookkeeper.bookieinfo.metrics import ReaderCollector
from trimtab.systems.bookkeeper.bookieinfo.reader import BookieInfoReader
from trimtab.systems.bookkeeper.bookieinfo.routing import RoutingBookieInfoClient
from trimtab.systems.bookkeeper.bookieinfo.tls_setup import client_tls
from trimtab.systems.bookkeeper.placement_setup import make_policy
from trimtab.systems.bookkeeper.registry import (
    Membership,
    StaticRegistry,
    WireProtocol,
    ZooKeeperWatcher,
    read_membership,
    read_registry,
)
from trimtab.systems.prometheus import MetricsServer, WebConfig, registry_of
from trimtab.systems.zookeeper import zk_security, zk_servers, zk_target

__all__ = ["bookieinfo", "survey_json", "watch"]

ZkOption = Annotated[
    str | None, typer.Option("--zk", help="ZooKeeper HOST:PORT[,HOST:PORT] (zkServers).")
]
ZkRootOption = Annotated[
    str | None,
    typer.Option(
        "--ledgers-root", "--zk-root", help="Registry root (zkLedgersRootPath, /ledgers)."
    ),
]
BookiesOption = Annotated[
    str | None,
    typer.Option(
        "--bookies",
        help="Bookies to ask directly, HOST:PORT[,HOST:PORT] (their bookie port, v3 protocol).",
    ),
]
RegistryOption = Annotated[
    Path | None,
    typer.Option("--registry", help="Node registry file (id, state, address) instead of ZK."),
]
TimeoutOption = Annotated[
    float | None,
    typer.Option("--timeout", help="Seconds to wait for each node (getBookieInfoTimeoutSecs)."),
]


def _membership(
    full: Config,
    zk: str | None,
    zk_root: str | None,
    registry: Path | None,
    bookies: str | None = None,
) -> Membership:
    sources = (("--zk", zk), ("--registry", registry), ("--bookies", bookies))
    given = [name for name, value in sources if value is not None]
    if len(given) > 1:
        both = " and ".join(given)
        raise MembershipError(f"give one of --zk, --registry or --bookies, not {both}")
    if bookies is not None:
        return _bookie_list(bookies)
    if registry is not None:
        file = read_registry(registry)
        for row in file.rejected:
            shown = printable(row)
            err.print(f"[yellow]warning:[/] registry row rejected: {shown}", highlight=False)
        return file.membership
    cfg = full.bookie_info
    _require_zk(cfg, zk)
    target = zk_target(cfg, hosts=zk, root=zk_root, security=zk_security(full))
    return read_membership(target, timeout=cfg.timeout_seconds)


def _bookie_list(text: str) -> Membership:
    """``--bookies a:3181,b:3181``: writable bookies asked at those ports in the v3 protocol."""
    nodes: list[NodeId] = []
    for item in (part.strip() for part in text.split(",")):
        try:
            node = NodeId(item)
        except ValueError as exc:
            raise MembershipError(f"--bookies: {exc}") from None
        if node.port is None:
            raise MembershipError(f"--bookies: {item!r} has no port: give HOST:PORT, e.g. bk1:3181")
        nodes.append(node)
    return Membership.of(
        writable=nodes, addresses={n: WireProtocol.BOOKIE_RPC.address(n) for n in nodes}
    )


#: The longest wait or period an option may give, in seconds (a day).
_MAX_SECONDS = 86_400.0


def _check_seconds(**options: float | None) -> None:
    """Each time option given (``--timeout``, ``--interval``...) is finite and plausible."""
    for name, value in options.items():
        if value is not None:
            bounded(f"--{name.replace('_', '-')}", value, 0.001, _MAX_SECONDS, "of seconds")


def _require_zk(cfg: BookieInfoConfig, zk: str | None) -> None:
    if zk is None and not (cfg.zk_servers or cfg.metadata_service_uri):
        raise MembershipError(
            "say where the nodes are: --zk HOST:PORT, --bookies HOST:PORT[,...] or --registry FILE"
        )


def survey_json(rows: list[SurveyRow]) -> dict[str, Any]:
    """The ``--json`` document: every node, answered or not, and totals over those answering."""
    bookies = []
    for row in rows:
        info = row.result if isinstance(row.result, BookieInfo) else None
        bookies.append(
            {
                "id": row.node,
                "state": row.state.value,
                "free_bytes": info.free_disk_bytes if info else None,
                "total_bytes": info.total_disk_bytes if info else None,
                "error": str(row.result) if isinstance(row.result, FetchError) else None,
            }
        )
    answered = [r.result for r in rows if isinstance(r.result, BookieInfo)]
    return {
        "bookies": bookies,
        "total_free_bytes": sum(i.free_disk_bytes for i in answered),
        "total_bytes": sum(i.total_disk_bytes for i in answered),
    }


@app.command()
def bookieinfo(
    zk: ZkOption = None,
    zk_root: ZkRootOption = None,
    bookies: BookiesOption = None,
    registry: RegistryOption = None,
    timeout: TimeoutOption = None,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
    tls_ca: TlsCaOption = None,
    tls_cert: TlsCertOption = None,
    tls_key: TlsKeyOption = None,
) -> None:
    """Ask every writable and read-only node for its disk space and print it with the totals.

    Nodes come from BookKeeper's registry in ZooKeeper (--zk), a list of bookies (--bookies)
    or a registry file (--registry). Each is asked in the protocol it registered: BookKeeper's
    v3 GET_BOOKIE_INFO at a bookie's port, gRPC for a trimtab agent. Sizes in base-1000 units
    (as `bookkeeper shell bookieinfo`); nodes that do not answer are listed with the reason.
    Totals count the nodes that answered. TLS goes to the nodes registered with it, or to every
    node when --tls-ca/--tls-cert/--tls-key (or the config's tls* keys) are given.
    """
    with user_errors(), progress_bar(quiet=as_json) as bar:
        # nodes that do not answer hold the command up to the timeout (5 s by default)
        phase = bar.add_task("reading the membership", total=None)
        _check_seconds(timeout=timeout)
        full = load_config(config)
        cfg = full.bookie_info
        tls = client_tls(full.tls, ca=tls_ca, cert=tls_cert, key=tls_key)
        membership = _membership(full, zk, zk_root, registry, bookies)
        wait = timeout or cfg.timeout_seconds
        asked = len(membership.writable | membership.readonly)
        bar.update(phase, description=f"asking {plural(asked, 'node')} (timeout {wait:g} s)")
        client = RoutingBookieInfoClient(tls=tls)
        try:
            rows = survey(membership, client, timeout=wait)
        finally:
            client.close()
    doc = survey_json(rows)
    if as_json:
        print_json(doc)
        return
    table = figures_table(
        ("node", "state", "free", "total", "used", "error"),
        text=("node", "state", "error"),
        title="Free disk space info",
        title_justify="left",
    )
    for row in rows:
        if isinstance(row.result, BookieInfo):
            info = row.result
            table.add_row(
                row.node,
                row.state.value,
                human_bytes(info.free_disk_bytes),
                human_bytes(info.total_disk_bytes),
                f"{info.used_fraction:.0%}",
                "",
            )
        else:
            table.add_row(row.node, row.state.value, "-", "-", "-", f"[red]{row.result}[/]")
    out.print(table)
    answered = sum(isinstance(r.result, BookieInfo) for r in rows)
    out.print(
        f"Total free disk space in the cluster:\t{human_bytes(doc['total_free_bytes'])}"
        f" ({doc['total_free_bytes']} bytes)\n"
        f"Total disk capacity in the cluster:\t{human_bytes(doc['total_bytes'])}"
        f" ({doc['total_bytes']} bytes)\n"
        f"{answered} of {len(rows)} nodes answered",
        highlight=False,
    )


@app.command()
def watch(
    metrics_port: Annotated[int, typer.Option("--metrics-port", help="Serve /metrics here.")],
    zk: ZkOption = None,
    zk_root: ZkRootOption = None,
    registry: RegistryOption = None,
    metrics_host: Annotated[
        str, typer.Option("--metrics-host", help="Address of the metrics endpoint.")
    ] = "127.0.0.1",
    web_config: WebConfigOption = None,
    interval: Annotated[
        float | None, typer.Option("--interval", help="Full scan period, s (default: config).")
    ] = None,
    retry_interval: Annotated[
        float | None, typer.Option("--retry-interval", help="Retry period of failed nodes, s.")
    ] = None,
    timeout: TimeoutOption = None,
    config: ConfigOption = None,
    tls_ca: TlsCaOption = None,
    tls_cert: TlsCertOption = None,
    tls_key: TlsKeyOption = None,
    seed: Annotated[int, typer.Option(help="Seed of the policy's random choices.")] = 0,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print each event (watching, stopped) as one JSON line."),
    ] = False,
) -> None:
    """Follow membership, poll every writable node, feed a placement policy, export its weights.

    The policy is the one the config names (ensemblePlacementPolicy, disk weights with
    diskWeightBasedPlacementEnabled); its capped weights and single-pick probabilities
    are exported as trimtab_placement_weight and trimtab_placement_pick_probability.
    """
    with user_errors():
        _check_seconds(timeout=timeout, interval=interval, retry_interval=retry_interval)
        web = web_config_of(web_config, metrics_port=metrics_port)
        free_port("--metrics-port", metrics_host, metrics_port)
        full = load_config(config)
        cfg = full.bookie_info
        policy = make_policy(full, rng=random.Random(seed), zk_servers=zk_servers(full))
        feed = PolicyFeed(policy, full.placement)
        tls = client_tls(full.tls, ca=tls_ca, cert=tls_cert, key=tls_key)
        reader = BookieInfoReader(
            feed,
            RoutingBookieInfoClient(tls=tls),
            interval_seconds=interval or cfg.interval_seconds,
            retry_interval_seconds=retry_interval or cfg.retry_interval_seconds,
            timeout_seconds=timeout or cfg.timeout_seconds,
        )
        source = _membership_source(full, zk, zk_root, registry, reader.on_membership)
        _serve(
            reader,
            source,
            feed,
            metrics_port=metrics_port,
            metrics_host=metrics_host,
            web_config=web,
            policy=full.placement.ensemble_placement_policy,
            as_json=as_json,
        )
    print_event(as_json, {"event": "stopped"}, "watch stopped")


def _membership_source(
    full: Config,
    zk: str | None,
    zk_root: str | None,
    registry: Path | None,
    on_change: Callable[[Membership], None],
) -> StaticRegistry | ZooKeeperWatcher:
    """What tells the reader who is a member: the registry file, else ZooKeeper."""
    if registry is not None and zk is None:
        return StaticRegistry(registry, on_change)
    cfg = full.bookie_info
    _require_zk(cfg, zk)
    return ZooKeeperWatcher(
        zk_target(cfg, hosts=zk, root=zk_root, security=zk_security(full)),
        on_change,
        session_timeout=cfg.zk_timeout_ms / 1000,
    )


def _serve(
    reader: BookieInfoReader,
    source: StaticRegistry | ZooKeeperWatcher,
    feed: PolicyFeed,
    *,
    metrics_port: int,
    metrics_host: str,
    web_config: WebConfig | None,
    policy: str,
    as_json: bool,
) -> None:
    """Poll and export the weights until SIGTERM or SIGINT, saying where the metrics are."""
    with until_signalled() as stop, ExitStack() as cleanup:  # closes in reverse order
        reader.start()
        cleanup.callback(reader.close)
        cleanup.callback(source.stop)
        source.start()
        collectors = (ReaderCollector(reader.snapshot), PlacementWeightsCollector(feed))
        metrics = MetricsServer(
            registry_of(*collectors), port=metrics_port, host=metrics_host, web_config=web_config
        )
        cleanup.callback(metrics.close)
        url = metrics.url
        print_event(
            as_json,
            {
                "event": "watching",
                "metrics_url": url,
                "metrics_port": metrics.port,
                "policy": policy,
                "membership": "registry" if isinstance(source, StaticRegistry) else "zk",
            },
            f"watching; metrics on {url}",
        )
        wait_for(stop)
