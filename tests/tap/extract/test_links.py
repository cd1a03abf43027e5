"""Updates no rule names: the link probe ties a statement to an older one of the very same holder;
surely enough with a reported change, the newer replaces the older; less surely, they are one line
(tap.extract.reconcile, rule 6). The probe here is one whose score the test sets through the
cosine, so each decision is the rule's, not the trained weights'."""

from __future__ import annotations

from tap.candidates import CandidateMemory
from tap.config import parse_config
from tap.extract.reconcile import Evidence, Links, decide, same_holder
from tap.language.probes import LINK_FEATURES, Probe
from tap.records import Hit, Memory, make_memory

DAY = 86400.0
T0 = 1_750_000_000.0
CFG = parse_config("").extract
# score = sigmoid(20 * cosine - 10): 0.5 at cosine 0.5, 0.98 at 0.7, 0.02 at 0.3
PROBE = Probe(weights=(20.0, *[0.0] * (len(LINK_FEATURES) - 1)), bias=-10.0, threshold=0.9)
LINKS = Links(PROBE, topic_threshold=0.4)


def stored(content: str, *, holder: str = "user", at: float = T0, kind: str = "fact") -> Memory:
    memory = make_memory(scope="me", content=content, kind=kind, sources=[f"t{at}"], valid_from=at, now=at)  # type: ignore[arg-type]
    memory.holder = holder
    return memory


def candidate(content: str, *, holder: str = "user", at: float = T0 + 90 * DAY) -> CandidateMemory:
    return CandidateMemory(
        content=content, kind="fact", importance=3, tags=[], turn_ids=["new"], valid_from=at, holder=holder
    )


def evidence(old: Memory, cosine: float, *, change: bool) -> Evidence:
    return Evidence(neighbours=[Hit(memory=old, score=cosine)], change=0.8 if change else 0.1, reports_change=change)


def test_a_sure_link_with_a_reported_change_replaces_the_older_statement() -> None:
    old = stored("The user's classical rating is 1840")
    plan = decide(candidate("Rating went up to 1912"), evidence(old, 0.7, change=True), CFG, LINKS)
    assert (plan.action, plan.target) == ("supersede", old)


def test_without_a_reported_change_a_sure_link_makes_one_line() -> None:
    old = stored("The user's classical rating is 1840")
    plan = decide(candidate("Rating went up to 1912"), evidence(old, 0.7, change=False), CFG, LINKS)
    assert (plan.action, plan.topic) == ("add", old.id)


def test_a_weaker_link_makes_one_line_and_joins_the_older_ones_line() -> None:
    old = stored("The user's classical rating is 1840")
    old.topic = "m_first"
    plan = decide(candidate("Rating went up to 1912"), evidence(old, 0.52, change=True), CFG, LINKS)
    assert (plan.action, plan.topic) == ("add", "m_first")


def test_no_link_below_the_line_threshold() -> None:
    old = stored("The user's classical rating is 1840")
    plan = decide(candidate("Rating went up to 1912"), evidence(old, 0.3, change=True), CFG, LINKS)
    assert (plan.action, plan.topic) == ("add", "")


def test_another_persons_statement_never_replaces_the_users() -> None:
    old = stored("The user is expecting their first baby")
    news = candidate("The user's sister's baby was born", holder="user:sister")
    plan = decide(news, evidence(old, 0.9, change=True), CFG, LINKS)
    assert (plan.action, plan.topic) == ("add", "")


def test_a_newer_statement_is_never_replaced_by_an_older_one() -> None:
    newer = stored("The user's rating went up to 1912", at=T0 + 200 * DAY)
    plan = decide(candidate("Classical rating is 1840"), evidence(newer, 0.9, change=True), CFG, LINKS)
    assert plan.action == "add" and plan.topic == ""


def test_without_the_probe_nothing_is_linked() -> None:
    old = stored("The user's classical rating is 1840")
    plan = decide(candidate("Rating went up to 1912"), evidence(old, 0.9, change=True), CFG, None)
    assert (plan.action, plan.topic) == ("add", "")


def test_same_holder_compares_holders_or_else_the_opening_words() -> None:
    assert same_holder("user", "x", stored("y", holder="user"))
    assert not same_holder("user:sister", "x", stored("y", holder="user"))
    assert same_holder("", "Atlas runs on postgres 16 now", stored("Atlas is a django app", holder=""))
    assert not same_holder("", "Beacon uses mongo", stored("Atlas is a django app", holder=""))
