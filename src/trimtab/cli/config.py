"""``trimtab config``: every setting, its upstream name, the value in force and the default."""

from __future__ import annotations

from rich.table import Table

from trimtab.cli._common import (
    ConfigOption,
    JsonFlag,
    app,
    load_config,
    out,
    print_json,
    user_errors,
)
from trimtab.config import Config

__all__ = ["config_cmd"]


# -- config ------------------------------------------------------------------------------------


@app.command("config")
def config_cmd(config: ConfigOption = None, as_json: JsonFlag = False) -> None:
    """List every setting: trimtab name, upstream key, value in force and default."""
    with user_errors():
        cfg = load_config(config)
    defaults = {spec.key: value for spec, value in Config().items()}
    rows = [
        {
            "key": spec.key,
            "upstream": list(spec.aliases),
            "value": value,
            "default": defaults[spec.key],
            "doc": spec.doc,
        }
        for spec, value in cfg.items()
    ]
    if as_json:
        print_json({"settings": rows})
        return
    table = Table(title="trimtab settings", show_lines=False)
    for column in ("key", "upstream key", "value", "default"):
        table.add_column(column, overflow="fold")
    for row in rows:
        changed = row["value"] != row["default"]
        table.add_row(
            str(row["key"]),
            row["upstream"][0] if row["upstream"] else "",
            f"[bold]{row['value']!r}[/]" if changed else repr(row["value"]),
            repr(row["default"]),
        )
    out.print(table)
