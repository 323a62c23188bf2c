"""Prometheus endpoints served the way exporters serve them (issue 41, part 4).

Every command that serves ``/metrics`` (``trimtab agent --metrics-port``, ``trimtab watch``)
goes through one :class:`~trimtab.systems.prometheus.server.MetricsServer`, which takes a web
configuration file in the Prometheus exporter-toolkit format (``--web-config``), so an operator
secures trimtab's endpoints with the file the node and BookKeeper exporters already take:

* :mod:`~trimtab.systems.prometheus.web_config` — the file: parsed, checked key by key, one
  ``error:`` line naming the key (and the nearest good one for a typo) before anything starts;
* :mod:`~trimtab.systems.prometheus.web_tls` — ``tls_server_config`` as an ``ssl.SSLContext``;
* :mod:`~trimtab.systems.prometheus.basic_auth` — ``basic_auth_users`` (bcrypt hashes),
  ``http_server_config.headers`` and ``rate_limit`` around the metrics app;
* :mod:`~trimtab.systems.prometheus.server` — the HTTP(S) server, reloading the file and the
  certificates it names when they change.
"""

from trimtab.systems.prometheus.server import MetricsServer, registry_of
from trimtab.systems.prometheus.web_config import WebConfig, WebConfigError, load_web_config
from trimtab.systems.prometheus.web_tls import checked_web_config

__all__ = [
    "MetricsServer",
    "WebConfig",
    "WebConfigError",
    "checked_web_config",
    "load_web_config",
    "registry_of",
]
