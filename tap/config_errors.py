"""Every problem of a config file at once, each in plain words: `key: expected …, got …; e.g. …`.

msgspec stops at the first invalid value and words it in its own terms (a regular expression, a
`$.path`). When a config does not decode, `config_problems` checks every key on its own against
the type of its field (msgspec.inspect: ranges, enum values, patterns) and names, for each one,
the key, what is allowed (the enum's values; a pattern's meaning, never the regex) and an example
line. A table whose keys are all valid is then decoded whole, for the checks between its keys
(`__post_init__`). TOML syntax errors stop at the first one (tomllib cannot go on).
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

import msgspec
from msgspec import inspect

RETIRED = {
    "recall.skip_repeats": (
        "retired: every request now gets the memories for its latest human turn, minus those the model "
        "can already see in the request (docs/ways-in.md: Conversations and repeats); delete this line"
    ),
}
"""Keys earlier versions accepted, with what to do about them (named instead of "unknown key")."""

URL_PATTERN = r"^https?://[^\s/]+\S*$"
"""An upstream base URL: tap's HTTP clients need the scheme (`api.anthropic.com` alone is refused)."""

PATTERNS = {
    URL_PATTERN: "an http:// or https:// URL",
    r"^[A-Za-z_][A-Za-z0-9_]*$": "the name of an environment variable (letters, digits, _; no digit first)",
    r"^([A-Za-z_][A-Za-z0-9_]*)?$": "the name of an environment variable, or empty",
    r"^(https?://[^\s/]+(:\d+)?/?)?$": 'a Chroma server as http(s)://host:port (no path), or "" for embedded Chroma',
    r"^[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]$": (
        "3 to 63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit"
    ),
    r"^/[A-Za-z0-9/_-]*$": "a URL path starting with / (letters, digits, /, _ and -)",
    r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?$": "a host name or [IPv6] address, optionally with :port",
    r"^https?://[^\s/@]+@\d{1,5}$": "UPSTREAM@PORT: an http(s) URL without a path, @, and a local port",
}
"""What each pattern a config field uses means, in words (tests check every pattern is here)."""

EXAMPLES: dict[str, Any] = {
    "data.dir": "~/.local/share/tap",
    "server.allowed_hosts": ["tap.example.com"],
    "server.allowed_origins": ["https://chat.example.com"],
    "store.url": "http://127.0.0.1:8000",
    "telegram.allowed_users": [123456789],
    "logtail.scope": "my-project",
    "hooks.scope": "my-project",
    "mitm.reverse": ["https://api.anthropic.com@8082"],
    "mitm.confdir": "~/.local/share/tap/mitmproxy",
    "mitm.upstream_ca": "/etc/ssl/certs/company-proxy.pem",
}
"""Example values for keys whose default makes a poor example (empty)."""


def config_problems(data: dict[str, Any], config_type: type[msgspec.Struct]) -> list[str]:
    """Every problem of decoded TOML `data` against `config_type` (a Struct of table Structs)."""
    tables = {f.name: f.type for f in msgspec.structs.fields(config_type)}
    problems: list[str] = []
    for table, values in data.items():
        section = tables.get(table)
        if section is None and not isinstance(values, dict):
            homes = [t for t, cls in tables.items() if table in {f.name for f in msgspec.structs.fields(cls)}]
            where = "it belongs under " + " or ".join(f"[{h}]" for h in homes) if homes else "see config.toml"
            problems.append(f"{table}: unknown key at the top level, outside any [table] ({where})")
        elif section is None:
            problems.append(_unknown(table, table, list(tables), "table"))
        elif not isinstance(values, dict):
            problems.append(f"{table}: expected a table ([{table}] and its keys below it), got {_shown(values)}")
        else:
            problems += _table_problems(table, values, section)
    return problems


