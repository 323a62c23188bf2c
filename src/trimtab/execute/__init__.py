"""``trimtab execute``: run an approved plan document on a live cluster, safely.

Dry run by default; approval bound to the plan's digest; preconditions re-checked before each
batch; an append-only journal so every action happens exactly once across crashes; throttles
set by trimtab always removed. The targets it acts through live in :mod:`trimtab.systems`.
"""

__all__: list[str] = []
