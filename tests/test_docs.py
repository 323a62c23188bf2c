"""Every example in the README and in the docs site (docs/) runs as written.

- A ```python block runs (``exec``) without error.
- A shell example is a line starting with ``trimtab `` in a ```bash fence, or with
  ``$ trimtab`` in a ```console fence (the lines after it, up to the next ``$``, are its
  output and are not compared); a line ending in ``\\`` goes on on the next one. It runs
  through bash with the venv's ``trimtab`` first on ``PATH``, in a fresh directory laid out as
  the repository root: its top-level entries are links to the checkout's, so
  ``examples/...``, ``src/trimtab/data/...`` and ``tests/data/...`` resolve, while what a
  command writes (``out/``, ``reassign.json``) lands in the temporary directory. The commands
  of one page run in order in one directory, so a page can generate a fleet and then run the
  job on it. A command must exit 0, or with the status a trailing ``# exit N`` comment names.
- A page may start a stand-in cluster for its examples with an HTML comment
  ``<!-- docs-test: background python -m tests.standins.kafka ... -->``: the command starts
  before the page's first example (from the same directory, ``tests`` importable), its first
  line of output says it is ready, and it is stopped after the last. The page shows the same
  command to its readers in a ```sh fence.
- Not run, by design: ```sh fences. They hold the few examples that need what a test here
  cannot give: a live ZooKeeper or BookKeeper cluster (``--zk zk1:2181``), agents on other
  machines, a remote Spark master, commands that run until stopped (``agent``, ``watch``,
  ``shed --follow``, ``pipeline stream``) and one sweep of the whole PIP-220 table, which takes
  too long for a test. The online tests (``tests/online``), ``tests/pipeline/test_stream.py``
  and ``tests/pipeline/test_sweeps.py`` run those commands against real servers on loopback
  or on smaller inputs instead.
- The shell examples are marked ``slow``: each page runs several ``trimtab`` processes (5 s to
  90 s a page, the Spark pages the longest), so ``make test`` runs them and the fast path does
  not. The Python blocks are not marked.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")
BACKGROUND = re.compile(r"<!-- docs-test: background (.+?) -->")
TIMEOUT_S = 600


@dataclass(frozen=True)
class Example:
    """One shell command of a page and the exit status the page gives it."""

    command: str
    status: int


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _fences(page: Path, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(page.read_text()) if lang == language]


def _joined(body: str) -> list[str]:
    """The block's lines with ``\\`` continuations joined into one line each."""
    lines: list[str] = []
    pending = ""
    for line in body.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1].rstrip() + " "
            continue
        lines.append((pending + line.strip()) if pending else line)
        pending = ""
    return lines


def shell_examples(page: Path) -> list[Example]:
    """The commands a page shows, in the order it shows them."""
    prefixes = {"bash": "", "console": "$ "}
    found: list[Example] = []
    for language, body in FENCE.findall(page.read_text()):
        if language not in prefixes:
            continue
        for line in _joined(body):
            prefix = prefixes[language]
            if line.startswith(prefix + "trimtab "):
                command = line[len(prefix) :]
                status = EXIT.search(command)
                found.append(Example(command, int(status.group(1)) if status else 0))
    return found


PYTHON = [(_name(p), body) for p in PAGES for body in _fences(p, "python")]
SHELL = [(p, shell_examples(p)) for p in PAGES]


def _param(page: Path, examples: list[Example]) -> object:
    return pytest.param(page, examples, id=_name(page), marks=[pytest.mark.slow])


def test_the_readme_and_the_docs_have_examples() -> None:
    """There is something to check: Python blocks and commands, in the README and the site."""
    assert PYTHON and shell_examples(ROOT / "README.md")
    assert sum(len(examples) for _, examples in SHELL) > 50


@pytest.mark.parametrize(("page", "block"), PYTHON, ids=[p for p, _ in PYTHON])
def test_python_example_runs(page: str, block: str) -> None:
    """Each ```python block runs without error."""
    exec(compile(block, page, "exec"), {})


