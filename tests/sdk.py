"""The LLM SDKs, imported when a test first uses them.

`anthropic` takes ~2.6 s to import and `openai` ~0.7 s, and their first requests build pydantic
models for a second more. Under `./dev test-fast` every xdist worker collects every test module,
so a module-level `import anthropic` cost each worker those seconds, whether or not it then ran a
test that used the SDK. A test module that uses an SDK binds it through `sdk()` instead (the real
module for the type checker), and tests/conftest.py puts every such module's tests in one xdist
group: one worker imports the SDKs, the others never do.

`sdk()` returns a stand-in that imports the SDK on the first read of a public attribute
(`anthropic.AsyncAnthropic`, `openai.APIError`, …) and answers private and dunder probes itself:
pytest looks at every attribute of a test module while collecting (`_mock_name`, `__test__`), and
a lazily loaded module (importlib.util.LazyLoader) would be imported by the first such look.
"""

from __future__ import annotations

import importlib
from typing import Any

SDKS = ("anthropic", "openai")


class SDK:
    """Stand-in for an SDK package: the package is imported on the first public attribute read."""

    def __init__(self, name: str) -> None:
        self.sdk_name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        return getattr(importlib.import_module(self.sdk_name), attribute)

    def __repr__(self) -> str:
        return f"<SDK {self.sdk_name}, imported on first use>"


def sdk(name: str) -> Any:
    """The SDK package `name` (see the module docstring)."""
    if name not in SDKS:
        raise ValueError(f"not an SDK of tests/sdk.py: {name}")
    return SDK(name)


# Test helpers whose users run an SDK without naming it (the Telegram bridge's replies go through
# the anthropic SDK to a fake Messages API).
SDK_HELPERS = frozenset({"tests.bridges.telegram_harness"})


def uses_sdk(module: object) -> bool:
    """Whether a test module binds an SDK through `sdk()` at its top level, or uses a helper of
    `SDK_HELPERS`."""
    return any(
        isinstance(value, SDK) or getattr(value, "__module__", None) in SDK_HELPERS
        for value in vars(module).values()
        if not isinstance(value, type(importlib))  # a module's attributes are its own business
    )
