"""Apache Pulsar: load reports, the follow loop's watcher, the ``/bookies`` rack map,
namespace isolation policies and pulsar-admin commands.

Import from the modules (the package imports none of them, so naming one loads only it):

* :mod:`~trimtab.systems.pulsar.load_reports` — ``LocalBrokerData`` documents, read and
  written (Pulsar's load reports, not trimtab's HTML report);
* :mod:`~trimtab.systems.pulsar.snapshots` — load reports through the table contract into the
  shedder's snapshot;
* :mod:`~trimtab.systems.pulsar.follow` — the live loop of ``shed --follow``: one cycle per
  reading, the shedder's state carried between cycles; saved reports as a source;
* :mod:`~trimtab.systems.pulsar.watcher` — ``/loadbalance/brokers`` followed with ZooKeeper
  watches (kazoo and its threads);
* :mod:`~trimtab.systems.pulsar.bookies` — the ``/bookies`` rack map, a rack resolver;
* :mod:`~trimtab.systems.pulsar.isolation` — isolation policies and anti-affinity groups
  from the operator's JSON and CSV files;
* :mod:`~trimtab.systems.pulsar.admin` — moves as ``pulsar-admin`` commands and REST calls;
* :mod:`~trimtab.systems.pulsar.cycle_json` — one cycle of the live loop as the JSON line
  ``shed --follow --json`` prints (and its benchmark writes);
* :mod:`~trimtab.systems.pulsar.target` — ``trimtab execute``'s target: a plan's unloads and
  splits through the admin REST API, with :mod:`~trimtab.systems.pulsar.checks` (an action
  against the live owners), :mod:`~trimtab.systems.pulsar.admin_api` (the admin calls),
  :mod:`~trimtab.systems.pulsar.rest` (httpx, redirects, one error line) and
  :mod:`~trimtab.systems.pulsar.credentials` (the token and TLS files).
"""

__all__: list[str] = []
