"""A line of statements (Memory.topic) is ranked newest first in the places it holds, and the
block shows its older values under the newest, dated and marked earlier."""

from __future__ import annotations

from datetime import UTC, datetime

from tap.recall.engine import pack_block
from tap.recall.lines import line_of, with_lines
from tap.records import Memory, make_memory
from tap.tokens import count_tokens

JAN = datetime(2025, 1, 25, tzinfo=UTC).timestamp()
MAY = datetime(2025, 5, 11, tzinfo=UTC).timestamp()
OCT = datetime(2025, 10, 19, tzinfo=UTC).timestamp()


def statement(content: str, at: float, topic: str = "", kind: str = "fact") -> Memory:
    memory = make_memory(scope="me", content=content, kind=kind, sources=[content[:8]], valid_from=at, now=at)  # type: ignore[arg-type]
    memory.topic = topic
    return memory


def test_a_lines_newest_member_moves_up_to_the_lines_first_place() -> None:
    first = statement("The user's classical rating is 1840", JAN)
    second = statement("The user's rating went up to 1912", MAY, topic=first.id)
    third = statement("The user's rating is down to 1876", OCT, topic=first.id)
    other = statement("The user plays for Hackney on board 3", MAY)
    excerpt = statement("User: rating is 1840 fwiw", JAN, kind="episode")
    ranked = [(first, 0.9), (other, 0.8), (excerpt, 0.7), (second, 0.5), (third, 0.2)]
    assert [(m.content, s) for m, s in with_lines(ranked)] == [
        (third.content, 0.9),
        (first.content, 0.8),
        (other.content, 0.7),
        (excerpt.content, 0.5),
        (second.content, 0.2),
    ]
    assert line_of(first) == line_of(second) == line_of(third) == first.id
    assert line_of(excerpt) == ""


def test_a_ranking_without_lines_is_left_as_it_is() -> None:
    a, b = statement("The user lives in Leith", JAN), statement("The user bakes sourdough", MAY)
    assert with_lines([(a, 0.9), (b, 0.5)]) == [(a, 0.9), (b, 0.5)]


def test_the_block_shows_a_lines_older_values_under_its_newest() -> None:
    first = statement("The user's classical rating is 1840", JAN)
    newest = statement("The user's rating went up to 1912", MAY, topic=first.id)
    result = pack_block(with_lines([(first, 0.9), (newest, 0.6)]), 500)
    lines = result.block.splitlines()
    at = lines.index("- The user's rating went up to 1912")
    assert lines[at + 1] == "  - earlier (25 Jan 2025): The user's classical rating is 1840"
    assert "25 Jan 2025:" not in lines  # the older value's day has no heading of its own
    assert [r.memory.id for r in result.memories] == [newest.id, first.id]
    assert result.tokens == count_tokens(result.block)
