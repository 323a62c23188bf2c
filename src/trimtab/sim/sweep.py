"""Parameter sweeps of the simulators: the grid, one task per (parameter set, seed), and what
each task runs — the very calls ``trimtab simulate`` makes, so a sweep gives the direct
simulator's numbers for the same seeds. No Spark here: :mod:`trimtab.pipeline.sweeps`
distributes the tasks, and anything else (a test, a notebook) can run them in a loop.

Tasks
    * shedding: sizes × strategies × trials. Trial ``t`` at ``n`` brokers draws its cluster
      from :func:`~trimtab.sim.convergence.static_rng` ``(seed, n, t)``, as
      :func:`~trimtab.sim.convergence.static_experiment` does, so every strategy meets the same
      clusters and the means equal ``trimtab simulate shedding --seed SEED``'s.
    * diskfill: grid settings × trials. Trial ``t`` runs the setting with seed ``seed + t``, so
      trial 0 is ``trimtab simulate diskfill --seed SEED`` with that setting's options.

Grid (``--grid``)
    ``"weights=off,disk;cap=0,2,3;sampling=successive,proportional"``: ``;`` between
    dimensions, ``,`` between values; the settings are every combination, in the order written.
    Keys are ``simulate diskfill``'s options (``weights``, ``sampling``, ``cap``, ``cap-mode``,
    ``policy``, ``refresh``) or the config keys they stand for, under any name the config
    accepts (``bookieMaxMultipleForWeightBasedPlacement=0,3``, ``weighted_sampling=...``). A key
    or value that is not known is an error that names it and suggests the nearest one.
    Dimensions not in the grid keep ``simulate diskfill``'s defaults. With ``weights=off`` the
    cap and the sampling mode cannot change a run (no weights to cap or draw by), so those
    combinations are run once, with ``cap``, ``cap_mode`` and ``sampling`` left empty.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol

from trimtab.config import (
    PLACEMENT_POLICIES,
    SAMPLING,
    WEIGHT_CAPS,
    WEIGHTS_MODES,
    CapBasis,
    Choice,
    Config,
    PolicyName,
    Sampling,
    SheddingConfig,
    Strategy,
    WeightsMode,
    spelled,
)
from trimtab.config.settings import nearest
from trimtab.errors import ConfigError, ConfigValueError
from trimtab.shedding import shedder_for
from trimtab.sim.convergence import CAPACITY, PIP_EPOCHS, static_rng, static_trial
from trimtab.sim.diskfill import USABLE_COUNTS, DiskFillRun, run_diskfill

__all__ = [
    "GRID_KEYS",
    "DiskFillGrid",
    "DiskFillSetting",
    "DiskFillSweep",
    "SheddingSweep",
    "Sweep",
    "parse_grid",
]


class Sweep(Protocol):
    """What the Spark side needs to know of a sweep (:mod:`trimtab.pipeline.sweeps`)."""

    kind: ClassVar[str]
    #: Spark DDL of a task row; its first column is ``task`` (0, 1, ... in task order).
    task_schema: ClassVar[str]
    #: Spark DDL of what :meth:`run` returns besides ``task``.
    result_schema: ClassVar[str]
    #: Task columns that name a parameter set: the summary's groups.
    parameters: ClassVar[tuple[str, ...]]
    #: Numeric results summarised per parameter set (mean, std, min, p10, p50, p90, max).
    metrics: ClassVar[tuple[str, ...]]
    #: Boolean results summarised as the share of runs where they hold (``reached_share``).
    shares: ClassVar[tuple[str, ...]]

    def tasks(self) -> list[dict[str, Any]]: ...

    def run(self, task: Mapping[str, Any]) -> dict[str, Any]: ...

    def describe(self) -> dict[str, Any]: ...


# -- shedding ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SheddingSweep:
    """PIP-220's static experiment over sizes × strategies × trials (see the module docstring).

    ``config`` is already set up for the experiment
    (:func:`~trimtab.sim.convergence.experiment_config`): target, pairs per cycle, timers.
    """

    sizes: tuple[int, ...]
    strategies: tuple[Strategy, ...]
    trials: int
    config: SheddingConfig
    seed: int = 0
    bundles_per_broker: int = 10
    timers: bool = False

    kind: ClassVar[str] = "shedding"
    task_schema: ClassVar[str] = (
        "task int, setting int, brokers int, strategy string, pip_epochs int, trial int, seed long"
    )
    result_schema: ClassVar[str] = (
        "transfers int, cycles int, bundles_moved int, moved_bytes_per_s double, "
        "moved_share double, std_start double, std_end double, reached boolean"
    )
    parameters: ClassVar[tuple[str, ...]] = ("setting", "brokers", "strategy", "pip_epochs")
    metrics: ClassVar[tuple[str, ...]] = (
        "transfers",
        "cycles",
        "bundles_moved",
        "moved_bytes_per_s",
        "moved_share",
        "std_end",
    )
    shares: ClassVar[tuple[str, ...]] = ("reached",)

    def tasks(self) -> list[dict[str, Any]]:
        """In :func:`static_experiment`'s order: size, then strategy, then trial."""
        rows: list[dict[str, Any]] = []
        settings = itertools.product(self.sizes, self.strategies)
        for setting, (brokers, strategy) in enumerate(settings):
            for trial in range(self.trials):
                rows.append(
                    {
                        "task": len(rows),
                        "setting": setting,
                        "brokers": brokers,
                        "strategy": _plain(strategy),
                        "pip_epochs": PIP_EPOCHS.get(brokers),
                        "trial": trial,
                        "seed": self.seed,
                    }
                )
        return rows

    def run(self, task: Mapping[str, Any]) -> dict[str, Any]:
        brokers = int(task["brokers"])
        shedder = shedder_for(self.config, str(task["strategy"]))
        rng = static_rng(int(task["seed"]), brokers, int(task["trial"]))
        trial = static_trial(brokers, shedder, rng, bundles_per_broker=self.bundles_per_broker)
        return {
            "transfers": trial.transfers,
            "cycles": trial.cycles,
            "bundles_moved": trial.bundles_moved,
            "moved_bytes_per_s": trial.moved_bytes_per_s,
            # as StaticRow.moved_share_mean: over the expected traffic of uniform loads
            "moved_share": trial.moved_bytes_per_s / (brokers * 0.5 * CAPACITY),
            "std_start": trial.std_start,
            "std_end": trial.std_end,
            "reached": trial.reached,
        }

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sizes": list(self.sizes),
            "strategies": [_plain(s) for s in self.strategies],
            "trials": self.trials,
            "seed": self.seed,
            "target_std": self.config.target_std,
            "pairs_per_cycle": self.config.max_broker_shedding_per_cycle,
            "timers": self.timers,
            "bundles_per_broker": self.bundles_per_broker,
        }


