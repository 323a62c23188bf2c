"""The machinery of every settings module: declare a setting once, accept it under every name.

A setting is a dataclass field whose metadata carries its upstream names (``aliases``), a
check, a one-line doc and, for enumerations, the values it accepts with their upstream
spellings (Java class names, for instance). :meth:`Setting.coerce` turns strings from
``.properties`` files into the field's type, so one code path serves TOML, properties files
and keyword arguments. A closed set of values is a :class:`Choice` (a ``StrEnum``) with a table
of its accepted spellings (:func:`choices_of`, :func:`spelled`).

The settings of each system (:mod:`~trimtab.config.bookkeeper`, :mod:`~trimtab.config.pulsar`,
:mod:`~trimtab.config.redpanda`) are declared with it; :func:`nearest` also serves the table
readers' "did you mean" for column names.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

from trimtab.errors import ConfigValueError

__all__ = [
    "Check",
    "Choice",
    "Setting",
    "at_least",
    "between",
    "choices_of",
    "nearest",
    "setting",
    "settings_of",
    "spelled",
]


class Choice(StrEnum):
    """A setting's closed set of values: members are their text (``str``, JSON, Parquet and
    ``repr`` show ``'median'``, not the member), so outputs read as they did with strings."""

    def __repr__(self) -> str:
        return repr(self.value)


_C = TypeVar("_C", bound=Choice)


def choices_of(kind: type[_C]) -> dict[str, _C]:
    """Each member of ``kind`` under its own text: the start of every spelling table."""
    return {member.value: member for member in kind}


def spelled(table: Mapping[str, _C], text: str) -> _C | None:
    """The value ``text`` spells in an alias ``table`` (case and outer blanks ignored)."""
    return table.get(str(text).strip().lower())


@dataclass(frozen=True, slots=True)
class Check:
    """A value rule: ``test`` passes or fails, ``allowed`` says in words what passes."""

    test: Callable[[Any], bool]
    allowed: str


def at_least(low: float) -> Check:
    return Check(lambda v: v >= low, f"a number >= {low:g}")


def between(low: float, high: float) -> Check:
    return Check(lambda v: low <= v <= high, f"a number in {low:g}..{high:g}")


@dataclass(frozen=True, slots=True)
class Setting:
    """What the loader knows of one field: its names, type, check and accepted choices."""

    section: str
    name: str
    type: Any
    aliases: tuple[str, ...]
    check: Check | None
    choices: Mapping[str, str] | None  # accepted spelling (lower-case) -> canonical value
    doc: str

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}" if self.section else self.name

    @property
    def upstream(self) -> str:
        """The name users of the upstream system know, else the dotted trimtab name."""
        return self.aliases[0] if self.aliases else self.key

    def coerce(self, value: Any, *, key: str, source: str | None) -> Any:
        """Turn ``value`` (native or a string from a properties file) into the field's type."""
        try:
            converted = _convert(self.type, value)
        except (TypeError, ValueError) as exc:
            raise ConfigValueError(key, value, str(exc), source) from None
        if self.choices is not None and converted is not None:
            canonical = self.choices.get(str(converted).strip().lower())
            if canonical is None and not _is_import_path(str(converted), self.choices):
                allowed = "one of " + ", ".join(sorted(set(self.choices.values())))
                raise ConfigValueError(key, value, allowed, source)
            converted = canonical if canonical is not None else str(converted).strip()
        if self.check is not None and converted is not None and not self.check.test(converted):
            raise ConfigValueError(key, value, self.check.allowed, source)
        return converted


def _is_import_path(text: str, choices: Mapping[str, str]) -> bool:
    """Settings whose choices include ``"<import path>"`` also take ``module:Class`` paths."""
    return "<import path>" in choices.values() and ":" in text and " " not in text


def setting(
    default: Any,
    doc: str,
    *,
    aliases: tuple[str, ...] = (),
    check: Check | None = None,
    choices: Mapping[str, str] | None = None,
) -> Any:
    """Declare a config field; ``aliases`` are the upstream key names, first one shown to users."""
    meta = {"aliases": aliases, "check": check, "choices": choices, "doc": doc}
    if isinstance(default, list | dict | set):
        raise TypeError("use a tuple default; config objects are immutable")
    return dataclasses.field(default=default, metadata=meta)


def settings_of(section_cls: type, section: str) -> list[Setting]:
    hints = typing.get_type_hints(section_cls)
    return [
        Setting(
            section=section,
            name=f.name,
            type=hints[f.name],
            aliases=f.metadata.get("aliases", ()),
            check=f.metadata.get("check"),
            choices=f.metadata.get("choices"),
            doc=f.metadata.get("doc", ""),
        )
        for f in dataclasses.fields(section_cls)
    ]


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def _convert(tp: Any, value: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.strip() in ("", "null", "None")):
            return None
        return _convert(args[0], value)
    if origin is tuple:
        (item,) = {a for a in typing.get_args(tp) if a is not Ellipsis}
        if isinstance(value, str):
            parts = [p.strip() for p in value.replace(";", ",").split(",")]
            return tuple(_convert(item, p) for p in parts if p)
        if isinstance(value, list | tuple):
            return tuple(_convert(item, v) for v in value)
        raise TypeError("a list, or a string of items separated by ',' or ';'")
    if tp is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValueError("true or false")
    if tp is int:
        if isinstance(value, bool):
            raise TypeError("a whole number")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        try:
            return int(str(value).strip())
        except ValueError:
            raise ValueError("a whole number") from None
    if tp is float:
        if isinstance(value, bool):
            raise TypeError("a number")
        try:
            return float(str(value).strip()) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise ValueError("a number") from None
    # str, or a Choice (a StrEnum) whose ``choices`` map each spelling to its member
    if tp is str or (isinstance(tp, type) and issubclass(tp, str)):
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise TypeError("a string")
        return str(value).strip()
    raise TypeError(f"unsupported setting type {tp!r}")  # pragma: no cover - declaration bug


def nearest(key: str, known: list[str]) -> str | None:
    """The known name a mistyped key most likely meant (case and separators ignored first)."""
    same = [k for k in known if _fold(k) == _fold(key)]
    if same:  # several spellings of one setting: answer in the style the user wrote
        return max(same, key=lambda k: difflib.SequenceMatcher(None, key, k).ratio())
    folded = {_fold(k): k for k in known}
    hits = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if hits:
        return hits[0]
    hits = difflib.get_close_matches(_fold(key), list(folded), n=1, cutoff=0.6)
    return folded[hits[0]] if hits else None


def _fold(key: str) -> str:
    return key.lower().replace("_", "").replace("-", "").replace(".", "")
