"""Sweep throughput: shedding simulations per second on Spark with one executor core vs two.

For each master (default ``local[1]``, then ``local[2]``) a session is started, a small sweep
warms it up (JVM, Python workers), and the shedding sweep is timed with ``run_sweep``, end to
end (tasks, simulations, runs, summary, page) and its simulate phase alone; then the session is
stopped before the next one starts. The same simulations also run in this process without
Spark, one after the other, for the per-task overhead. Prints simulations per second for each,
the speed-up of the last master over the first, and checks that every master gave the same
summary.

Default work: 700 and 1,000 brokers × the TransferShedder × 16 trials = 32 simulations of
PIP-220's static experiment, about 0.15-0.3 s each on a quiet core, so that the simulations and
not Spark's per-task cost (tens of milliseconds) are what is measured. Usage:
``python -m bench.sweep [--brokers 700,1000] [--strategies transfer] [--trials 16]
[--masters local[1],local[2]]``; a master may repeat (``local[1],local[2],local[1],local[2]``)
to even out a machine whose load changes, and the speed-up then compares the medians. Timings
depend on the machine and its load; nothing is asserted on them.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from trimtab.config import Config
from trimtab.pipeline.session import spark_session
from trimtab.pipeline.sweeps import run_sweep
from trimtab.sim.convergence import experiment_config
from trimtab.sim.sweep import SheddingSweep


def direct(sweep: SheddingSweep) -> float:
    """Simulations per second in this process, without Spark."""
    began = time.perf_counter()
    tasks = sweep.tasks()
    for task in tasks:
        sweep.run(task)
    return len(tasks) / (time.perf_counter() - began)


def on_spark(master: str, sweep: SheddingSweep, scratch: Path) -> tuple[float, list[Any]]:
    """Simulations per second of ``sweep`` on a fresh session of ``master``, and its summary."""
    name = "".join(c if c.isalnum() else "-" for c in master)
    spark = spark_session(master=master, conf={"spark.ui.enabled": "false"})
    try:
        warm = SheddingSweep(
            sizes=(50,), strategies=sweep.strategies, trials=4, config=sweep.config
        )
        run_sweep(spark, warm, str(scratch / f"warm-{name}"))
        began = time.perf_counter()
        result = run_sweep(spark, sweep, str(scratch / f"out-{name}"))
        seconds = time.perf_counter() - began
    finally:
        spark.stop()
    print(
        f"   {master:<10} {result.tasks:>6} {seconds:>8.2f} s {result.tasks / seconds:>10.2f}/s"
        f"   (simulate phase {result.timings_s['simulate']:.2f} s: "
        f"{result.simulations_per_s:.2f}/s)",
        flush=True,
    )
    return result.tasks / seconds, result.summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", default="700,1000")
    parser.add_argument("--strategies", default="transfer")
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--masters", default="local[1],local[2]")
    args = parser.parse_args()
    sweep = SheddingSweep(
        sizes=tuple(int(n) for n in args.brokers.split(",")),
        strategies=tuple(args.strategies.split(",")),
        trials=args.trials,
        config=experiment_config(Config().shedding, target_std=0.15),
    )
    count = len(sweep.tasks())
    print(
        f"shedding sweep: brokers {args.brokers} × {args.strategies} × {args.trials} trials "
        f"= {count} simulations"
    )
    print(f"   {'where':<10} {'sims':>6} {'time':>10} {'sims/s':>11}")
    began = time.perf_counter()
    rate = direct(sweep)
    print(
        f"   {'no Spark':<10} {count:>6} {time.perf_counter() - began:>8.2f} s {rate:>10.2f}/s",
        flush=True,
    )
    scratch = Path(tempfile.mkdtemp(prefix="trimtab-bench-sweep-"))
    masters = args.masters.split(",")
    rates: dict[str, list[float]] = {}
    summaries = []
    try:
        for master in masters:
            got, summary = on_spark(master, sweep, scratch)
            rates.setdefault(master, []).append(got)
            summaries.append(summary)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    first, last = masters[0], masters[-1]
    speed_up = statistics.median(rates[last]) / statistics.median(rates[first])
    print(f"   speed-up {last} / {first} (medians of the runs above): {speed_up:.2f}×")
    same = all(s == summaries[0] for s in summaries)
    print(f"   same summary on every master: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