# -- diskfill: the grid ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DiskFillSetting:
    """One point of the diskfill grid: ``simulate diskfill``'s options, with its defaults.

    ``policy`` None keeps the cluster's own (the scenario's, rack-aware for an inventory);
    ``sampling``, ``cap`` and ``cap_mode`` are None where they do not apply (weights off).
    """

    policy: PolicyName | None = None
    weights: WeightsMode = WeightsMode.DISK
    sampling: Sampling | None = Sampling.PROPORTIONAL
    cap: int | None = 3
    cap_mode: CapBasis | None = CapBasis.MEDIAN
    refresh: float = 86_400.0  # getBookieInfoIntervalSeconds; 0 = before every ledger

    def apply(self, run: DiskFillRun, *, seed: int) -> DiskFillRun:
        """``run`` with this setting and ``seed``: what ``simulate diskfill`` runs."""
        return replace(
            run,
            policy=self.policy or run.policy,
            weights=self.weights,
            sampling=self.sampling or run.sampling,
            cap=run.cap if self.cap is None else self.cap,
            cap_basis=self.cap_mode or run.cap_basis,
            refresh_seconds=self.refresh or None,
            seed=seed,
        )


def _choice(table: Mapping[str, Choice], *shown: str) -> Callable[[str], Choice]:
    """A parser of the values ``table`` (the config's alias table) accepts; errors list
    ``shown`` and the nearest accepted spelling."""

    def parse(text: str) -> Choice:
        value = spelled(table, text)
        if value is None:
            hint = nearest(text.strip(), sorted(table))
            tip = f"; did you mean '{hint}'?" if hint else ""
            raise ValueError(f"choose {', '.join(shown)}{tip}")
        return value

    return parse


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError("a whole number (<= 0: no cap)") from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError("seconds >= 0 (0: before every ledger)")
    return value


