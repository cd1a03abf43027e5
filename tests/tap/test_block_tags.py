"""tap's own memory block is taken back out of any text, and nothing else is."""

from __future__ import annotations

import pytest

from tap.block_tags import CLOSE, OPEN, remove_blocks
from tap.recall.engine import FOOTER, HEADER
from tap.scrub import scrub

BLOCK = f"{HEADER}\n25 May 2026:\n- The user wants the study painted teal\n{FOOTER}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"Which colour for the study?\n{BLOCK}", "Which colour for the study?"),
        (f"Which colour?\n\n{BLOCK}\n\nand the hallway?", "Which colour?\n\nand the hallway?"),
        (f"{BLOCK}\n{BLOCK}", ""),
        (f"question {OPEN}\nNotes from earlier conversations, cut sho", "question"),
        (f"question\n{BLOCK} {CLOSE}", "question"),
        (
            "a <recalled-memories-ish> tag of someone else's stays",
            "a <recalled-memories-ish> tag of someone else's stays",
        ),
        ("plain text", "plain text"),
    ],
)
def test_remove_blocks(text: str, expected: str) -> None:
    assert remove_blocks(text) == expected
    assert remove_blocks(remove_blocks(text)) == remove_blocks(text)


def test_the_block_recall_renders_is_the_block_removed() -> None:
    assert HEADER.startswith(OPEN) and FOOTER == CLOSE
    text = "no block here"
    assert remove_blocks(text) is text


def test_scrub_removes_the_block_before_anything_else() -> None:
    assert scrub(f"my key is sk-ant-api03-Xy7vQ2mN9pL4kR8sT1uW6zA3bC5dE0fG\n{BLOCK}") == "my key is [REDACTED]"
    assert scrub(f"<private>x</private>hi\n{BLOCK}") == "hi"
