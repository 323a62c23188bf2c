"""``trimtab execute PLAN``: run an approved plan document on its live cluster, safely.

Without ``--approve`` it is a dry run (read-only: what would run, what no longer holds, the
digest, the estimated duration). ``--approve DIGEST`` runs exactly that document
(:mod:`trimtab.execute.runner`), journaled beside it; ``--resume`` continues a journal after
a crash, ``--abort`` cancels what a run left, ``--rollback`` reverses what it did,
``--replan`` plans again. Exit codes: :mod:`trimtab.execute.outcome`.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Annotated, Any

import typer

from trimtab.cli._addresses import free_port
from trimtab.cli._common import (
    ConfigOption,
    JsonFlag,
    app,
    bounded,
    err,
    load_config,
    out,
    print_json,
    print_warnings,
    printable,
    user_errors,
    writable_output,
)
from trimtab.cli._execute_options import (
    AbortOnOption,
    AbortOption,
    ApproveOption,
    BootstrapOption,
    CommandConfigOption,
    ControlFileOption,
    InsecureOption,
    JournalOption,
    MaxInFlightOption,
    MaxLoadOption,
    MaxPerBrokerOption,
    MaxThrottleOption,
    PollOption,
    PulsarAdminOption,
    PulsarCaOption,
    PulsarCertOption,
    PulsarKeyOption,
    PulsarTokenOption,
    RedpandaAdminOption,
    RedpandaAuthOption,
    ReplanOption,
    ResumeOption,
    RollbackOption,
    StallTimeoutOption,
    ThrottleFileOption,
    ThrottleOption,
    TimeoutOption,
    WindowOption,
)
from trimtab.cli._execute_target import TargetFlags, connect
from trimtab.cli._execute_view import ProgressView, print_dry_run, print_outcome
from trimtab.cli._metrics import (
    MetricsHostOption,
    MetricsPortOption,
    WebConfigOption,
    web_config_of,
)
from trimtab.cli.allocate import write_atomically
from trimtab.errors import TrimtabError
from trimtab.execute.abort import abort_run
from trimtab.execute.backoff import GuardLimits
from trimtab.execute.batches import Limits
from trimtab.execute.clock import Clock, SystemClock
from trimtab.execute.control import Control
from trimtab.execute.dryrun import dry_run
from trimtab.execute.journal import (
    Journal,
    JournalLockedError,
    JournalState,
    default_journal,
    read_journal,
)
from trimtab.execute.metrics import ExecuteCollector
from trimtab.execute.observe import observe_all
from trimtab.execute.outcome import EXIT_CHANGED, EXIT_OK
from trimtab.execute.rates import Window, parse_rate, parse_window
from trimtab.execute.recorder import JsonEvents, Listener, Recorder
from trimtab.execute.replan import replan
from trimtab.execute.rollback import reverse_plan, to_reverse
from trimtab.execute.runner import Runner, RunSettings
from trimtab.execute.stats import RunStats
from trimtab.plans.document import PlanDocument, check_digest_form, load_plan, match_digest
from trimtab.plans.target import Target
from trimtab.readers.sniff import PLAN_DOCUMENT, read_text, refusal, seems_to_be
from trimtab.systems.prometheus import WebConfig

__all__ = ["ExecuteOptions", "execute", "make_clock"]


def make_clock() -> Clock:
    """The run's clock (tests replace this to run in simulated time)."""
    return SystemClock()


@dataclass(frozen=True, slots=True)
class ExecuteOptions:
    """The options of one ``trimtab execute``, checked."""

    plan: Path
    approve: str | None = None
    journal: Path | None = None
    resume: bool = False
    abort: bool = False
    rollback: bool = False
    replan: bool = False
    rate: int | None = None
    max_rate: int | None = None
    throttle_file: Path | None = None
    control_file: Path | None = None
    window: Window | None = None
    max_in_flight: int | None = None
    max_per_broker: int | None = None
    guards: GuardLimits = field(default_factory=GuardLimits)
    poll_s: float = 5.0
    config: Path | None = None
    as_json: bool = False
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    web_config: WebConfig | None = None