def _repository_root_in(tmp_path: Path) -> Path:
    for entry in ROOT.iterdir():
        if entry.name not in {".git", ".venv", "site"}:
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


@pytest.mark.parametrize(("page", "examples"), [_param(p, e) for p, e in SHELL if e])
def test_shell_examples_exit_as_documented(
    page: Path, examples: list[Example], tmp_path: Path
) -> None:
    """Each command of the page, run in order from a copy of the repository root, exits with
    the status the page gives it (0 unless a ``# exit N`` comment says otherwise)."""
    cwd = _repository_root_in(tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with _background(page, cwd, env):
        _run_examples(page, examples, cwd, env)


@contextmanager
def _background(page: Path, cwd: Path, env: dict[str, str]) -> Iterator[None]:
    """The page's background commands (stand-ins), ready before its examples, stopped after."""
    started = []
    try:
        for command in BACKGROUND.findall(page.read_text()):
            proc = subprocess.Popen(
                ["bash", "-c", f"exec {command}"],
                cwd=cwd,
                env={**env, "PYTHONPATH": str(cwd)},
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            started.append(proc)
            assert proc.stdout is not None and proc.stdout.readline(), f"{command} did not start"
        yield
    finally:
        for proc in started:
            proc.terminate()
            proc.wait(timeout=30)
            if proc.stdout is not None:
                proc.stdout.close()


def _run_examples(page: Path, examples: list[Example], cwd: Path, env: dict[str, str]) -> None:
    for example in examples:
        done = subprocess.run(
            ["bash", "-c", example.command],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        assert done.returncode == example.status, (
            f"{_name(page)}: `{example.command}` exited {done.returncode}, "
            f"documented {example.status}\nstdout: {done.stdout[-2000:]}\n"
            f"stderr: {done.stderr[-2000:]}"
        )


#: Options whose value is a file a command writes, not one it reads.
_WRITES = {"-o", "--output", "--rollback", "--out", "--checkpoint", "--plan", ">", ">>"}
_FILE = re.compile(r"\.(csv|json|jsonl|conf|toml|parquet|sh|properties|txt)$")
#: What a ```sh example (not run: it needs a live cluster) must still find shipped: the tables
#: and config files a reader copies. Its plans and secrets (``plan.json`` made by an earlier
#: step, ``token.txt``) are the reader's own.
_SH_FILE = re.compile(r"\.(csv|jsonl|conf|toml|parquet|properties)$")


def named_input_files(page: Path) -> list[str]:
    """The relative paths of the files the page's trimtab commands read, in every shell fence,
    ```sh ones too (not run, but a reader copies them: their tables and configs); a file an
    earlier command of the page writes (``--plan drain.json``, then ``trimtab plan show
    drain.json``) is not one."""
    found: list[str] = []
    written: set[str] = set()
    for language, body in FENCE.findall(page.read_text()):
        if language not in ("bash", "console", "sh"):
            continue
        for line in _joined(body):
            words = line.split("#", 1)[0].split()
            if "trimtab" not in words:
                continue
            kind = _SH_FILE if language == "sh" else _FILE
            for before, word in zip(["", *words], words, strict=False):
                value = word.split("=", 1)[-1]
                if not kind.search(value) or value.startswith("/"):
                    continue
                if before in _WRITES or word.split("=", 1)[0] in _WRITES:
                    written.add(value)
                elif value not in written:
                    found.append(value)
    return found


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_file_an_example_reads_ships(page: Path) -> None:
    """No example names a file the repository lacks (nodes.csv, broker.conf, client.conf were
    named once and shipped nowhere; issue 42)."""
    missing = [f for f in named_input_files(page) if not (ROOT / f).exists()]
    assert not missing, f"{_name(page)} names files that are not in the repository: {missing}"


@pytest.mark.parametrize("conf", sorted((ROOT / "examples").rglob("*.conf")), ids=lambda p: p.name)
def test_every_shipped_conf_loads_without_warnings(conf: Path) -> None:
    """Each .conf in examples/ is what its page says: a file trimtab loads as it is."""
    from trimtab.config.loader import read_config

    assert read_config(conf).warnings == ()