def _table_problems(table: str, values: dict[str, Any], section: Any) -> list[str]:
    fields = {f.name: f for f in msgspec.structs.fields(section)}
    problems = []
    valid = {}
    for key, value in values.items():
        where = f"{table}.{key}"
        field = fields.get(key)
        if where in RETIRED:
            problems.append(f"{where}: {RETIRED[where]}")
        elif field is None:
            problems.append(_unknown(where, key, list(fields), "key"))
        else:
            problem = _value_problem(where, key, value, field)
            if problem:
                problems.append(problem)
            else:
                valid[key] = value
    try:  # the checks between keys, on the valid ones (the others are reported above)
        msgspec.convert(valid, section, strict=True)
    except msgspec.ValidationError as exc:
        problems.append(f"{table}: {_strip_path(str(exc))}")
    return problems


def _unknown(where: str, name: str, known: list[str], what: str) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {close[0]}?" if close else "check the spelling"
    listing = f"the tables are {', '.join(known)}" if what == "table" else "config.toml lists every option"
    return f"{where}: unknown {what}; {hint} ({listing})"


def _value_problem(where: str, key: str, value: Any, field: msgspec.structs.FieldInfo) -> str | None:
    """None when the value is valid for the field, else one line about it."""
    try:
        msgspec.convert(value, field.type, strict=True)
    except msgspec.ValidationError as exc:
        index = re.search(r"- at `\$\[(\d+)\]", str(exc))
    else:
        return None
    info = inspect.type_info(field.type)
    bad = value
    if index and isinstance(info, inspect.ListType) and isinstance(value, list):
        where, info, bad = f"{where}[{index.group(1)}]", info.item_type, value[int(index.group(1))]
    example = f"{key} = {_toml(_example(where.split('[')[0], field))}"
    if _url_without_scheme(info, bad):
        scheme = "http" if re.match(r"(localhost|127\.|\[?::1)", bad) else "https"
        return f'{where}: expected {_expected(info)}, got {_shown(bad)}: the scheme is missing; write {key} = "{scheme}://{bad}"'
    return f"{where}: expected {_expected(info)}, got {_shown(bad)}; e.g. {example}"


def _url_without_scheme(info: inspect.Type, value: Any) -> bool:
    return (
        isinstance(info, inspect.StrType)
        and info.pattern == URL_PATTERN
        and isinstance(value, str)
        and "://" not in value
        and bool(re.fullmatch(r"[^\s/]+(/\S*)?", value))
    )


def _expected(info: inspect.Type) -> str:
    """What a type allows, in words."""
    if isinstance(info, inspect.BoolType):
        return "true or false"
    if isinstance(info, inspect.LiteralType):
        return "one of " + ", ".join(json.dumps(v) for v in info.values)
    if isinstance(info, inspect.IntType):
        return "an integer" + _bounds(info)
    if isinstance(info, inspect.FloatType):
        return "a number" + _bounds(info)
    if isinstance(info, inspect.StrType):
        if info.pattern is not None:
            return PATTERNS.get(info.pattern, "a string of the form config.toml shows")
        return "a string" + (f" of at most {info.max_length} characters" if info.max_length is not None else "")
    if isinstance(info, inspect.ListType):
        return f"a list, each item {_expected(info.item_type)}"
    return "a value of the type config.toml shows"


def _bounds(info: inspect.IntType | inspect.FloatType) -> str:
    if info.ge is not None and info.le is not None:
        return f" from {info.ge} to {info.le}"
    limits = ((">=", info.ge), (">", info.gt), ("<=", info.le), ("<", info.lt))
    parts = [f"{op} {limit}" for op, limit in limits if limit is not None]
    return " " + " and ".join(parts) if parts else ""


def _example(where: str, field: msgspec.structs.FieldInfo) -> Any:
    if where in EXAMPLES:
        return EXAMPLES[where]
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return field.default


def _toml(value: Any) -> str:
    """A value as it is written in TOML (strings, numbers, booleans and lists of them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value) if isinstance(value, str) else str(value)


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    return repr(value) if isinstance(value, str) else _toml(value) if isinstance(value, list | bool) else str(value)


def _strip_path(message: str) -> str:
    return re.sub(r" - at `\$[^`]*`$", "", message)