#: The grid's own keys (``simulate diskfill``'s options) -> value parser.
GRID_KEYS: dict[str, Callable[[str], Any]] = {
    "weights": _choice(WEIGHTS_MODES, *WeightsMode),
    "sampling": _choice(SAMPLING, *Sampling),
    "cap": _whole,
    "cap-mode": _choice(WEIGHT_CAPS, *(basis.short for basis in CapBasis)),
    "policy": _choice(PLACEMENT_POLICIES, *PolicyName),
    "refresh": _seconds,
}

_FIELD = {"cap-mode": "cap_mode"}

#: Config settings a grid key stands for; their values go through the config's own checks.
_CONFIG_KEYS = {
    "placement.disk_weight_based_placement_enabled": "weights",
    "placement.weighted_sampling": "sampling",
    "placement.bookie_max_multiple_for_weight_based_placement": "cap",
    "placement.weight_cap_basis": "cap-mode",
    "placement.ensemble_placement_policy": "policy",
    "bookie_info.interval_seconds": "refresh",
}


def _config_names() -> dict[str, tuple[str, Any]]:
    """Every name of the settings in :data:`_CONFIG_KEYS` -> (grid key, setting)."""
    names: dict[str, tuple[str, Any]] = {}
    for spec in Config.settings():
        if spec.key in _CONFIG_KEYS:
            for name in (spec.key, spec.name, *spec.aliases):
                names[name] = (_CONFIG_KEYS[spec.key], spec)
    return names


@dataclass(frozen=True, slots=True)
class DiskFillGrid:
    """The settings of a ``--grid``, in the order written, and the keys it varied."""

    keys: tuple[str, ...]
    settings: tuple[DiskFillSetting, ...]
    combinations: int = 0

    def label(self, setting: DiskFillSetting) -> str:
        """``"weights=disk cap=2 sampling=proportional"``: the varied keys that apply."""
        parts = []
        for key in self.keys:
            value = getattr(setting, _FIELD.get(key, key))
            if key == "cap-mode" and value is not None:
                value = CapBasis(value).short
            if value is not None:
                parts.append(f"{key}={_show(value)}")
        return " ".join(parts) or "defaults"


