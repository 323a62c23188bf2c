"""The GetBookieInfo protocol: the handler's rules, the generated code, and gRPC on loopback."""

from __future__ import annotations

import filecmp
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.online.faults import FaultFile, FaultyBookieInfoServer
from trimtab.cluster import NodeId
from trimtab.diskinfo import BookieInfo
from trimtab.systems.bookkeeper.bookieinfo.client import GrpcBookieInfoClient, interpret
from trimtab.systems.bookkeeper.bookieinfo.info import FetchError, FetchErrorKind, Requested
from trimtab.systems.bookkeeper.bookieinfo.proto import bookieinfo_pb2 as pb
from trimtab.systems.bookkeeper.bookieinfo.server import METHOD, BookieInfoServer, answer

DISK = BookieInfo(total_disk_bytes=4_000, free_disk_bytes=1_500)
PROTO_DIR = Path(pb.__file__).parent
A = NodeId("bk1:3181")


def _disk() -> BookieInfo:
    return DISK


@pytest.mark.parametrize(
    ("requested", "total", "free"),
    [
        (0, None, None),
        (Requested.TOTAL_DISK_CAPACITY, 4_000, None),
        (Requested.FREE_DISK_SPACE, None, 1_500),
        (Requested.TOTAL_DISK_CAPACITY | Requested.FREE_DISK_SPACE, 4_000, 1_500),
        (0xFF, 4_000, 1_500),
    ],
    ids=["nothing asked", "capacity only", "free only", "both", "unknown bits ignored"],
)
def test_only_requested_fields_are_filled(
    requested: int, total: int | None, free: int | None
) -> None:
    """The response carries exactly the fields the flags ask for, with status EOK."""
    response = answer(pb.GetBookieInfoRequest(requested=requested), _disk)
    assert response.status == pb.EOK
    assert (response.totalDiskCapacity if response.HasField("totalDiskCapacity") else None) == total
    assert (response.freeDiskSpace if response.HasField("freeDiskSpace") else None) == free


def test_other_protocol_version_gets_ebadversion() -> None:
    """A client announcing another protocol version is answered EBADVERSION, nothing else."""
    response = answer(pb.GetBookieInfoRequest(requested=3), _disk, client_version="2")
    assert response.status == pb.EBADVERSION
    assert not response.HasField("freeDiskSpace")


def test_disk_error_is_answered_eio() -> None:
    """An OSError while measuring becomes EIO, as upstream's IOException."""

    def broken() -> BookieInfo:
        raise OSError(5, "Input/output error")

    assert answer(pb.GetBookieInfoRequest(requested=3), broken).status == pb.EIO


def test_status_codes_keep_upstream_numbers() -> None:
    """StatusCode values are BookKeeper's, so logs and dashboards read the same."""
    assert (pb.EOK, pb.EIO, pb.EBADVERSION, pb.ETOOMANYREQUESTS) == (0, 501, 503, 506)
    assert int(pb.GetBookieInfoRequest.TOTAL_DISK_CAPACITY) == Requested.TOTAL_DISK_CAPACITY
    assert int(pb.GetBookieInfoRequest.FREE_DISK_SPACE) == Requested.FREE_DISK_SPACE


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        (pb.GetBookieInfoResponse(status=pb.EIO), FetchErrorKind.STATUS),
        (pb.GetBookieInfoResponse(status=pb.EOK, freeDiskSpace=1), FetchErrorKind.BAD_RESPONSE),
        (
            pb.GetBookieInfoResponse(status=pb.EOK, totalDiskCapacity=1, freeDiskSpace=2),
            FetchErrorKind.BAD_RESPONSE,
        ),
    ],
    ids=["EIO", "a field missing", "free above capacity"],
)
def test_unusable_answers_become_errors(
    response: pb.GetBookieInfoResponse, kind: FetchErrorKind
) -> None:
    """Only a complete, plausible EOK answer gives a BookieInfo."""
    result = interpret(response)
    assert isinstance(result, FetchError) and result.kind is kind


SRC = PROTO_DIR.parents[4]
#: each committed .proto, and the generated files `make proto` derives from it
GENERATED = {
    "trimtab/systems/bookkeeper/bookieinfo/proto/bookieinfo.proto": (
        "bookieinfo_pb2.py",
        "bookieinfo_pb2_grpc.py",
    ),
    "trimtab/systems/bookkeeper/bookieinfo/proto/bookkeeper_v3.proto": ("bookkeeper_v3_pb2.py",),
    "trimtab/systems/bookkeeper/registry/proto/bookie_service_info.proto": (
        "bookie_service_info_pb2.py",
    ),
}


