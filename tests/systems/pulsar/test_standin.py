"""The admin stand-in answers as upstream's resources do (status codes and ``reason``s of
BrokersBase, NamespacesBase, PulsarWebResource), checked with plain httpx."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.standins.pulsar.standin import PulsarStandin
from tests.systems.pulsar.conftest import TOKEN

Start = Callable[..., PulsarStandin]


@pytest.fixture
def standin(pulsar_standin: Start) -> PulsarStandin:
    return pulsar_standin(brokers=2, namespaces={"t/ns": 4}, tokens={TOKEN: "admin", "u": "app"})


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as session:
        yield session


def test_unload_answers(standin: PulsarStandin, client: httpx.Client) -> None:
    """307 to the owner (authoritative=false), 204 there, 409 for an inactive destination,
    404 for an unknown namespace, 412 for a range the namespace lacks, 204 when unowned."""
    b = standin.brokers
    bundle = standin.cluster.owned_by(b[1])[0]
    namespace, _, hash_range = bundle.rpartition("/")
    url = f"{standin.admin_url}/admin/v2/namespaces/{namespace}/{hash_range}/unload"
    moved = client.put(url, params={"destinationBroker": b[0]})
    assert moved.status_code == 307
    location = moved.headers["Location"]
    assert location.startswith(f"http://{b[1]}/admin/v2/") and "authoritative=false" in location
    inactive = client.put(url, params={"destinationBroker": "10.0.0.9:8080"})
    assert inactive.status_code == 409
    assert inactive.json()["reason"].startswith("Not allowed unload namespace bundle")
    assert client.put(location).status_code == 204
    assert client.put(url.replace("t/ns", "t/nope")).status_code == 404
    assert client.put(url.replace(hash_range, "0x00000000_0x00000001")).status_code == 412
    standin.cluster.reown(bundle, None)
    assert client.put(url).status_code == 204  # nobody owns it: nothing to do


def test_owned_namespaces_redirect_to_the_broker(
    standin: PulsarStandin, client: httpx.Client
) -> None:
    b = standin.brokers
    url = f"{standin.admin_url}/admin/v2/brokers/standalone/{b[1]}/ownedNamespaces"
    hop = client.get(url)
    assert hop.status_code == 307 and hop.headers["Location"].startswith(f"http://{b[1]}/")
    owned = client.get(hop.headers["Location"]).json()
    assert set(owned) == set(standin.cluster.owned_by(b[1]))
    status = next(iter(owned.values()))
    assert status == {"broker_assignment": "shared", "is_controlled": False, "is_active": True}
    missing = client.get(url.replace(b[1], "10.0.0.9:8080"))
    assert missing.status_code == 404
    assert client.get(f"{standin.admin_url}/admin/v2/brokers/other").status_code == 404


def test_authentication(standin: PulsarStandin) -> None:
    """No token: 401 Authentication required; a role that is no super-user: 401 too."""
    url = f"{standin.admin_url}/admin/v2/brokers/standalone"
    assert httpx.get(url).json() == {"reason": "Authentication required"}
    app = httpx.get(url, headers={"Authorization": "Bearer u"})
    assert app.status_code == 401
    assert app.json() == {"reason": "This operation requires super-user access"}
    assert standin.cluster.counts() == {"reads": 2, "writes": 0}
