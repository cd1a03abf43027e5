"""Agent hook endpoints on tap's port: `POST /tap/hooks/{event}[?agent=claude|codex]`.

The request body is the hook JSON exactly as the agent sends it (Claude Code's `http` hook type
POSTs it; `tap hook EVENT` forwards its stdin here), and the response body is what the agent
reads back: the hook output JSON, or an empty body when there is nothing to add (both agents treat
an empty 2xx as success without output). `{event}` is either spelling (`user-prompt-submit`,
`UserPromptSubmit`). Authentication is the admin API's (bearer token, proxy.admin.require_token).

The work is done by an endpoint the composition root puts on the app under `hooks_key`
(tap.wiring.hook_service.ServerHooks); this module only adapts HTTP to it. Status codes: 200 with or
without a body; 400 for an unknown event or agent or a payload that is not a hook JSON object; 503
when the app serves no hooks. Anything that fails inside the endpoint is answered with an empty
200 (fail-open: an agent must never be held up or shown an error by its memory).
"""

from __future__ import annotations

from typing import Protocol

from aiohttp import web

from proxy.admin import error
from tap.runtime.priority import HOT_PATH


class HookEndpoint(Protocol):
    """Handles one hook event: `event` as in the URL, `agent` from `?agent=`, the raw body."""

    async def __call__(self, event: str, agent: str, body: bytes) -> bytes:
        """The answer body (empty: nothing to add); ValueError for a bad event, agent or payload."""
        ...


hooks_key = web.AppKey("tap_hooks", HookEndpoint)


async def hook(request: web.Request) -> web.Response:
    """One hook event (see the module docstring)."""
    endpoint = request.app.get(hooks_key)
    if endpoint is None:
        return error(503, "agent hooks are not served here")
    event, agent = request.match_info["event"], request.query.get("agent", "claude")
    try:
        with HOT_PATH.serving():  # an agent waits on it: background writers pause meanwhile (tap.runtime.priority)
            answer = await endpoint(event, agent, await request.read())
    except ValueError as exc:
        return error(400, str(exc))
    if not answer:
        return web.Response(status=200)
    return web.Response(body=answer, content_type="application/json")


def add_hook_routes(app: web.Application) -> None:
    """Register the hook endpoints on the app."""
    app.router.add_post("/tap/hooks/{event}", hook)