@app.command()
def execute(
    plan: Annotated[Path, typer.Argument(help="The plan document (rebalance/shed --plan).")],
    approve: ApproveOption = None,
    journal: JournalOption = None,
    resume: ResumeOption = False,
    abort: AbortOption = False,
    rollback: RollbackOption = False,
    replan_: ReplanOption = False,
    throttle: ThrottleOption = None,
    max_throttle: MaxThrottleOption = None,
    throttle_file: ThrottleFileOption = None,
    control_file: ControlFileOption = None,
    window: WindowOption = None,
    max_in_flight: MaxInFlightOption = None,
    max_in_flight_per_broker: MaxPerBrokerOption = None,
    max_load: MaxLoadOption = None,
    stall_timeout: StallTimeoutOption = 900.0,
    abort_on: AbortOnOption = 3,
    poll_interval: PollOption = 5.0,
    config: ConfigOption = None,
    as_json: JsonFlag = False,
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = "127.0.0.1",
    web_config: WebConfigOption = None,
    bootstrap_servers: BootstrapOption = None,
    command_config: CommandConfigOption = None,
    redpanda_admin: RedpandaAdminOption = None,
    redpanda_auth_file: RedpandaAuthOption = None,
    pulsar_admin: PulsarAdminOption = None,
    pulsar_token_file: PulsarTokenOption = None,
    tls_ca: PulsarCaOption = None,
    tls_cert: PulsarCertOption = None,
    tls_key: PulsarKeyOption = None,
    allow_insecure: InsecureOption = False,
    timeout: TimeoutOption = 10.0,
) -> None:
    """Run a plan: a dry run by default, --approve DIGEST to act (exit 3: the cluster changed)."""
    with user_errors():
        _check_numbers(stall_timeout, poll_interval, timeout, max_load)
        rate, max_rate = _rates(throttle, max_throttle)
        options = ExecuteOptions(
            plan=plan,
            approve=approve,
            journal=journal,
            resume=resume,
            abort=abort,
            rollback=rollback,
            replan=replan_,
            rate=rate,
            max_rate=max_rate,
            throttle_file=throttle_file,
            control_file=control_file,
            window=parse_window("--window", window) if window else None,
            max_in_flight=max_in_flight,
            max_per_broker=max_in_flight_per_broker,
            guards=GuardLimits(max_load, stall_timeout, abort_on),
            poll_s=poll_interval,
            config=config,
            as_json=as_json,
            metrics_port=metrics_port,
            metrics_host=metrics_host,
            web_config=web_config_of(web_config, metrics_port=metrics_port),
        )
        flags = TargetFlags(bootstrap_servers, command_config, redpanda_admin, redpanda_auth_file)
        flags = replace(
            flags,
            pulsar_admin=pulsar_admin,
            pulsar_token_file=pulsar_token_file,
            tls_ca=tls_ca,
            tls_cert=tls_cert,
            tls_key=tls_key,
            allow_insecure=allow_insecure,
            max_load=max_load,
            timeout_s=timeout,
            config=config,
        )
        code = run_execute(options, flags)
    raise typer.Exit(code)


def _check_numbers(stall_s: float, poll_s: float, timeout_s: float, max_load: float | None) -> None:
    bounded("--stall-timeout", stall_s, 1, 7 * 86400, "seconds")
    bounded("--poll-interval", poll_s, 0.001, 3600, "seconds")
    bounded("--timeout", timeout_s, 0.1, 3600, "seconds")
    if max_load is not None:
        bounded("--max-load", max_load, 0, 1e9)


def _rates(throttle: str | None, max_throttle: str | None) -> tuple[int | None, int | None]:
    rate = parse_rate("--throttle", throttle) if throttle else None
    max_rate = parse_rate("--max-throttle", max_throttle) if max_throttle else None
    if rate and max_rate and rate > max_rate:
        raise TrimtabError(f"--throttle {throttle} is above --max-throttle {max_throttle}")
    return rate, max_rate


def _check_modes(o: ExecuteOptions) -> None:
    if o.abort and (o.approve or o.resume or o.replan):
        raise TrimtabError("--abort stops a run: give it without --approve, --resume or --replan")
    if o.replan and (o.approve or o.resume or o.rollback):
        raise TrimtabError("--replan makes a new plan: give it alone (approve the new one after)")
    if o.metrics_port is not None:
        free_port("--metrics-port", o.metrics_host, o.metrics_port)


_MAKE_PLAN = "trimtab rebalance ... --plan FILE, or trimtab shed ... --plan FILE"


def _load_plan_file(path: Path) -> PlanDocument:
    """The plan at ``path``; a file of another kind (empty, binary, UTF-16, another tool's
    output, a directory) is refused saying what it seems to be and how to make a plan."""
    text = read_text(path, PLAN_DOCUMENT, _MAKE_PLAN)
    guess = seems_to_be(text)
    if guess is not None and guess != PLAN_DOCUMENT and not guess.startswith("a JSON object"):
        raise TrimtabError(refusal(path, PLAN_DOCUMENT, _MAKE_PLAN, text))
    return load_plan(path)


def _refuse_redpanda_log_dirs(plan: PlanDocument) -> None:
    """A Redpanda plan pinning ``log_dirs`` is refused before connecting: Redpanda keeps one
    data directory per node (no JBOD), so there is no dir to move a replica to."""
    pinned = [
        a.item for a in plan.actions if any(d != "any" for d in a.target.get("log_dirs") or ())
    ]
    if pinned and plan.system == "redpanda":
        raise TrimtabError(
            f"the plan moves replicas between log dirs in {len(pinned)} partition(s) (first "
            f"{pinned[0]}), but Redpanda has one data directory per node: plan it as a Kafka "
            "cluster's, or without --log-dirs/--cordon"
        )


