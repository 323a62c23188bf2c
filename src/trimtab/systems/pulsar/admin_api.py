"""The admin calls ``trimtab execute`` makes to a Pulsar cluster, one method each.

Reads: the clusters (``GET /admin/v2/clusters``), the active brokers
(``GET /admin/v2/brokers/{cluster}``), the bundles a broker owns
(``GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces``, which the admin URL redirects to
that broker), a namespace's bundle ranges (``GET /admin/v2/namespaces/{t}/{ns}/bundles``) and
a broker's load report (``GET /admin/v2/broker-stats/load-report``, answered by each broker
about itself). Writes: ``PUT .../{bundle}/unload?destinationBroker=`` and ``PUT
.../{bundle}/split?unload=&splitAlgorithmName=``.

The load report is asked of the URL that answered the broker's ``ownedNamespaces`` after its
redirect: that is the broker's own web service address as the cluster advertises it (its
TLS port when the admin URL is https), which a ``host:port`` broker id need not be.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from urllib.parse import quote

import httpx

from trimtab.errors import ReportError, TargetError
from trimtab.systems.pulsar.load_reports import RESOURCES, LoadReport, parse_report
from trimtab.systems.pulsar.rest import AdminRest

__all__ = ["PulsarAdmin"]

_V2 = "/admin/v2"


def _q(part: str) -> str:
    return quote(part, safe="")


class PulsarAdmin:
    """The admin calls of one cluster (``cluster``) through ``rest``."""

    def __init__(self, rest: AdminRest, cluster: str) -> None:
        self.rest = rest
        self.cluster = cluster
        self._base: dict[str, str] = {}  # broker -> the URL base that answers as it

    def brokers(self) -> list[str]:
        """The active brokers' ids (``host:port``), sorted."""
        body, _url = self.rest.get(f"{self.rest.admin_url}{_V2}/brokers/{_q(self.cluster)}")
        if not isinstance(body, list) or not all(isinstance(b, str) for b in body):
            raise TargetError(f"{self.rest.admin_url} listed the brokers as {type(body).__name__}")
        self.rest.trust(body)
        return sorted(body)

    def owned(self, broker: str) -> list[str]:
        """The bundles ``broker`` owns (``tenant/ns/0x..._0x...``)."""
        path = f"{_V2}/brokers/{_q(self.cluster)}/{_q(broker)}/ownedNamespaces"
        body, answered = self.rest.get(f"{self.rest.admin_url}{path}")
        if not isinstance(body, dict):
            raise TargetError(f"{answered} listed owned bundles as {type(body).__name__}")
        url = httpx.URL(answered)
        self._base[broker] = f"{url.scheme}://{url.netloc.decode()}"
        return sorted(str(b) for b in body)

    def owners(self, brokers: Iterable[str]) -> dict[str, str]:
        """bundle -> owning broker, over ``brokers``."""
        return {bundle: broker for broker in brokers for bundle in self.owned(broker)}

    def ranges(self, namespace: str) -> list[str]:
        """``namespace``'s bundle ranges (``0x..._0x...``) from its boundaries."""
        tenant, _, name = namespace.partition("/")
        body, url = self.rest.get(
            f"{self.rest.admin_url}{_V2}/namespaces/{_q(tenant)}/{_q(name)}/bundles"
        )
        edges = body.get("boundaries") if isinstance(body, dict) else None
        if not isinstance(edges, list) or len(edges) < 2:
            raise TargetError(f"{url} gave no bundle boundaries for {namespace}")
        return [f"{lo}_{hi}" for lo, hi in itertools.pairwise(edges)]

    def report(self, broker: str) -> LoadReport:
        """``broker``'s own ``LocalBrokerData`` (``broker-stats/load-report`` answers for the
        broker asked, so it is asked at the broker's web service URL)."""
        if broker not in self._base:
            self.owned(broker)
        body, url = self.rest.get(f"{self._base[broker]}{_V2}/broker-stats/load-report")
        try:
            return parse_report(json.dumps(body), source=url, broker=broker)
        except ReportError as exc:
            raise TargetError(str(exc)) from None

    def load(self, broker: str) -> float:
        """``broker``'s load as upstream's ``LocalBrokerData.getMaxResourceUsage``: the
        largest of its cpu, memory, direct memory and bandwidth in/out usage shares."""
        report = self.report(broker)
        return max(report.usages[name].share for name in RESOURCES)

    def clusters(self) -> list[str]:
        """The cluster names the metadata store holds (``GET /admin/v2/clusters``)."""
        body, _url = self.rest.get(f"{self.rest.admin_url}{_V2}/clusters")
        if not isinstance(body, list) or not all(isinstance(c, str) for c in body):
            raise TargetError(f"{self.rest.admin_url} listed the clusters as {type(body).__name__}")
        return sorted(body)

    def unload(self, bundle: str, destination: str | None) -> None:
        namespace, _, hash_range = bundle.rpartition("/")
        tenant, _, name = namespace.partition("/")
        url = (
            f"{self.rest.admin_url}{_V2}/namespaces/{_q(tenant)}/{_q(name)}/{_q(hash_range)}/unload"
        )
        self.rest.put(url, {"destinationBroker": destination} if destination else {})

    def split(self, bundle: str, *, unload: bool, algorithm: str | None) -> None:
        namespace, _, hash_range = bundle.rpartition("/")
        tenant, _, name = namespace.partition("/")
        url = (
            f"{self.rest.admin_url}{_V2}/namespaces/{_q(tenant)}/{_q(name)}/{_q(hash_range)}/split"
        )
        params = {"unload": str(unload).lower()}
        if algorithm:
            params["splitAlgorithmName"] = algorithm
        self.rest.put(url, params)
