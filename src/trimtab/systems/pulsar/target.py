"""``trimtab execute``'s Pulsar target: bundle unloads and splits through the admin REST API.

Goals
    Run exactly a plan's ``unload``/``split`` actions on a live cluster, one at a time, each
    only while its precondition holds (the bundle's owner), and never faster than upstream's
    own shedder would: after unloading a bundle from a broker, wait ``cooldown_s`` (the plan's
    ``settings.broker_cooldown_s``, upstream's ``loadBalanceSheddingDelayInSeconds``) before
    the next unload from that broker.

Algorithm
    * observe: the active brokers (``GET /admin/v2/brokers/{cluster}``), the bundles each owns
      (``.../{broker}/ownedNamespaces``), and for splits the namespace's bundle ranges; each
      action checked by :func:`~trimtab.systems.pulsar.checks.check_action`.
    * submit: for each action in order: the cooldown of its source broker, the PUT (redirects
      followed by :mod:`~trimtab.systems.pulsar.rest`), then wait until the bundle is owned by
      its destination (or, for a ``null`` destination, by any other broker) before the next.
      A dropped connection during the PUT is settled by reading the owner again: still on the
      source, the PUT is sent once more; unowned or landed, it went through. A bundle that does
      not land within ``land_timeout_s``, or lands elsewhere, fails, and the actions after it
      in the same call are not sent (they fail as "not sent").
    * poll: the same checks: DONE is done, CHANGED is failed with its reason.
    * cancel: nothing to cancel; an unload is one call and lands in seconds (documented).
    * throttles: Pulsar has no move throttle; :meth:`PulsarTarget.set_throttle` returns an
      empty :class:`~trimtab.plans.target.ThrottleSet` and ``clear_throttle`` does nothing.
    * guards: each involved broker's load from its own load report (``LocalBrokerData
      .getMaxResourceUsage``: the largest usage share of cpu, memory, direct memory and
      bandwidth in/out), and the involved brokers that are no longer active. The executor
      compares the loads with ``--max-load`` and backs off.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from trimtab.errors import InputError, TargetError
from trimtab.plans.document import Action
from trimtab.plans.target import Check, Guards, Observation, Progress, ThrottleSet
from trimtab.systems.pulsar.admin_api import PulsarAdmin
from trimtab.systems.pulsar.checks import check_action
from trimtab.systems.pulsar.credentials import resolve_auth
from trimtab.systems.pulsar.rest import AdminRest, ConnectionDroppedError

__all__ = [
    "PulsarTarget",
    "PulsarTargetOptions",
    "admin_client",
    "check_admin_url",
    "connect_pulsar",
]


@dataclass(frozen=True)
class PulsarTargetOptions:
    """What ``trimtab execute`` needs to reach a Pulsar cluster (``--pulsar-admin`` ...).
    ``broker_conf`` (a broker.conf, ``--config``) may supply the token and TLS files (see
    :mod:`~trimtab.systems.pulsar.credentials`); ``max_load`` is the executor's back-off limit,
    which this target does not apply itself."""

    admin_url: str
    cluster: str
    token_file: Path | None = None
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    allow_insecure: bool = False
    cooldown_s: float = 0.0
    max_load: float | None = None
    timeout_s: float = 10.0
    broker_conf: Path | None = None


def check_admin_url(url: str) -> str:
    """``url`` without a trailing slash, or an :class:`InputError` saying what is wrong."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(
            f"--pulsar-admin {url!r} is not an http:// or https:// URL of a broker's web "
            "service (e.g. https://broker-1:8443)"
        )
    if parts.username or parts.password:
        raise InputError(
            "--pulsar-admin must not carry credentials: give the token with --pulsar-token-file"
        )
    try:
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError:
        raise InputError(f"--pulsar-admin {parts.netloc!r} has no valid port") from None
    if parts.query or parts.fragment or parts.path.strip("/"):
        raise InputError(f"--pulsar-admin {url!r}: give the broker's base URL, without a path")
    return f"{parts.scheme}://{parts.netloc}"


