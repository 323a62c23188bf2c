"""The rack resolver options ``topology`` and ``inventory`` share, declared once.

``--resolver-script`` runs a DNS-to-switch script (BookKeeper's
``networkTopologyScriptFileName``); ``--pulsar-racks`` reads Pulsar's ``/bookies`` rack map
from a ZooKeeper (``BookieRackAffinityMapping``). Without them each command uses what the
configuration names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["PulsarRacksOption", "ResolverScriptOption"]

ResolverScriptOption = Annotated[
    Path | None,
    typer.Option(
        "--resolver-script",
        help="Executable mapping hosts to /region/rack (networkTopologyScriptFileName).",
    ),
]
PulsarRacksOption = Annotated[
    str | None,
    typer.Option(
        "--pulsar-racks",
        metavar="HOST:PORT",
        help="ZooKeeper holding Pulsar's /bookies rack map (BookieRackAffinityMapping).",
    ),
]
