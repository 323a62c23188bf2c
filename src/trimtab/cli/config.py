"""``trimtab config``: every setting, its upstream name, the value in force and the default.

A real upstream file (``bk_server.conf``, ``broker.conf``, a BookKeeper client file) loads as
it is; ``--verbose`` lists the upstream keys in it that trimtab does not read.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from trimtab.cli._common import ConfigOption, JsonFlag, app, out, print_json, user_errors
from trimtab.config import Config, IgnoredKey, LoadedConfig
from trimtab.config.core import is_secret_setting
from trimtab.config.loader import read_config
from trimtab.config.secrets import REDACTED

__all__ = ["config_cmd"]

VerboseFlag = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="Also list the upstream keys in --config that trimtab ignores."
    ),
]


# -- config ------------------------------------------------------------------------------------


@app.command("config")
def config_cmd(
    config: ConfigOption = None, as_json: JsonFlag = False, verbose: VerboseFlag = False
) -> None:
    """List every setting: trimtab name, upstream key, value in force and default."""
    with user_errors():
        loaded = read_config(config) if config is not None else LoadedConfig(Config())
    rows = _setting_rows(loaded.config)
    if as_json:
        print_json({"settings": rows, "ignored": [_ignored_row(i) for i in loaded.ignored]})
        return
    out.print(_settings_table(rows))
    if verbose:
        if loaded.ignored:
            out.print(_ignored_table(loaded.ignored))
    elif loaded.ignored:
        out.print(
            f"{len(loaded.ignored)} upstream keys in {config} are not read by trimtab "
            "(--verbose lists them)",
            highlight=False,
        )


def _setting_rows(cfg: Config) -> list[dict[str, Any]]:
    """One row per setting; a secret's value (a password) is shown as ``***`` (issue 41)."""
    defaults = {spec.key: value for spec, value in Config().items()}
    return [
        {
            "key": spec.key,
            "upstream": list(spec.aliases),
            "value": REDACTED if value is not None and is_secret_setting(spec) else value,
            "default": defaults[spec.key],
            "doc": spec.doc,
        }
        for spec, value in cfg.items()
    ]


def _ignored_row(ignored: IgnoredKey) -> dict[str, Any]:
    return {"key": ignored.key, "defined_in": list(ignored.defined_in)}


def _settings_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="trimtab settings", show_lines=False)
    for column in ("key", "upstream key"):
        table.add_column(column, overflow="fold")
    for column in ("value", "default"):  # short values stay whole in a narrow terminal
        table.add_column(column, overflow="fold", min_width=10, max_width=24)
    for row in rows:
        changed = row["value"] != row["default"]
        value = escape(repr(row["value"]))  # a file's value is text, never markup
        table.add_row(
            str(row["key"]),
            row["upstream"][0] if row["upstream"] else "",
            f"[bold]{value}[/]" if changed else value,
            escape(repr(row["default"])),
        )
    return table


def _ignored_table(ignored: tuple[IgnoredKey, ...]) -> Table:
    table = Table(title=f"upstream keys trimtab ignores ({len(ignored)})", show_lines=False)
    table.add_column("key", overflow="fold")
    table.add_column("defined in", overflow="fold")
    for item in ignored:
        table.add_row(item.key, ", ".join(item.defined_in))
    return table
