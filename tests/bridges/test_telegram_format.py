"""Splitting long answers and rendering model Markdown for Telegram (pure functions)."""

from __future__ import annotations

import html
import re

import pytest

from bridges.telegram.markdown import to_html, well_nested
from bridges.telegram.split import MAX_TEXT_LENGTH, split_message, utf16_len


def visible(markup: str) -> str:
    """The text a Telegram client shows for tap's HTML."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


class TestSplit:
    def test_short_text_is_one_message(self) -> None:
        assert split_message("  Hello there.\n") == ["Hello there."]

    def test_cuts_fall_on_paragraph_boundaries(self) -> None:
        paragraphs = [f"P{i} " + "x" * 1500 for i in range(6)]
        chunks = split_message("\n\n".join(paragraphs))
        assert chunks == ["\n\n".join(paragraphs[0:2]), "\n\n".join(paragraphs[2:4]), "\n\n".join(paragraphs[4:6])]

    def test_a_huge_paragraph_is_cut_at_lines_then_words(self) -> None:
        words = " ".join(f"word{i}" for i in range(2000))  # 16,889 characters, no newline
        chunks = split_message(words)
        assert len(chunks) == 5 and all(MAX_TEXT_LENGTH - 10 < utf16_len(c) <= MAX_TEXT_LENGTH for c in chunks[:-1])
        assert " ".join(chunks) == words and all(not c.startswith(" ") and not c.endswith(" ") for c in chunks)

    def test_limit_is_counted_in_utf16_units(self) -> None:
        text = "🐝" * 3000  # 6,000 UTF-16 units, one "word"
        chunks = split_message(text)
        assert [utf16_len(c) for c in chunks] == [4096, 6000 - 4096] and "".join(chunks) == text

    def test_code_blocks_are_never_cut_open(self) -> None:
        code = "```python\n" + "\n".join(f"print({i})  # line" for i in range(600)) + "\n```"
        text = "Intro paragraph.\n\n" + code + "\n\nOutro."
        chunks = split_message(text)
        assert all(utf16_len(c) <= MAX_TEXT_LENGTH for c in chunks)
        for chunk in chunks:
            assert chunk.count("```") % 2 == 0, chunk[:80]
        code_chunks = [c for c in chunks if "```" in c]
        assert len(code_chunks) >= 3 and all("```python\n" in c for c in code_chunks)
        body = [line for c in code_chunks for line in c.split("\n") if line.startswith("print(")]
        assert body == [f"print({i})  # line" for i in range(600)]

    def test_a_code_block_with_blank_lines_stays_together(self) -> None:
        text = "Before\n\n```\na\n\nb\n```\n\nAfter"
        assert split_message(text, limit=16) == ["Before", "```\na\n\nb\n```", "After"]

    def test_an_unclosed_fence_is_closed(self) -> None:
        assert split_message("```sh\nls -la") == ["```sh\nls -la\n```"]


class TestMarkdown:
    @pytest.mark.parametrize(
        ("markdown", "expected"),
        [
            ("**bold** and __strong__", "<b>bold</b> and <b>strong</b>"),
            ("*it* and _em_ but snake_case_name and 2*3*4", "<i>it</i> and <i>em</i> but snake_case_name and 2*3*4"),
            ("~~gone~~ `a<b> && c`", "<s>gone</s> <code>a&lt;b&gt; &amp;&amp; c</code>"),
            ("[docs](https://example.com/a_b_c?x=1&y=2)", '<a href="https://example.com/a_b_c?x=1&amp;y=2">docs</a>'),
            ("# Title\n- one\n* two", "<b>Title</b>\n• one\n• two"),
            ("1 < 2 & 3 > 2 <script>", "1 &lt; 2 &amp; 3 &gt; 2 &lt;script&gt;"),
            (
                "```py\nif a < b and x**2:\n    pass\n```",
                '<pre><code class="language-py">if a &lt; b and x**2:\n    pass</code></pre>',
            ),
            ("[evil](javascript:alert(1))", "[evil](javascript:alert(1))"),
            ("unpaired **bold and *star", "unpaired **bold and *star"),
        ],
    )
    def test_renders_a_safe_subset(self, markdown: str, expected: str) -> None:
        assert to_html(markdown) == expected

    def test_crossing_markers_give_up_instead_of_sending_broken_tags(self) -> None:
        assert to_html("**a *b** c*") is None

    @pytest.mark.parametrize(
        "markdown",
        ["**bold** _x_ [l](https://e.com) `c` ~~s~~", "# H\n- a\n```\nx\n```", "a & b < c **d**", "🐝 **é**"],
    )
    def test_visible_text_is_never_longer_and_tags_nest(self, markdown: str) -> None:
        markup = to_html(markdown)
        assert markup is not None and well_nested(markup)
        assert utf16_len(visible(markup)) <= utf16_len(markdown)
