"""The control file and SIGHUP: a new rate, capped by --max-throttle, or abort."""

from __future__ import annotations

from pathlib import Path

from trimtab.execute.control import Control, Request


def test_the_control_file_changes_the_rate_once_per_change(tmp_path: Path) -> None:
    control = Control(control_file=tmp_path / "c")
    control.start(1000)
    assert control.poll() is None  # what it wrote itself
    (tmp_path / "c").write_text("2KB/s\n")
    assert control.poll() == Request(rate=2000)
    assert control.poll() is None


def test_a_rate_above_max_throttle_is_lowered_with_a_warning(tmp_path: Path) -> None:
    control = Control(control_file=tmp_path / "c", max_rate=1500)
    control.start(1000)
    (tmp_path / "c").write_text("5000")
    assert control.poll() == Request(rate=1500)
    assert "above --max-throttle" in control.warnings[0]


def test_unreadable_text_is_a_warning_and_changes_nothing(tmp_path: Path) -> None:
    control = Control(control_file=tmp_path / "c")
    control.start(1000)
    (tmp_path / "c").write_text("faster please")
    assert control.poll() is None and "throttle unchanged" in control.warnings[0]


def test_abort_in_the_control_file(tmp_path: Path) -> None:
    control = Control(control_file=tmp_path / "c")
    control.start(None)
    (tmp_path / "c").write_text("abort")
    assert control.poll() == Request(abort=True)


def test_sighup_rereads_the_throttle_file(tmp_path: Path) -> None:
    control = Control(control_file=tmp_path / "c", throttle_file=tmp_path / "t")
    control.start(1000)
    (tmp_path / "t").write_text("3000")
    assert control.poll() is None  # only a SIGHUP reads the throttle file
    control.hangup()
    assert control.poll() == Request(rate=3000)
