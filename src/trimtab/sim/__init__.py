"""Simulators that drive the engines over time; import from the submodules
(load shedding: :mod:`trimtab.sim.convergence` and :mod:`trimtab.sim.shedding_cluster`)."""

__all__: list[str] = []
