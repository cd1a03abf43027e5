"""Model Markdown → Telegram HTML (`parse_mode="HTML"`), pure.

Models answer in CommonMark-flavoured Markdown. Telegram's MarkdownV2 rejects a message for any
unescaped `_*[]()~>#+-=|{}.!`, which model output is full of; so tap escapes everything and
re-creates a safe subset with the few tags Telegram's HTML mode accepts:

    ```lang fenced code```  → <pre><code class="language-lang">   `code` → <code>
    **bold** / __bold__      → <b>      *italic* / _italic_ → <i>      ~~strike~~ → <s>
    [label](https://…)       → <a href>  # Heading → <b>Heading</b>    "- item" → "• item"

Invariants:
- everything else is text: `&`, `<` and `>` are always escaped, so no input can inject a tag;
- nothing is interpreted inside code; URLs are never touched by emphasis rules (placeholders);
- a marker that does not pair up stays literal; if markers cross (`**a *b** c*`) and the tags
  would not nest, `to_html` returns None and the caller sends plain text instead of letting
  Telegram reject it (Telegram's own "can't parse entities" answer is the second safety net);
- the visible text is never longer than the input (markup is only removed or replaced 1:1), so
  a chunk cut by bridges.telegram.split still fits after rendering.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

_FENCE = re.compile(r"^\s{0,3}```\s*([\w+#.-]*)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^\s)\"<>]+)\)")
_EMPHASIS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*"), "b"),
    (re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)"), "b"),
    (re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"), "s"),
    (re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])"), "i"),
    (re.compile(r"(?<![\w_])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?![\w_])"), "i"),
]
_TAG = re.compile(r"<(/?)([a-z]+)[^>]*>")
_PLACEHOLDER = "\x00{}\x00"
_RESTORE = re.compile("\x00(\\d+)\x00")


def escape(text: str) -> str:
    """Text safe inside Telegram HTML (`&`, `<`, `>`; quotes are harmless outside attributes)."""
    return html.escape(text, quote=False)


def _pre(lines: list[str], lang: str) -> str:
    attr = f' class="language-{escape(lang)}"' if lang else ""
    return f"<pre><code{attr}>{escape(chr(10).join(lines))}</code></pre>"


def _emphasis(text: str) -> str:
    """Links, bold, strike and italic on already-escaped text (links are protected first)."""
    saved: list[str] = []

    def stash(value: str) -> str:
        saved.append(value)
        return _PLACEHOLDER.format(len(saved) - 1)

    text = _LINK.sub(lambda m: stash(f'<a href="{m.group(2)}">') + m.group(1) + stash("</a>"), text)
    for pattern, tag in _EMPHASIS:
        text = pattern.sub(_wrap(tag), text)
    return _RESTORE.sub(lambda m: saved[int(m.group(1))], text)


def _wrap(tag: str) -> Callable[[re.Match[str]], str]:
    return lambda m: f"<{tag}>{m.group(1)}</{tag}>"


def inline(text: str) -> str:
    """One line of prose: code spans verbatim, the rest escaped and emphasised."""
    out: list[str] = []
    last = 0
    for match in _CODE_SPAN.finditer(text):
        out.append(_emphasis(escape(text[last : match.start()])))
        out.append(f"<code>{escape(match.group(2).strip())}</code>")
        last = match.end()
    out.append(_emphasis(escape(text[last:])))
    return "".join(out)


def _line(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        return f"<b>{inline(heading.group(1))}</b>"
    bullet = _BULLET.match(line)
    if bullet:
        return f"{bullet.group(1)}• {inline(bullet.group(2))}"
    return inline(line)


def render(markdown: str) -> str:
    """The HTML for `markdown`, tags not yet checked (see `to_html`)."""
    out: list[str] = []
    code: list[str] | None = None
    lang = ""
    for line in markdown.replace("\x00", "").split("\n"):  # NUL is the placeholder marker
        fence = _FENCE.match(line)
        if code is None and fence:
            code, lang = [], fence.group(1)
        elif code is not None and fence:
            out.append(_pre(code, lang))
            code = None
        elif code is not None:
            code.append(line)
        else:
            out.append(_line(line))
    if code is not None:
        out.append(_pre(code, lang))
    return "\n".join(out)


def well_nested(markup: str) -> bool:
    """True when every tag is closed in the reverse order it was opened."""
    stack: list[str] = []
    for match in _TAG.finditer(markup):
        closing, name = match.group(1), match.group(2)
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


def to_html(markdown: str) -> str | None:
    """Telegram HTML for `markdown`, or None when its emphasis markers cross (send plain text)."""
    markup = render(markdown)
    return markup if well_nested(markup) else None
