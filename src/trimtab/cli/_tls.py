"""The TLS options the agent and the readers share (issue 41, part 1), declared once.

The agent takes ``--tls-cert``, ``--tls-key``, ``--tls-ca`` and ``--tls-client-auth``; the readers
(``bookieinfo``, ``watch``) take ``--tls-ca``, ``--tls-cert`` and ``--tls-key``. Each option wins
over its BookKeeper key in ``--config`` (``tlsCertificatePath``, ``tlsKeyStore``, ``tlsTrustStore``,
``tlsClientAuthentication``); the checks are
:mod:`~trimtab.systems.bookkeeper.bookieinfo.tls_setup`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["TlsCaOption", "TlsCertOption", "TlsClientAuthFlag", "TlsKeyOption"]

TlsCertOption = Annotated[
    Path | None,
    typer.Option(
        "--tls-cert",
        help="PEM certificate: the agent's for TLS on both ports, a reader's client "
        "certificate (tlsCertificatePath).",
        dir_okay=False,
    ),
]
TlsKeyOption = Annotated[
    Path | None,
    typer.Option(
        "--tls-key",
        help="PEM private key of --tls-cert, unencrypted (tlsKeyStore).",
        dir_okay=False,
    ),
]
TlsCaOption = Annotated[
    Path | None,
    typer.Option(
        "--tls-ca",
        help="PEM CA certificates: the agent checks client certificates against them, a reader "
        "the nodes' certificates (tlsTrustStore). A reader given TLS options uses TLS to every "
        "node.",
        dir_okay=False,
    ),
]
TlsClientAuthFlag = Annotated[
    bool,
    typer.Option(
        "--tls-client-auth",
        help="Refuse clients without a certificate signed by --tls-ca (tlsClientAuthentication).",
    ),
]