def connect_pulsar(options: PulsarTargetOptions) -> PulsarTarget:
    """Check the address and credentials, then reach the cluster: its broker list is read
    once, so a wrong URL, CA or token fails here with one line."""
    if not options.cluster.strip():
        raise InputError("the Pulsar cluster name is empty: give --cluster NAME")
    admin, warnings = admin_client(options)
    target = PulsarTarget(admin, options, warnings=warnings)
    try:
        target.admin.brokers()
    except TargetError:
        target.close()
        raise
    return target


def admin_client(options: PulsarTargetOptions) -> tuple[PulsarAdmin, list[str]]:
    """The admin calls of ``options``' cluster, with the token and TLS files resolved (a token
    over cleartext refused unless ``allow_insecure``), and the warnings to print; nothing is
    called yet (``trimtab execute`` and ``trimtab inventory --pulsar-admin`` share it)."""
    url = check_admin_url(options.admin_url)
    auth = resolve_auth(
        token_file=options.token_file,
        broker_conf=options.broker_conf,
        tls_ca=options.tls_ca,
        tls_cert=options.tls_cert,
        tls_key=options.tls_key,
    )
    warnings = list(auth.warnings)
    if url.startswith("http://") and auth.token is not None:
        if not options.allow_insecure:
            raise TargetError(
                f"refusing to send the Pulsar admin token from {auth.source} over cleartext "
                f"{url}: use https:// (with --tls-ca), or give --allow-insecure"
            )
        warnings.append(f"sending the Pulsar admin token in cleartext to {url} (--allow-insecure)")
    if url.startswith("http://") and (auth.tls_ca or auth.tls_cert):
        warnings.append(f"the TLS files are not used with the cleartext {url}: use https://")
    rest = AdminRest(url, auth, timeout_s=options.timeout_s)
    return PulsarAdmin(rest, options.cluster), warnings