def run_execute(o: ExecuteOptions, flags: TargetFlags) -> int:
    """The command once its options are checked; returns the exit code."""
    _check_modes(o)
    plan = _load_plan_file(o.plan)
    plan_path = o.plan
    if o.approve is not None:
        check_digest_form(o.approve)
        if not o.rollback:  # a rollback is approved by its own plan's digest, made later
            match_digest(plan, o.approve)
    _refuse_redpanda_log_dirs(plan)
    target = connect(plan, flags, where=str(o.plan))
    try:
        journal = o.journal or default_journal(plan_path)
        if o.rollback:
            plan, plan_path = _rollback_plan(plan, plan_path, journal, target, o)
            journal = default_journal(plan_path)
        if o.replan:
            return _replan(plan, plan_path, target, o)
        if o.abort:
            return _abort(plan, plan_path, journal, target, o)
        if o.approve is None and not o.resume:
            return _dry(plan, plan_path, target, o)
        return _run(plan, plan_path, journal, target, o)
    finally:
        target.close()


def _limits(plan: PlanDocument, o: ExecuteOptions) -> Limits:
    moves = o.max_in_flight or plan.settings.get("concurrent_moves")
    if not moves:
        moves = load_config(o.config).allocation.concurrent_moves
    return Limits(int(moves), o.max_per_broker)


def _dry(plan: PlanDocument, plan_path: Path, target: Target, o: ExecuteOptions) -> int:
    dry = dry_run(plan, target, _limits(plan, o), o.rate)
    if o.as_json:
        print_json(dry.as_json())
    else:
        print_dry_run(dry, str(plan_path))
    return EXIT_CHANGED if dry.changed() else EXIT_OK


def _replan(plan: PlanDocument, plan_path: Path, target: Target, o: ExecuteOptions) -> int:
    new_path = plan_path.with_name(f"{plan_path.stem}.replan.json")
    writable_output("--replan", new_path, directory=False, parents=False)
    new = replan(plan, target, new_path)
    if o.as_json:
        print_json({"plan": str(new_path), "digest": new.digest, "replaces": plan.digest})
    else:
        out.print(f"new plan {printable(new_path)}: {len(new.actions)} actions")
        out.print(f"digest: {new.digest}")
        out.print(f"review it: trimtab execute {printable(new_path)}  (then --approve its digest)")
    return EXIT_OK


def _rollback_plan(
    plan: PlanDocument, plan_path: Path, journal: Path, target: Target, o: ExecuteOptions
) -> tuple[PlanDocument, Path]:
    """The rollback document of the journal: the one written before if it is still that
    journal's, else built now and written to ``PLAN.rollback.json``."""
    state = read_journal(journal, digest=plan.digest)
    print_warnings(state.warnings)
    in_flight = state.with_state("started")
    if in_flight:
        raise TrimtabError(
            f"journal {journal} shows {len(in_flight)} action(s) still started: finish them "
            "with --resume or cancel them with --abort, then roll back"
        )
    path = plan_path.with_name(f"{plan_path.stem}.rollback.json")
    if path.exists():
        old = load_plan(path)
        if old.rollback_of == plan.digest and old.source.get("journal_at") == state.last_at:
            return old, path
    forward, warnings = to_reverse(plan, state)
    print_warnings(warnings)
    open_ended = [a for a in forward if None in a.target.values()]
    live = observe_all(target, open_ended) if open_ended else {}
    rollback = reverse_plan(plan, state, live, journal=str(journal))
    writable_output("--rollback", path, directory=False, parents=False)
    write_atomically(path, rollback.dumps())
    err.print(f"rollback plan written to {printable(path)}", highlight=False)
    return rollback, path


def _abort(
    plan: PlanDocument, plan_path: Path, journal: Path, target: Target, o: ExecuteOptions
) -> int:
    state = read_journal(journal, digest=plan.digest)
    print_warnings(state.warnings)
    if state.runs == 0:
        raise TrimtabError(f"no journal {journal}: no run of this plan to abort")
    listeners: list[Listener] = [JsonEvents(sys.stdout)] if o.as_json else []
    try:
        opened = Journal(journal)
    except JournalLockedError as exc:
        return _ask_running_to_abort(state, exc, o)
    with opened:
        header = {"plan": str(plan_path), "approved": state.approved, "mode": "abort"}
        warnings = abort_run(plan, target, state, Recorder(opened, listeners), header)
    print_warnings(warnings)
    if o.as_json:
        return EXIT_OK
    out.print(f"aborted: moves in flight cancelled, throttles removed ({printable(journal)})")
    return EXIT_OK


