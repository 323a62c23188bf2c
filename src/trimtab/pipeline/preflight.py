"""What is checked before a Spark JVM starts: the master and the ``--conf`` values (issue 43).

Spark checks both only once its JVM is up: an unreachable ``spark://`` master took over a
minute of retries and some 150 lines of Java stack traces before the command failed, and
``--master foo://bar`` or ``spark.driver.memory=lots`` printed the JVM's errors. Here each is
one :class:`~trimtab.errors.TrimtabError` line, in seconds:

* the master must have one of the forms Spark 4 accepts (:data:`MASTER_FORMS`); a
  ``spark://`` or ``k8s://`` master must accept a TCP connection within
  :data:`CONNECT_TIMEOUT_S` (any one of a standby list is enough);
* the well-known settings whose values Spark parses (sizes, durations, whole numbers,
  fractions, booleans) must parse as Spark would parse them. Other keys are Spark's business.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from urllib.parse import urlsplit

from trimtab.errors import TrimtabError

__all__ = ["CONNECT_TIMEOUT_S", "MASTER_FORMS", "check_conf", "check_master"]

#: How long a master may take to accept a TCP connection.
CONNECT_TIMEOUT_S = 3.0

#: The master URLs Spark 4 accepts, as the error lists them.
MASTER_FORMS = (
    "local",
    "local[N]",
    "local[*]",
    "local[N,MAX_FAILURES]",
    "local-cluster[WORKERS,CORES,MEMORY_MB]",
    "spark://HOST:PORT[,HOST:PORT]",
    "yarn",
    "k8s://https://HOST[:PORT]",
)

_LOCAL = re.compile(r"local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]")
_SPARK_PORT = 7077

#: Spark's byte sizes (JavaUtils.byteStringAs): a whole number and an optional unit.
_SIZE = re.compile(r"\d+(b|[kmgtp]b?)?", re.IGNORECASE)
#: Spark's durations (JavaUtils.timeStringAs).
_TIME = re.compile(r"-?\d+(us|ms|s|m|min|h|d)?", re.IGNORECASE)

_SIZE_KEYS = frozenset(
    {
        "spark.driver.memory",
        "spark.executor.memory",
        "spark.driver.memoryOverhead",
        "spark.executor.memoryOverhead",
        "spark.driver.maxResultSize",
        "spark.memory.offHeap.size",
        "spark.kryoserializer.buffer.max",
        "spark.sql.files.maxPartitionBytes",
        "spark.sql.autoBroadcastJoinThreshold",
    }
)
_TIME_KEYS = frozenset(
    {"spark.network.timeout", "spark.executor.heartbeatInterval", "spark.locality.wait"}
)
_COUNT_KEYS = frozenset(
    {
        "spark.driver.cores",
        "spark.executor.cores",
        "spark.executor.instances",
        "spark.cores.max",
        "spark.task.cpus",
        "spark.default.parallelism",
        "spark.sql.shuffle.partitions",
        "spark.task.maxFailures",
    }
)
_FRACTION_KEYS = frozenset({"spark.memory.fraction", "spark.memory.storageFraction"})
_BOOLEAN_KEYS = frozenset(
    {
        "spark.dynamicAllocation.enabled",
        "spark.sql.adaptive.enabled",
        "spark.sql.execution.arrow.pyspark.enabled",
        "spark.ui.enabled",
        "spark.eventLog.enabled",
    }
)


def check_master(master: str, *, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse a master of no form Spark accepts, or a cluster master nobody answers at."""
    text = master.strip()
    if _LOCAL.fullmatch(text) or text == "yarn":
        return
    if text.startswith("spark://"):
        addresses = [_address(master, part, _SPARK_PORT) for part in text[8:].split(",")]
    elif text.startswith("k8s://"):
        inner = text[6:] if "://" in text[6:] else f"https://{text[6:]}"
        parts = urlsplit(inner)
        addresses = [_address(master, parts.netloc, 443 if parts.scheme == "https" else 80)]
    else:
        raise TrimtabError(
            f"--master {master!r} is not a Spark master URL: use one of {', '.join(MASTER_FORMS)}"
        )
    reasons = []
    for host, port in addresses:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            return
        except OSError as exc:
            reasons.append(f"{host}:{port}: {_why(exc)}")
    raise TrimtabError(
        f"cannot reach the Spark master {master} within {timeout_s:g} s ({'; '.join(reasons)})"
    )


def _address(master: str, netloc: str, default_port: int) -> tuple[str, int]:
    parts = urlsplit(f"//{netloc.strip()}")
    try:
        port = parts.port or default_port
    except ValueError:
        port = 0
    if not parts.hostname or port == 0:
        raise TrimtabError(f"--master {master!r}: {netloc!r} is not HOST:PORT")
    return parts.hostname, port


def _why(exc: OSError) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return "no answer"
    if isinstance(exc, socket.gaierror):
        return "unknown host"
    return (exc.strerror or type(exc).__name__).lower()


def check_conf(conf: Mapping[str, str]) -> None:
    """Refuse a value Spark would refuse once its JVM is up, for the keys it parses."""
    for key, value in conf.items():
        text = value.strip()
        expected = _expected(key, text)
        if expected is not None:
            raise TrimtabError(f"--conf {key}={value!r}: expected {expected}")


def _expected(key: str, text: str) -> str | None:
    """What ``key`` takes, when ``text`` is not that (None: fine, or a key not checked)."""
    if key in _SIZE_KEYS and not (_SIZE.fullmatch(text) or text == "-1"):
        return "a size such as 512m, 4g or 1073741824 (a whole number, unit b, k, m, g, t or p)"
    if key in _TIME_KEYS and not _TIME.fullmatch(text):
        return "a duration such as 120s, 500ms or 5min (a whole number and a unit)"
    if key in _COUNT_KEYS and not text.isdigit():
        return "a whole number"
    if key in _FRACTION_KEYS and not _fraction(text):
        return "a number from 0 to 1"
    if key in _BOOLEAN_KEYS and text.lower() not in ("true", "false"):
        return "true or false"
    return None


def _fraction(text: str) -> bool:
    try:
        return 0.0 <= float(text) <= 1.0
    except ValueError:
        return False