class PulsarTarget:
    """The :class:`~trimtab.plans.target.Target` of a Pulsar cluster (module docstring)."""

    system = "pulsar"

    def __init__(
        self,
        admin: PulsarAdmin,
        options: PulsarTargetOptions,
        *,
        warnings: Sequence[str] = (),
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        land_timeout_s: float = 60.0,
        poll_s: float = 0.05,
    ) -> None:
        self.admin = admin
        self.options = options
        self.warnings = tuple(warnings)  # for the CLI to print as warning: lines
        self._sleep, self._clock = sleep, clock
        self._land_timeout_s, self._poll_s = land_timeout_s, poll_s
        self._last_unload: dict[str, float] = {}  # broker -> clock() of its last unload
        self._in_flight: set[str] = set()
        self._failed: dict[str, str] = {}
        self._touched: dict[str, Action] = {}

    def describe(self) -> str:
        return f"Pulsar admin {self.admin.rest.admin_url} (cluster {self.admin.cluster})"

    # -- reading -----------------------------------------------------------------------------

    def observe(self, actions: Sequence[Action]) -> Mapping[str, Observation]:
        brokers = set(self.admin.brokers())
        owners = self.admin.owners(sorted(brokers))
        namespaces = {a.item.rpartition("/")[0] for a in actions if a.kind == "split"}
        ranges = {ns: self.admin.ranges(ns) for ns in sorted(namespaces)}
        return {
            a.id: check_action(
                a, owners=owners, brokers=brokers, ranges=ranges, in_flight=a.id in self._in_flight
            )
            for a in actions
        }

    def poll(self, actions: Sequence[Action]) -> Mapping[str, Progress]:
        seen = self.observe([a for a in actions if a.id not in self._failed])
        progress = {
            a.id: Progress(a.id, failed=self._failed[a.id]) for a in actions if a.id in self._failed
        }
        for action_id, obs in seen.items():
            if obs.check is Check.DONE:
                progress[action_id] = Progress(action_id, done=True)
            elif obs.check is Check.CHANGED:
                progress[action_id] = Progress(action_id, failed=obs.why)
            else:
                progress[action_id] = Progress(action_id)
        return progress

    def guards(self, moving: Sequence[Action]) -> Guards:
        brokers = set(self.admin.brokers())
        involved = {n for a in (*moving, *self._touched.values()) for n in a.nodes} or brokers
        missing = set(involved - brokers)
        loads: dict[str, float] = {}
        for broker in sorted(involved & brokers):
            try:
                loads[broker] = self.admin.load(broker)
            except TargetError:
                missing.add(broker)  # it left between the list and its report
        return Guards(loads=loads, missing_nodes=tuple(sorted(missing)))

    # -- acting ------------------------------------------------------------------------------

    def submit(self, actions: Sequence[Action]) -> None:
        stopped = ""
        for action in actions:
            if stopped:
                self._failed[action.id] = f"not sent: {stopped}"
                continue
            self._touched[action.id] = action
            self._cool_down(action)
            self._send(action)
            stopped = self._await_landing(action)

    def _cool_down(self, action: Action) -> None:
        """Upstream's loadBalanceSheddingDelayInSeconds between unloads of one broker."""
        source = action.precondition.get("owner")
        if action.kind != "unload" or source is None:
            return
        last = self._last_unload.get(str(source))
        if last is not None:
            wait = last + self.options.cooldown_s - self._clock()
            if wait > 0:
                self._sleep(wait)

    def _send(self, action: Action) -> None:
        self._in_flight.add(action.id)
        try:
            self._put(action)
        except ConnectionDroppedError:
            again = self.observe([action])[action.id]
            if again.check is not Check.READY:
                return  # it went through (unowned or landed), or the landing wait says why
            self._put(action)
        finally:
            if action.kind == "unload":
                self._last_unload[str(action.precondition.get("owner"))] = self._clock()

    def _put(self, action: Action) -> None:
        if action.kind == "unload":
            self.admin.unload(action.item, action.target.get("owner"))
        elif action.kind == "split":
            self.admin.split(
                action.item,
                unload=bool(action.target.get("unload", False)),
                algorithm=action.target.get("split_algorithm"),
            )
        else:
            raise TargetError(f"{self.describe()}: cannot run a {action.kind!r} action")

    def _await_landing(self, action: Action) -> str:
        """Wait until ``action`` is DONE; the reason to stop sending if it is not."""
        deadline = self._clock() + self._land_timeout_s
        delay = self._poll_s
        while True:
            obs = self.observe([action])[action.id]
            if obs.check is Check.DONE:
                self._in_flight.discard(action.id)
                return ""
            if obs.check is Check.CHANGED:
                self._in_flight.discard(action.id)
                self._failed[action.id] = obs.why
                return f"{action.item} {obs.why}"
            left = deadline - self._clock()
            if left <= 0:
                where = action.target.get("owner") or "another broker"
                reason = f"{action.item} did not land on {where} within {self._land_timeout_s:g} s"
                self._failed[action.id] = reason
                return reason
            self._sleep(min(delay, left))
            delay = min(delay * 2, 1.0)

    def cancel(self, actions: Sequence[Action]) -> None:
        """Nothing to cancel: an unload is one call that lands in seconds, and a split is done
        when its call returns. The executor's abort stops sending new ones."""

    def set_throttle(self, rate: int, actions: Sequence[Action]) -> ThrottleSet:
        """Pulsar moves no data on an unload (the bundle's topics reopen elsewhere over the
        same BookKeeper ledgers): there is nothing to throttle."""
        return ThrottleSet(rate)

    def clear_throttle(self, throttle: ThrottleSet) -> None:
        """Nothing was set (see :meth:`set_throttle`)."""

    def close(self) -> None:
        self.admin.rest.close()