def _ask_running_to_abort(
    state: JournalState, locked: JournalLockedError, o: ExecuteOptions
) -> int:
    """``--abort`` while a run holds the journal: ask it through its control file."""
    if state.control is None:
        raise locked
    try:
        Path(state.control).write_text("abort\n", encoding="utf-8")
    except OSError as exc:
        raise TrimtabError(f"{locked}; its control file {state.control}: {exc.strerror}") from None
    if o.as_json:
        print_json({"asked": "abort", "pid": locked.pid, "control": state.control})
    else:
        out.print(
            f"asked the running trimtab execute (pid {printable(locked.pid)}) to abort through "
            f"its control file {printable(state.control)}: it cancels its moves at its next poll"
        )
    return EXIT_OK


def _approval(plan: PlanDocument, state: JournalState, journal: Path, o: ExecuteOptions) -> str:
    if o.approve is not None:
        match_digest(plan, o.approve)
    if o.resume:
        if state.runs == 0:
            raise TrimtabError(f"no journal {journal} to resume: start the run with --approve")
        if o.approve is None and state.approved != plan.digest:
            raise TrimtabError(f"journal {journal} holds no approval of this plan: give --approve")
    elif state.runs:
        raise TrimtabError(
            f"journal {journal} already records a run of this plan: continue it with --resume, "
            "or give a new --journal"
        )
    return plan.digest


def _run(
    plan: PlanDocument, plan_path: Path, journal: Path, target: Target, o: ExecuteOptions
) -> int:
    state = read_journal(journal, digest=plan.digest)
    print_warnings(state.warnings)
    approved = _approval(plan, state, journal, o)
    writable_output("--journal", journal, directory=False, parents=False)
    control = Control(
        control_file=o.control_file or journal.with_name(f"{plan_path.stem}.control"),
        throttle_file=o.throttle_file,
        max_rate=o.max_rate,
    )
    clock = make_clock()
    stats = _stats(plan, state, clock)
    settings = RunSettings(_limits(plan, o), o.rate, o.window, o.guards, o.poll_s)
    header = {
        "plan": str(plan_path),
        "approved": approved,
        "system": plan.system,
        "mode": "resume" if o.resume else "run",
    }
    with ExitStack() as stack:
        listeners: list[Listener] = [stats]
        if o.as_json:
            listeners.append(JsonEvents(sys.stdout))
        else:
            listeners.append(stack.enter_context(ProgressView(stats, quiet=False)))
            err.print(
                f"journal {printable(journal)}; control file {printable(control.control_file)} "
                "(write a rate or 'abort' into it)",
                highlight=False,
            )
        if o.metrics_port is not None:
            _serve_metrics(stack, stats, o)
        opened = stack.enter_context(Journal(journal))
        control.start(o.rate)
        runner = Runner(
            plan, target, Recorder(opened, listeners), settings, control=control, clock=clock
        )
        with _signals(control, clock):
            outcome = runner.run(state, header)
    if not o.as_json:
        print_outcome(outcome, stats, runner.warnings, bytes_moved=plan.system != "pulsar")
    else:
        print_warnings(runner.warnings)
    return outcome.exit


def _stats(plan: PlanDocument, state: JournalState, clock: Clock) -> RunStats:
    stats = RunStats(len(plan.actions), sum(a.bytes for a in plan.actions), clock.monotonic)
    for aid in state.with_state("done"):
        cause = state.causes.get(aid, "")
        moved = plan.action(aid).bytes if cause != "already-done" else 0
        stats({"record": "action", "id": aid, "state": "done", "cause": cause, "bytes": moved})
    return stats


def _serve_metrics(stack: ExitStack, stats: RunStats, o: ExecuteOptions) -> None:
    from trimtab.systems.prometheus import MetricsServer, registry_of

    assert o.metrics_port is not None
    server = MetricsServer(
        registry_of(ExecuteCollector(stats)),
        port=o.metrics_port,
        host=o.metrics_host,
        web_config=o.web_config,
    )
    stack.callback(server.close)
    err.print(f"metrics on {server.url}", highlight=False)


@contextmanager
def _signals(control: Control, clock: Clock) -> Iterator[None]:
    """SIGINT/SIGTERM stop the run after the current poll; SIGHUP re-reads the throttle."""

    def stop(signum: int, frame: FrameType | None) -> None:
        control.interrupt(signal.Signals(signum).name)
        clock.wake()

    def hangup(signum: int, frame: FrameType | None) -> None:
        control.hangup()
        clock.wake()

    wanted: dict[signal.Signals, Any] = {
        signal.SIGINT: stop,
        signal.SIGTERM: stop,
        signal.SIGHUP: hangup,
    }
    previous: dict[signal.Signals, Any] = {}
    try:
        for sig, handler in wanted.items():
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: no signal handling (an embedding caller's choice)
        pass
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
