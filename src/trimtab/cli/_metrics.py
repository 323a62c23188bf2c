"""The options every command serving Prometheus metrics shares: ``--metrics-port``,
``--metrics-host`` and ``--web-config FILE``.

Declared once so ``agent``, ``watch`` (and any later command with ``--metrics-port``) take the
same file, in the format Prometheus exporters take with ``--web.config.file``, checked the same
way before the command starts anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trimtab.errors import TrimtabError
from trimtab.systems.prometheus import WebConfig, checked_web_config

__all__ = ["MetricsHostOption", "MetricsPortOption", "WebConfigOption", "web_config_of"]

MetricsPortOption = Annotated[
    int | None,
    typer.Option(
        "--metrics-port", help="Serve Prometheus /metrics on this port.", min=0, max=65535
    ),
]
MetricsHostOption = Annotated[
    str, typer.Option("--metrics-host", help="Address of the metrics endpoint.")
]

WebConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--web-config",
        help="Secure the metrics endpoint with a Prometheus exporter-toolkit web config file "
        "(tls_server_config, basic_auth_users with bcrypt hashes, http_server_config).",
        dir_okay=False,
    ),
]


def web_config_of(path: Path | None, *, metrics_port: int | None) -> WebConfig | None:
    """The checked web config (None without ``--web-config``); an error when the file cannot
    be used, or when there is no metrics endpoint for it to secure."""
    if path is None:
        return None
    if metrics_port is None:
        raise TrimtabError("--web-config secures the metrics endpoint: give --metrics-port too")
    return checked_web_config(path)
