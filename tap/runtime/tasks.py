"""The only place tap creates asyncio tasks: each is named and strongly referenced until done.

asyncio keeps only weak references to tasks, so a fire-and-forget task can be garbage-collected
mid-flight; keeping them in a set here prevents that and lets shutdown wait for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)
_running: set[asyncio.Task[Any]] = set()


def _done(task: asyncio.Task[Any]) -> None:
    _running.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s failed", task.get_name(), exc_info=task.exception())


def create_task[T](coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
    """Start `coro` as a named task that cannot be garbage-collected before it ends."""
    task = asyncio.create_task(coro, name=name)
    _running.add(task)
    task.add_done_callback(_done)
    return task


def running_tasks() -> set[asyncio.Task[Any]]:
    """Tasks started here that have not finished (for shutdown)."""
    return set(_running)
