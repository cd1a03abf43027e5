"""A replacing statement brings the outdated excerpt of the value it replaced (tap.recall.replaced_turns)."""

from __future__ import annotations

from collections.abc import Sequence

from tap.recall.replaced_turns import with_history
from tap.records import OUTDATED_TAG, Memory, make_memory


def _ids(memory: Memory, turn: str) -> list[str]:
    return [f"x-{memory.conversation}-{turn}-{i}" for i in range(3)]


def test_the_old_values_excerpts_follow_the_statement_and_its_own_turn() -> None:
    v1 = make_memory(scope="s", content="The user has three bikes", conversation="c1", sources=["t1"])
    v2 = make_memory(scope="s", content="The user has four bikes now", conversation="c2", sources=["t5"])
    v3 = make_memory(scope="s", content="The user sold a bike, three left", conversation="c3", sources=["t9"])
    v2.supersedes, v1.superseded_by = v1.id, v2.id
    v3.supersedes, v2.superseded_by = v2.id, v3.id
    x1 = make_memory(scope="s", content="User: I ride my three bikes", kind="episode", tags=[OUTDATED_TAG])
    x1.id = "x-c1-t1-0"
    x2 = make_memory(scope="s", content="User: got a gravel bike, that's four", kind="episode", tags=[OUTDATED_TAG])
    x2.id = "x-c2-t5-1"
    plain = make_memory(scope="s", content="User: the other passage", kind="episode")  # not tagged: not history
    plain.id = "x-c2-t5-0"
    other = make_memory(scope="s", content="The user rides on Sundays")
    everything = {m.id: m for m in (v1, v2, v3, x1, x2, plain, other)}
    reads: list[Sequence[str]] = []

    def fetch(ids: Sequence[str]) -> list[Memory]:
        reads.append(ids)
        return [everything[i] for i in ids if i in everything]

    own = make_memory(scope="s", content="User: sold a bike, three left", kind="episode", sources=["t9"])
    ranked = with_history([(v3, 1.0), (other, 0.9), (x1, 0.1), (own, 0.05)], fetch, fetch, _ids)
    # the new value, its own turn verbatim, then its history newest first, then the rest
    assert [m.id for m, _ in ranked] == [v3.id, own.id, x2.id, x1.id, other.id]
    scores = dict((m.id, s) for m, s in ranked)
    assert scores[x2.id] < scores[own.id] < scores[v3.id] and scores[x1.id] <= 0.1  # never above the new value
    assert len(reads) == 4  # two versions back: one read of statements and one of excerpts each


def test_nothing_is_read_without_a_replacing_statement_and_history_ranked_first_stays_put() -> None:
    calls: list[Sequence[str]] = []

    def fetch(ids: Sequence[str]) -> list[Memory]:
        calls.append(ids)
        return []

    plain = make_memory(scope="s", content="The user rides on Sundays")
    assert with_history([(plain, 1.0)], fetch, fetch, _ids) == [(plain, 1.0)] and not calls
    old = make_memory(scope="s", content="The user has three bikes", conversation="c1", sources=["t1"])
    new = make_memory(scope="s", content="The user has four bikes", conversation="c2", sources=["t5"])
    new.supersedes = old.id
    excerpt = make_memory(scope="s", content="User: three bikes", kind="episode", tags=[OUTDATED_TAG])
    excerpt.id = "x-c1-t1-0"
    everything = {m.id: m for m in (old, excerpt)}
    ranked = [(excerpt, 2.0), (new, 1.0)]  # a question about history: the old turn ranks first by itself

    def read(ids: Sequence[str]) -> list[Memory]:
        return [everything[i] for i in ids if i in everything]

    assert with_history(ranked, read, read, _ids) == ranked
