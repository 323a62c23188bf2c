"""Redpanda's throttle: the cluster config ``raft_learner_recovery_rate`` (bytes/s per node).

Setting it records the value found before (None when it was at its default); clearing puts
that value back, or removes the property so it returns to its default. One PUT each way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from trimtab.errors import TargetError
from trimtab.plans.document import Action
from trimtab.plans.target import ThrottleSet
from trimtab.systems.redpanda.admin_api import RedpandaAdmin, read_basic_auth

__all__ = ["RATE_KEY", "RecoveryRateThrottle"]

RATE_KEY = "raft_learner_recovery_rate"


class RecoveryRateThrottle:
    """The throttle of a Redpanda target (see the module docstring)."""

    def __init__(self, admin: RedpandaAdmin | None) -> None:
        self.admin = admin
        self.warnings: list[str] = []

    @staticmethod
    def from_options(
        admin_url: str | None, auth_file: Path | None, timeout_s: float, ca: Path | None = None
    ) -> RecoveryRateThrottle:
        """From ``--redpanda-admin`` and ``--redpanda-auth-file`` (no URL: no throttle)."""
        if admin_url is None:
            if auth_file is not None:
                raise TargetError("--redpanda-auth-file needs --redpanda-admin URL")
            return RecoveryRateThrottle(None)
        auth, warnings = read_basic_auth(auth_file)
        throttle = RecoveryRateThrottle(RedpandaAdmin(admin_url, auth, timeout_s, ca))
        throttle.warnings = warnings
        return throttle

    def _admin(self) -> RedpandaAdmin:
        if self.admin is None:
            raise TargetError(
                "a Redpanda throttle is set through its Admin API: give --redpanda-admin URL "
                "(for example http://redpanda-0:9644), or run without --throttle"
            )
        return self.admin

    def preview(self, rate: int, actions: Sequence[Action]) -> ThrottleSet:
        """What :meth:`set` would write and the value it would replace (one GET)."""
        if rate <= 0 or not actions:
            return ThrottleSet(rate)
        admin = self._admin()
        before = admin.cluster_config().get(RATE_KEY)
        entry = {
            "resource": "redpanda_cluster",
            "name": admin.url,
            "key": RATE_KEY,
            "value": rate,
            "before": before,
        }
        return ThrottleSet(rate, (entry,))

    def set(self, rate: int, actions: Sequence[Action]) -> ThrottleSet:
        """Set ``raft_learner_recovery_rate`` to ``rate``, recording the value it replaces."""
        throttle = self.preview(rate, actions)
        if throttle.entries:
            self._admin().patch_cluster_config({RATE_KEY: rate}, [])
        return throttle

    def clear(self, throttle: ThrottleSet) -> None:
        entries = [e for e in throttle.entries if e.get("key") == RATE_KEY]
        if not entries:
            return
        admin = self._admin()
        before = entries[0].get("before")
        if before is None:
            admin.patch_cluster_config({}, [RATE_KEY])
        else:
            admin.patch_cluster_config({RATE_KEY: before}, [])
