"""Values of one thing over time (tap.recall.lines): recall finds the line among the statements
that answer the question, moves its newest up for a question about the present, and the block
shows its older values under the newest, dated and marked earlier."""

from __future__ import annotations

from datetime import UTC, datetime

from tap.recall.engine import pack_block
from tap.recall.lines import answer_lines, with_lines
from tap.records import Memory, make_memory
from tap.tokens import count_tokens

JAN = datetime(2025, 1, 25, tzinfo=UTC).timestamp()
MAY = datetime(2025, 5, 11, tzinfo=UTC).timestamp()
OCT = datetime(2025, 10, 19, tzinfo=UTC).timestamp()


def statement(content: str, at: float, *, holder: str = "user", kind: str = "fact") -> Memory:
    memory = make_memory(scope="me", content=content, kind=kind, sources=[content[:9]], valid_from=at, now=at)  # type: ignore[arg-type]
    memory.holder = holder
    return memory


FIRST = statement("The user's club rating is 1840", JAN)
SECOND = statement("The user's rating went up to 1912 after the open", MAY)
THIRD = statement("Down to 1876 on the rating list after the league weekend", OCT)
OTHER = statement("The user plays for Hackney on board 3", MAY)
FRIEND = statement("Chris's rating is 2100", OCT, holder="chris")
EXCERPT = statement("User: rating is 1840 fwiw", JAN, kind="episode")


def test_a_line_is_the_answers_of_one_holder_that_share_a_word() -> None:
    ranked = [(FIRST, 0.9), (OTHER, 0.8), (EXCERPT, 0.7), (FRIEND, 0.6), (SECOND, 0.5), (THIRD, 0.3)]
    lines = answer_lines(ranked)
    assert lines == {FIRST.id: FIRST.id, SECOND.id: FIRST.id, THIRD.id: FIRST.id}


def test_a_statement_far_below_the_best_answer_is_in_no_line() -> None:
    assert answer_lines([(FIRST, 0.9), (SECOND, 0.2)]) == {}


def test_a_lines_newest_moves_up_to_the_lines_first_place() -> None:
    ranked = [(FIRST, 0.9), (OTHER, 0.8), (EXCERPT, 0.7), (SECOND, 0.5), (THIRD, 0.3)]
    moved = with_lines(ranked, answer_lines(ranked))
    assert [(m.content, s) for m, s in moved] == [
        (THIRD.content, 0.9),
        (FIRST.content, 0.8),
        (OTHER.content, 0.7),
        (EXCERPT.content, 0.5),
        (SECOND.content, 0.3),
    ]


def test_a_ranking_without_lines_is_left_as_it_is() -> None:
    ranked = [(FIRST, 0.9), (OTHER, 0.5)]
    assert with_lines(ranked, answer_lines(ranked)) == ranked


def test_the_block_shows_a_lines_older_values_under_its_newest() -> None:
    ranked = [(FIRST, 0.9), (SECOND, 0.6)]
    result = pack_block(with_lines(ranked, answer_lines(ranked)), 500)
    lines = result.block.splitlines()
    at = lines.index("- The user's rating went up to 1912 after the open")
    assert lines[at + 1] == "  - earlier (25 Jan 2025): The user's club rating is 1840"
    assert "25 Jan 2025:" not in lines  # the older value's day has no heading of its own
    assert [r.memory.id for r in result.memories] == [SECOND.id, FIRST.id]
    assert result.tokens == count_tokens(result.block)
