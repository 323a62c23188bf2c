"""trimtab's configuration: one typed, immutable :class:`Config`, its settings split by system.

- :mod:`~trimtab.config.bookkeeper`: BookKeeper's placement, rack resolver and GET_BOOKIE_INFO
  settings (``bk_server.conf``, ``ClientConfiguration``);
- :mod:`~trimtab.config.pulsar`: Pulsar's load-balancer shedding settings (``broker.conf``);
- :mod:`~trimtab.config.redpanda`: Redpanda's allocator and partition-balancer settings;
- :mod:`~trimtab.config.core`: :class:`Config` (one section per system) and the one place any
  accepted key name, trimtab's or upstream's, becomes a setting;
- :mod:`~trimtab.config.loader`: the one loader of files, TOML and Java properties
  (:func:`~trimtab.config.loader.read_config`);
- :mod:`~trimtab.config.settings` and :mod:`~trimtab.config.upstream`: the machinery (declaring
  a setting with its upstream aliases and checks; the catalogue of upstream's own keys).

Defaults are the upstream ones, except where a trimtab default is documented as different and
why. The names below are importable from this package; the loader is not, so that importing a
settings module never loads a file-format library. The engines import the settings modules
they need (``trimtab.config.pulsar``...), not this package's re-exports.

    >>> Config.of(minNumRacksPerWriteQuorum=3).placement.min_num_racks_per_write_quorum
    3
"""

from trimtab.config.bookkeeper import (
    PLACEMENT_POLICIES,
    SAMPLING,
    WEIGHT_CAPS,
    WEIGHTS_MODES,
    BookieInfoConfig,
    CapBasis,
    PlacementConfig,
    PolicyName,
    Sampling,
    TlsConfig,
    TopologyConfig,
    WeightsMode,
)
from trimtab.config.core import Config, IgnoredKey, LoadedConfig
from trimtab.config.pulsar import SHEDDERS, SheddingConfig, Strategy
from trimtab.config.redpanda import BALANCER_MODES, AllocationConfig, BalancerMode
from trimtab.config.settings import Choice, spelled

__all__ = [
    "BALANCER_MODES",
    "PLACEMENT_POLICIES",
    "SAMPLING",
    "SHEDDERS",
    "WEIGHTS_MODES",
    "WEIGHT_CAPS",
    "AllocationConfig",
    "BalancerMode",
    "BookieInfoConfig",
    "CapBasis",
    "Choice",
    "Config",
    "IgnoredKey",
    "LoadedConfig",
    "PlacementConfig",
    "PolicyName",
    "Sampling",
    "SheddingConfig",
    "Strategy",
    "TlsConfig",
    "TopologyConfig",
    "WeightsMode",
    "spelled",
]
