"""Command-line options that stand for a config key take their rules from that key's own field.

`tap serve --port` overrides `[server] port`, `tap recall --budget` `[recall] budget_tokens`, and so
on. Their limits are read from the config Structs (tap.config: the `Meta` of each field), so a value
the config file would refuse is refused on the command line too, at parse time, with click's usual
"Invalid value for '--port'" message; there is no second copy of a limit to drift.
"""

from __future__ import annotations

from typing import Any

import click
import msgspec


def config_type(section: type[msgspec.Struct], key: str) -> click.ParamType[Any, Any]:
    """A click type that accepts exactly what `key` of the config table `section` accepts."""
    info = _field_type(section, key)
    if isinstance(info, msgspec.inspect.IntType):
        return int_range(section, key)
    if isinstance(info, msgspec.inspect.LiteralType):
        return click.Choice([str(value) for value in info.values])
    if isinstance(info, msgspec.inspect.StrType) and not (info.pattern or info.min_length or info.max_length):
        return click.STRING
    raise TypeError(f"{section.__name__}.{key}: no command-line type for {info!r}")


def int_range(section: type[msgspec.Struct], key: str) -> click.IntRange:
    """The range of the integer key `key` of the config table `section`."""
    info = _field_type(section, key)
    if not isinstance(info, msgspec.inspect.IntType):
        raise TypeError(f"{section.__name__}.{key} is no integer")
    return click.IntRange(*_bounds(info))


def _field_type(section: type[msgspec.Struct], key: str) -> msgspec.inspect.Type:
    struct = msgspec.inspect.type_info(section)
    assert isinstance(struct, msgspec.inspect.StructType)
    for field in struct.fields:
        if field.name == key:
            return field.type
    raise KeyError(f"{section.__name__} has no field {key!r}")


def _bounds(info: Any) -> tuple[Any, Any, bool, bool]:
    """(min, max, min_open, max_open) as click's ranges take them."""
    low, low_open = (info.gt, True) if info.gt is not None else (info.ge, False)
    high, high_open = (info.lt, True) if info.lt is not None else (info.le, False)
    return low, high, low_open, high_open
