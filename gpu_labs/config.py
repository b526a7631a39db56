"""Frozen lab configs, and the overrides a user may apply to them.

Each lab declares `@dataclass(frozen=True) class Config` with its defaults. A run never edits the
defaults; it builds a new config with `override(config, {"field": "value"})`, where values come as
text (from `--set field=value` or `--field value`) or as JSON values (from a config file), and are
converted to the field's declared type. Unknown fields and values of the wrong type are refused
with a one-line message (ConfigError).
"""

import dataclasses
import json
import types
import typing
from pathlib import Path

from gpu_labs.phrases import listing, text


class ConfigError(ValueError):
    """An override or config file that does not fit the config; the message is one line."""


def as_dict(config) -> dict:
    return dataclasses.asdict(config)


def field_names(config) -> list[str]:
    return [field.name for field in dataclasses.fields(config)]


def override(config, values: dict):
    """A copy of `config` with `values` applied; text values are parsed by each field's type."""
    hints = typing.get_type_hints(type(config))
    known = set(field_names(config))
    changes = {}
    for name, value in values.items():
        name = name.replace("-", "_")
        if name not in known:
            raise ConfigError(text("unknown_field", name=name, fields=listing(sorted(known))))
        changes[name] = _coerce(name, value, hints[name])
    return dataclasses.replace(config, **changes)


def load_json_config(config, path: Path):
    """`config` overridden by the JSON object in `path` (its keys are config fields)."""
    try:
        values = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(text("no_read", path=path, reason=error.strerror)) from None
    except json.JSONDecodeError as error:
        raise ConfigError(text("config_not_json", path=path, line=error.lineno, msg=error.msg)) from None
    if not isinstance(values, dict):
        raise ConfigError(text("config_not_object", path=path))
    return override(config, values)


def parse_assignments(pairs) -> dict:
    """`["lr=1e-5", "group_size=8"]` -> `{"lr": "1e-5", "group_size": "8"}`."""
    values = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(text("not_assignment", pair=pair))
        values[name.strip()] = value
    return values


def _coerce(name: str, value, kind):
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [option for option in typing.get_args(kind) if option is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            return None
        return _coerce(name, value, options[0])
    if origin in (tuple, list):
        (item_kind, *_) = typing.get_args(kind) or (str,)
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            raise ConfigError(text("takes_list", name=name, value=value))
        return tuple(_coerce(name, item.strip() if isinstance(item, str) else item, item_kind) for item in items)
    if not isinstance(value, str):
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
            return value
        raise ConfigError(text("takes_kind", name=name, kind=kind.__name__, value=value))
    try:
        if kind is bool:
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        return kind(value)
    except ValueError:
        raise ConfigError(text("takes_kind", name=name, kind=kind.__name__, value=value)) from None
