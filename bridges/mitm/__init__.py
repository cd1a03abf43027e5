"""The mitmproxy way in: an addon that gives API requests memories and taps their replies.

For clients that cannot change their base URL: a forward proxy (`HTTPS_PROXY`, tap's CA trusted)
that intercepts only the configured API hosts, and reverse proxies per upstream (plain HTTP, no
CA).  The policy is the interception core's (tap.intercept.core), exactly as for the aiohttp proxy.

Modules: `hosts` (which hosts are intercepted, reverse targets), `link` (calls into the core on its
loop), `addon` (mitmproxy's hooks), `runner` (mitmproxy on the current loop or in a thread), `ca`
(tap's CA and how clients trust it), `remote` (recall and ingestion through a running `tap serve`),
`spool` (captured exchanges waiting on disk while that server does not answer).
`runner` and `addon` import mitmproxy (about two seconds): the server and CLI import them only when
the mitm way in is used; `spool`, `hosts` and `ca` (but to create the CA) import none of it.
"""