@pytest.mark.parametrize("proto", sorted(GENERATED))
def test_generated_code_matches_the_proto(tmp_path: Path, proto: str) -> None:
    """The committed _pb2 files are what `make proto` generates from each .proto."""
    if importlib.util.find_spec("grpc_tools") is None:
        pytest.fail("grpcio-tools (a dev dependency) is needed: pip install -e '.[dev]'")
    src = tmp_path / "src"
    for name in GENERATED:  # a .proto may import another
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes((SRC / name).read_bytes())
    grpc_out = [f"--grpc_python_out={src}"] if proto.endswith("bookieinfo.proto") else []
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{src}",
            f"--python_out={src}",
            f"--pyi_out={src}",
            *grpc_out,
            str(src / proto),
        ],
        check=True,
    )
    generated = (src / proto).parent
    committed_dir = (SRC / proto).parent
    makefile = (Path(__file__).parents[2] / "Makefile").read_text()
    for name in GENERATED[proto]:
        # `make proto` appends an __all__ line; take it from the committed file's tail.
        committed = (committed_dir / name).read_text()
        body, sep, tail = committed.rpartition("\n__all__ = ")
        assert sep, f"{name} lacks the __all__ line `make proto` appends"
        assert "__all__ = " + tail.strip() in makefile, f"{name}: __all__ differs from `make proto`"
        assert (generated / name).read_text() == body, f"{name} is stale: run `make proto`"
    stub = Path(proto).with_suffix("").name + "_pb2.pyi"
    assert filecmp.cmp(generated / stub, committed_dir / stub, shallow=False)


@pytest.fixture
def server(tmp_path: Path):
    faults = tmp_path / "faults.json"
    running = FaultyBookieInfoServer(_disk, faults=FaultFile(faults))
    running.start()
    yield running, faults
    running.stop(grace=0)


def test_generated_stub_talks_to_the_server(server) -> None:
    """The typed handler serves the method the generated stub calls."""
    from trimtab.systems.bookkeeper.bookieinfo.proto import bookieinfo_pb2_grpc

    running, _ = server
    with grpc.insecure_channel(running.address) as channel:
        stub = bookieinfo_pb2_grpc.BookieInfoStub(channel)  # type: ignore[no-untyped-call]
        response = stub.GetBookieInfo(pb.GetBookieInfoRequest(requested=3), timeout=5)
    assert (response.status, response.totalDiskCapacity, response.freeDiskSpace) == (
        pb.EOK,
        4_000,
        1_500,
    )


def test_oversized_request_is_refused_before_the_handler(server) -> None:
    """Requests above the size bound fail with RESOURCE_EXHAUSTED; nothing is answered."""
    running, _ = server
    with grpc.insecure_channel(running.address) as channel:
        call: Any = channel.unary_unary(METHOD)
        with pytest.raises(grpc.RpcError) as caught:
            call(b"\x08" + b"\xff" * 4096, timeout=5)
    assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert running.answer_counts() == {}


def test_client_reports_answers_timeouts_io_errors_and_missing_nodes(
    server, tmp_path: Path
) -> None:
    """fetch_many never raises: each node gets a BookieInfo or a typed error."""
    running, faults = server
    client = GrpcBookieInfoClient()
    try:
        nobody = NodeId("bk9:3181")
        silent = NodeId("bk8:3181")
        targets = {A: running.address, nobody: "127.0.0.1:1", silent: None}
        results = client.fetch_many(targets, timeout=2)
        assert results[A] == DISK
        assert isinstance(r := results[nobody], FetchError) and r.kind is FetchErrorKind.UNAVAILABLE
        assert isinstance(r := results[silent], FetchError) and r.kind is FetchErrorKind.NO_ADDRESS
        faults.write_text(json.dumps({"hang_seconds": 5}))
        hung = client.fetch_many({A: running.address}, timeout=0.3)[A]
        assert isinstance(hung, FetchError) and hung.kind is FetchErrorKind.TIMEOUT
        faults.write_text(json.dumps({"io_error": True}))
        failed = client.fetch_many({A: running.address}, timeout=2)[A]
        assert isinstance(failed, FetchError) and failed.kind is FetchErrorKind.STATUS
        assert "EIO" in failed.detail
        assert running.answer_counts()["EIO"] == 1
        client.retain([])
        assert client.open_channels == 0
    finally:
        client.close()


@pytest.mark.server
def test_second_server_on_a_taken_port_fails() -> None:
    """Port reuse is off: an address in use is an AgentError, not a shared port."""
    from trimtab.errors import AgentError

    first = BookieInfoServer(_disk)
    try:
        with pytest.raises(AgentError, match="cannot listen"):
            BookieInfoServer(_disk, listen=first.address)
    finally:
        first.stop(grace=0)


def test_fault_file_is_read_on_every_call_and_tolerates_junk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An explicit path wins over the env var; junk or no file means no fault."""
    env_file, flag_file = tmp_path / "env.json", tmp_path / "flag.json"
    monkeypatch.setenv("TRIMTAB_AGENT_FAULTS", str(env_file))
    assert FaultFile.from_env().path == env_file
    faults = FaultFile.from_env(flag_file)
    assert faults.current().hang_seconds == 0 and not faults.current().io_error
    flag_file.write_text('{"hang_seconds": 1e9, "io_error": true, "free_bytes": 5}')
    now = faults.current()
    assert (now.hang_seconds, now.io_error, now.free_bytes) == (60.0, True, 5)
    flag_file.write_text("[not, json")
    assert faults.current() == FaultFile(None).current()