def _show(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _plain(value: object) -> str | None:
    """A task cell as plain text (Spark's rows take no enum members); None stays None."""
    return None if value is None else str(value)


def parse_grid(text: str, base: DiskFillSetting | None = None) -> DiskFillGrid:
    """``"weights=off,disk;cap=0,3"`` -> every combination (see the module docstring)."""
    base = base or DiskFillSetting()
    config_names = _config_names()
    known = sorted({*GRID_KEYS, *config_names})
    dims: dict[str, list[Any]] = {}
    written: dict[str, str] = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        raw_key, sep, raw_values = part.partition("=")
        key_text = raw_key.strip()
        if not sep or not key_text:
            raise ConfigError(f"--grid part {part!r}: write key=value,value (e.g. cap=0,2,3)")
        key, parse = _grid_key(key_text, config_names, known)
        if key in dims:
            raise ConfigError(f"--grid sets {key} twice ('{written[key]}' and '{key_text}')")
        values = [v.strip() for v in raw_values.split(",") if v.strip()]
        if not values:
            raise ConfigError(f"--grid {key_text}: no values (write {key_text}=a,b)")
        parsed: list[Any] = []
        for value in values:
            try:
                parsed.append(parse(value))
            except ValueError as exc:
                raise ConfigError(f"--grid {key_text}={value!r}: {exc}") from None
        repeated = [v for i, v in enumerate(values) if parsed[i] in parsed[:i]]
        if repeated:
            raise ConfigError(f"--grid {key_text}: {repeated[0]!r} repeats a value before it")
        dims[key] = parsed
        written[key] = key_text
    if not dims:
        raise ConfigError("--grid is empty: write key=value,value;key=value (e.g. cap=0,2,3)")
    settings: list[DiskFillSetting] = []
    combinations = 0
    for combo in itertools.product(*dims.values()):
        combinations += 1
        changes = {_FIELD.get(k, k): v for k, v in zip(dims, combo, strict=True)}
        setting = replace(base, **changes)
        if setting.weights == WeightsMode.OFF:
            setting = replace(setting, sampling=None, cap=None, cap_mode=None)
        if setting not in settings:
            settings.append(setting)
    return DiskFillGrid(tuple(dims), tuple(settings), combinations)


def _grid_key(
    text: str, config_names: Mapping[str, tuple[str, Any]], known: Sequence[str]
) -> tuple[str, Callable[[str], Any]]:
    """The grid key ``text`` names and the parser of its values."""
    folded = text.lower().replace("_", "-")
    if folded in GRID_KEYS:
        return folded, GRID_KEYS[folded]
    if text in config_names:
        key, spec = config_names[text]

        def parse(value: str) -> Any:
            try:
                converted = spec.coerce(value, key=text, source="--grid")
            except ConfigValueError as exc:
                raise ValueError(exc.allowed) from None
            if key == "weights":
                return WeightsMode.DISK if converted else WeightsMode.OFF
            return float(converted) if key == "refresh" else converted

        return key, parse
    hint = nearest(text, list(known)) or _prefix_of(text, known)
    tip = f"; did you mean '{hint}'?" if hint else f"; known keys: {', '.join(GRID_KEYS)}"
    raise ConfigError(f"--grid: unknown key '{text}'{tip}")


def _prefix_of(text: str, known: Sequence[str]) -> str | None:
    """A known key that starts with ``text`` (a name cut short), ignoring case and separators."""
    folded = text.lower().replace("_", "").replace("-", "")
    return next((k for k in known if k.lower().replace("_", "").startswith(folded)), None)


# -- diskfill: the sweep -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DiskFillSweep:
    """Every grid setting × trials on one cluster (``base``: nodes, workload, default policy)."""

    base: DiskFillRun
    grid: DiskFillGrid
    trials: int
    seed: int = 1
    cluster: str = ""

    kind: ClassVar[str] = "diskfill"
    task_schema: ClassVar[str] = (
        "task int, setting int, label string, policy string, weights string, sampling string, "
        "cap int, cap_mode string, refresh_s double, trial int, seed long"
    )
    result_schema: ClassVar[str] = (
        "usable_fraction_at_first_readonly double, max_write_share double, "
        "first_readonly_node string, first_readonly_time double, ledgers long, "
        "stored_bytes long, readonly boolean"
    )
    parameters: ClassVar[tuple[str, ...]] = (
        "setting",
        "label",
        "policy",
        "weights",
        "sampling",
        "cap",
        "cap_mode",
        "refresh_s",
    )
    metrics: ClassVar[tuple[str, ...]] = (
        "usable_fraction_at_first_readonly",
        "max_write_share",
        "first_readonly_time",
        "ledgers",
    )
    shares: ClassVar[tuple[str, ...]] = ("readonly",)

    def tasks(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for index, setting in enumerate(self.grid.settings):
            for trial in range(self.trials):
                rows.append(
                    {
                        "task": len(rows),
                        "setting": index,
                        "label": self.grid.label(setting),
                        "policy": _plain(setting.policy or self.base.policy),
                        "weights": _plain(setting.weights),
                        "sampling": _plain(setting.sampling),
                        "cap": setting.cap,
                        "cap_mode": _plain(setting.cap_mode),
                        "refresh_s": float(setting.refresh),
                        "trial": trial,
                        "seed": self.seed + trial,
                    }
                )
        return rows

    def run(self, task: Mapping[str, Any]) -> dict[str, Any]:
        setting = self.grid.settings[int(task["setting"])]
        result = run_diskfill(setting.apply(self.base, seed=int(task["seed"])))
        figures = result.figures()
        return {
            "usable_fraction_at_first_readonly": figures["usable_fraction_at_first_readonly"],
            "max_write_share": figures["max_write_share"],
            "first_readonly_node": figures["first_readonly_node"],
            "first_readonly_time": figures["first_readonly_time"],
            "ledgers": figures["ledgers"],
            "stored_bytes": figures["stored_bytes"],
            "readonly": figures["first_readonly_node"] is not None,
        }

    def describe(self) -> dict[str, Any]:
        wl = self.base.workload
        return {
            "kind": self.kind,
            "cluster": self.cluster,
            "nodes": len(self.base.nodes),
            "capacity_bytes": sum(n.capacity for n in self.base.nodes),
            "initial_bytes": sum(n.used for n in self.base.nodes),
            "usable_counts": USABLE_COUNTS,
            "workload": {
                "ensemble": wl.ensemble,
                "write_quorum": wl.write_quorum,
                "ack_quorum": wl.ack_quorum,
                "mean_bytes": wl.mean_bytes,
                "rate_per_s": wl.rate,
            },
            "grid": list(self.grid.keys),
            "combinations": self.grid.combinations,
            "settings": [self.grid.label(s) for s in self.grid.settings],
            "trials": self.trials,
            "seed": self.seed,
        }
