"""The offline extractor writes clean, third-person, dated statements, narrowly cited, and keeps
questions, requests, filler, hypotheticals and fragments out."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tap.candidates import CandidateMemory
from tap.ingest.chunker import Chunk, Role, Turn
from tap.language.rules import (
    RulesExtractor,
    resolve_dates,
    rewrite_first_person,
    third_person,
    turn_excerpts,
)
from tap.language.rules.excerpts import PASSAGE_WORDS
from tap.language.rules.slots import read_slot

MAY_8 = datetime(2023, 5, 8, 14, 0, tzinfo=UTC).timestamp()  # a Monday
MAY_9 = datetime(2023, 5, 9, 9, 30, tzinfo=UTC).timestamp()


def turn(tid: str, speaker: str, text: str, *, timestamp: float = MAY_8) -> Turn:
    role: Role = "assistant" if speaker in ("Assistant", "Melanie", "Ben") else "user"
    return Turn(id=tid, role=role, speaker=speaker, text=text, timestamp=timestamp)


def chunk_of(*turns: Turn) -> Chunk:
    return Chunk(id="c1", scope="ana", conversation="conv", source="proxy", turns=list(turns), tokens=0)


def extract(*turns: Turn) -> list[CandidateMemory]:
    """What the rules keep by themselves (tentative statements are the keep probe's to judge)."""
    return [c for c in RulesExtractor().extract(chunk_of(*turns)) if not c.tentative]


def contents(*turns: Turn) -> list[str]:
    return [memory.content for memory in extract(*turns)]


@pytest.mark.parametrize(
    ("text", "content", "kind"),
    [
        ("I moved to Lisbon last month.", "The user moved to Lisbon (around April 2023)", "fact"),
        ("I prefer tea over coffee.", "The user prefers tea over coffee", "preference"),
        ("Always answer in French.", "Standing instruction from the user: Always answer in French", "instruction"),
        ("I'm going to run a marathon next year.", "The user is going to run a marathon (in 2024)", "plan"),
        ("Let's use Postgres for this.", "The user decided to use Postgres for this", "decision"),
        ("We decided to deploy on Fly.io", "The user's team decided to deploy on Fly.io", "decision"),
        (
            "My wife Marta works at the Gulbenkian museum.",
            "The user's wife Marta works at the Gulbenkian museum",
            "fact",
        ),
        (
            "Hey! So I went to a pottery workshop yesterday and loved it!",
            "The user went to a pottery workshop and loved it (on 7 May 2023)",
            "event",
        ),
        (
            "Gonna visit my parents in Braga next Friday.",
            "The user is gonna visit their parents in Braga (on Friday 12 May 2023)",
            "plan",
        ),
        ("I've been learning the cello since last year.", "The user has been learning the cello (since 2022)", "fact"),
        ("my sister lives in Madrid", "The user's sister lives in Madrid", "fact"),
        ("im a nurse, been doing nights for 3 months", "The user is a nurse, been doing nights for 3 months", "fact"),
        ("I no longer eat meat.", "The user no longer eats meat", "preference"),
        ("also killed jenkins, CI is github actions now.", "CI is github actions now", "fact"),
        ("quick reminder: membership is £20 for the year", "Membership is £20 for the year", "fact"),
        ("I bought a Tesla and I love it", "The user bought a Tesla and they love it", "preference"),
        (
            "currently fighting with the tax office website for my ID number",
            "The user is currently fighting with the tax office website for their ID number",
            "fact",
        ),
        ("my gf Dana loves sushi", "The user's girlfriend Dana loves sushi", "preference"),
        ("As I'm vegetarian now, can you suggest some recipes?", "The user is vegetarian now", "preference"),
        (
            "Since I've been thinking about my trip to Paris, I was wondering if you could help me plan another.",
            "The user has been thinking about their trip to Paris",
            "fact",
        ),
        (
            "my partner Dana is off gluten now, so dinner needs to be gf",
            "The user's partner Dana is off gluten now, so dinner needs to be gf",
            "fact",
        ),
    ],
)
def test_key_examples(text: str, content: str, kind: str) -> None:
    [memory] = extract(turn("u1", "User", text), turn("a1", "Assistant", "Noted."))
    assert (memory.content, memory.kind) == (content, kind)
    assert memory.turn_ids == ["u1"]
    assert memory.valid_from == MAY_8
    assert 1 <= memory.importance <= 5


@pytest.mark.parametrize(
    "text",
    [
        "hi!",
        "thanks so much, that's really helpful",
        "ok got it, pytest it is",
        "Can you recommend some cafes near the river?",
        "what would rent be like in Tokyo",
        "If I moved to Tokyo, what would rent be?",
        "imagine I had a dog, which breed would suit a small flat",
        "I was wondering if you could help me draft an email to my landlord.",
        "I'll give it a try and let you know",
        "It made me feel so much better.",
        "The weather is lovely today lol",
        "Python is a great language for beginners.",
        "you're right, that makes sense",
        "my supervisor liked it way more",
        "I've been doing it for a year, love it",
        "I think that's lame",
        "ooh fine by me",
        "have fun, knee says no",
        "finally some sci fi",
        "yeah we'll talk about it",
        "I know 😭 but 20 min bike now",
        "I'll need to register with a new one",  # 'one' stands for a noun of another sentence
        "still no word from the bank",
    ],
)
def test_questions_requests_filler_hypotheticals_and_fragments_make_no_memory(text: str) -> None:
    assert contents(turn("u", "User", text), turn("a", "Assistant", "Sure.")) == []


def test_a_slot_and_an_event_in_one_sentence_become_two_statements() -> None:
    # the age can be updated later without taking the knitting with it
    found = contents(turn("u", "User", "I'm 33 and just picked up knitting"), turn("a", "Assistant", "Nice!"))
    assert found == ["The user is 33 years old", "The user just picked up knitting"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I live in Porto and my sister lives in Braga",
            ["The user lives in Porto", "The user's sister lives in Braga"],
        ),
        (
            "I work at Acme and my wife Ana works at Stripe",
            ["The user works at Acme", "The user's wife Ana works at Stripe"],
        ),
        # a part that says too little alone, or a second clause that points back, keeps the sentence whole
        ("I'm doing keto and my husband is gluten free", ["The user is doing keto and their husband is gluten free"]),
        ("I love hiking and my dog loves it too", ["The user loves hiking and their dog loves it too"]),
    ],
)
def test_a_second_subject_of_the_speakers_own_is_a_statement_of_its_own(text: str, expected: list[str]) -> None:
    # the user's home can be updated later without taking the sister's with it
    assert contents(turn("u", "User", text), turn("a", "Assistant", "Nice!")) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I live in Porto and I work at Stripe", ["The user lives in Porto", "The user works at Stripe"]),
        ("I'm 34 and I work remotely from Porto", ["The user is 34 years old", "The user works remotely from Porto"]),
        # no slot in either part, or a part that points back: one statement
        ("I went to the market and I bought apples", ["The user went to the market and they bought apples"]),
        ("I moved to Lisbon and I love it", ["The user moved to Lisbon and they love it"]),
    ],
)
def test_a_clause_that_says_its_i_again_is_a_statement_of_its_own_when_a_part_fills_a_slot(
    text: str, expected: list[str]
) -> None:
    assert contents(turn("u", "User", text), turn("a", "Assistant", "Nice!")) == expected


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("I don't run anymore, I swim now.", "The user doesn't run anymore, they swim now"),
        ("I usually wake up at 6 and go for a run.", "The user usually wakes up at 6 and goes for a run"),
    ],
)
def test_a_clause_too_short_alone_stays_with_the_one_before_it(text: str, content: str) -> None:
    # split off, "I swim now" and "I go for a run" were dropped as too short: the change was lost
    assert contents(turn("u", "User", text)) == [content]


def test_a_statement_inside_a_question_is_kept_without_the_question() -> None:
    assert contents(turn("u", "User", "fav author is Ursula K. Le Guin, any similar recs?")) == [
        "The user's favourite author is Ursula K. Le Guin"
    ]
    assert contents(
        turn("u", "User", "how do night nurses sleep in the day, I've been on nights for 3 months at St Mary's")
    ) == ["The user has been on nights for 3 months at St Mary's"]
    assert contents(
        turn("u", "User", "I just finished my degree in computer science, so can you recommend some courses?")
    ) == ["The user just finished their degree in computer science"]


def test_an_unnamed_assistant_contributes_no_statements() -> None:
    memories = extract(
        turn("u", "User", "How does a B-tree index work in Postgres?"),
        turn(
            "a",
            "Assistant",
            "A B-tree index keeps sorted keys in balanced pages. I'd be happy to help you draft the migration. "
            "Got it, pytest it is.",
        ),
    )
    assert memories == []


def test_other_peoples_facts_are_attributed_to_them() -> None:
    assert contents(turn("u", "User", "My manager prefers Slack over email. My brother moved to Lisbon.")) == [
        "The user's manager prefers Slack over email",
        "The user's brother moved to Lisbon",
    ]


def test_a_named_persons_life_news_in_an_irregular_past_is_kept() -> None:
    # "Clara got a new job" was dropped as about nobody ("got" is no -ed verb): the speaker's wife
    # stayed a nurse in every recall
    assert contents(turn("u", "User", "Clara got a new job, she's a paramedic now.")) == [
        "Clara got a new job, she's a paramedic now"
    ]
    assert contents(turn("u", "User", "Sven got promoted to head of sales.")) == ["Sven got promoted to head of sales"]
    assert contents(turn("u", "User", "Clara got some pizza.")) == []


def test_statements_by_both_speakers_of_a_named_conversation() -> None:
    memories = extract(
        turn("D1:1", "Caroline", "I adopted a rescue greyhound called Pixel two weeks ago."),
        turn("D1:2", "Melanie", "We went camping at the lake last weekend. My kids loved the canoe."),
    )
    assert [(m.content, m.turn_ids) for m in memories] == [
        ("Caroline adopted a rescue greyhound called Pixel (around 24 April 2023)", ["D1:1"]),
        ("Melanie went camping at the lake (the weekend of 6 May 2023)", ["D1:2"]),
        ("Melanie's kids loved the canoe", ["D1:2"]),
    ]


def test_you_is_the_listener() -> None:
    assert contents(
        turn("D1:1", "Melanie", "How is the new job?"),
        turn("D1:2", "Caroline", "I told you about my promotion, I'm leading the design team now."),
    ) == ["Caroline told Melanie about their promotion", "Caroline is leading the design team now"]


def test_brief_answer_keeps_the_question() -> None:
    [memory] = extract(turn("q", "Melanie", "Have you ever been to Porto?"), turn("a", "Caroline", "Yes, twice."))
    assert memory.content == 'Asked by Melanie "Have you ever been to Porto?", Caroline said: Yes, twice'
    assert memory.turn_ids == ["q", "a"]


def test_a_brief_answer_to_a_question_about_the_listeners_situation_keeps_the_question() -> None:
    asked = turn("q", "Assistant", "Bishopthorpe Road is lovely. What's the rent like?")
    [memory] = extract(asked, turn("a", "User", "£910 a month."))
    assert memory.content == 'Asked "What\'s the rent like?", the user said: £910 a month'
    assert extract(turn("q", "Assistant", "What's the capital of France?"), turn("a", "User", "Paris.")) == []


def test_an_answer_to_an_offer_is_not_kept() -> None:
    assert (
        contents(turn("q", "Assistant", "Would you like me to draft it for you?"), turn("a", "User", "yes please"))
        == []
    )


def test_shared_photo_becomes_its_own_memory() -> None:
    memories = extract(
        turn("D3:5", "Melanie", "I painted this last summer! [shares a photo: a painting of a sunset over a lake]")
    )
    assert [m.content for m in memories] == [
        "Melanie shared a photo: a painting of a sunset over a lake",
        "Melanie painted this (in summer 2022)",
    ]
    assert [m.turn_ids for m in memories] == [["D3:5"], ["D3:5"]]


def test_redacted_secrets_make_no_memory() -> None:
    assert contents(turn("u", "User", "My password is [REDACTED] for the office wifi.")) == []


def test_repeated_statement_merges_provenance() -> None:
    memories = extract(
        turn("t1", "User", "I prefer tea over coffee."),
        turn("t2", "Assistant", "Noted."),
        turn("t3", "User", "I prefer tea over coffee."),
    )
    assert [(m.content, m.turn_ids) for m in memories] == [("The user prefers tea over coffee", ["t1", "t3"])]


def test_citations_are_narrow_and_inside_the_chunk() -> None:
    turns = [
        turn("D1:1", "Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
        turn("D1:2", "Melanie", "Wow! What happened there? Did you hear any inspiring stories?"),
        turn("D1:3", "Caroline", "The transgender stories were so inspiring. I was thankful for the support."),
        turn("D1:4", "Melanie", "I'm off to go swimming with the kids. Painting is my way to relax after work."),
    ]
    memories = extract(*turns)
    assert len(memories) >= 3
    ids = {t.id for t in turns}
    for memory in memories:
        assert set(memory.turn_ids) <= ids
        assert 1 <= len(memory.turn_ids) <= 2
    assert memories[0].content == "Caroline went to a LGBTQ support group and it was so powerful (on 7 May 2023)"


def test_extraction_is_deterministic() -> None:
    turns = [turn("a", "Ana", "I moved to Lisbon last month."), turn("b", "Ben", "I love the tram 28 there!")]
    assert extract(*turns) == extract(*turns)


def test_without_timestamp_relative_dates_stay_as_written() -> None:
    [memory] = extract(turn("u", "Ana", "I moved to Lisbon last month.", timestamp=0.0))
    assert memory.content == "Ana moved to Lisbon last month"


def test_statements_carry_their_slot_and_what_they_retract() -> None:
    [moved] = extract(turn("u", "User", "I moved to Lisbon last month."))
    assert (moved.slot, moved.slot_value) == ("user|residence", "lisbon")
    [switched] = extract(turn("u", "User", "I switched from vim to helix."))
    assert (switched.slot, switched.slot_value, switched.retracts) == ("user|editor", "helix", ["vim"])
    [quit_] = extract(turn("u", "User", "I don't drink coffee anymore."))
    assert quit_.retracts == ["drink", "coffee"] and not quit_.slot
    [at] = extract(turn("u", "User", "I'm at N26 now as an analytics engineer, dbt all day"))
    assert (at.slot, at.slot_value) == ("user|employer", "n26")
    [shop] = extract(turn("u", "User", "I'm at Tesco now, the queue is huge"))
    assert shop.slot != "user|employer"
    offer = extract(turn("u", "User", "got the Miro offer!! starting June 1st, remote"))[0]
    assert (offer.slot, offer.slot_value) == ("user|employer", "miro")
    [deal] = extract(turn("u", "User", "I got the Netflix offer for 2 months free"))
    assert deal.slot != "user|employer"


@pytest.mark.parametrize(
    ("text", "body", "dates"),
    [
        ("I went there yesterday", "I went there", ["on 7 May 2023"]),
        ("I went there last night", "I went there", ["on 7 May 2023"]),
        ("I'm flying out tomorrow", "I'm flying out", ["on 9 May 2023"]),
        ("I gave a talk last week", "I gave a talk", ["the week before 8 May 2023"]),
        ("I moved last month", "I moved", ["around April 2023"]),
        ("I painted it last year", "I painted it", ["in 2022"]),
        ("I'll start next month", "I'll start", ["around June 2023"]),
        ("I met her last Friday", "I met her", ["on Friday 5 May 2023"]),
        ("I'll call next Friday", "I'll call", ["on Friday 12 May 2023"]),
        ("I went to a poetry reading last Fri", "I went to a poetry reading", ["on Friday 5 May 2023"]),
        ("I went on Saturday", "I went", ["on Saturday 6 May 2023"]),
        ("I moved here 4 years ago", "I moved here", ["around 2019"]),
        ("We met two weeks ago", "We met", ["around 24 April 2023"]),
        ("a few days ago I quit", "I quit", ["around 5 May 2023"]),
        ("we hiked last weekend", "we hiked", ["the weekend of 6 May 2023"]),
        ("I'm going to a conference in July", "I'm going to a conference", ["in July 2023"]),
        ("I was in Rome in March", "I was in Rome", ["in March 2023"]),
        ("I travelled last summer", "I travelled", ["in summer 2022"]),
        ("I've lived here since last year", "I've lived here", ["since 2022"]),
        ("Yesterday, I ran 10k", "I ran 10k", ["on 7 May 2023"]),
        ("I went there in July 2022", "I went there in July 2022", []),
        ("you may want to rest", "you may want to rest", []),
        ("I teach Sunday school", "I teach Sunday school", []),
        ("over the last year I learned a lot", "over the last year I learned a lot", []),
        ("last year's trip was fun", "last year's trip was fun", []),
        # a bare month takes its own clause's tense, past verbs irregular or not
        ("I bought it in September", "I bought it", ["in September 2022"]),
        # "going to" in a habit's gerund is not the future: the last June, not the coming one
        ("I stopped going to the gym in June", "I stopped going to the gym", ["in June 2022"]),
        ("I'm going to Paris in June", "I'm going to Paris", ["in June 2023"]),
        (
            "my son starts school in September and we haven't picked a bag",
            "my son starts school and we haven't picked a bag",
            ["in September 2023"],
        ),
    ],
)
def test_resolve_dates(text: str, body: str, dates: list[str]) -> None:
    assert resolve_dates(text, MAY_8) == (body, dates)


def test_resolve_dates_uses_each_turns_own_date() -> None:
    assert resolve_dates("I saw it yesterday", MAY_9) == ("I saw it", ["on 8 May 2023"])


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I love painting with my kids", "Sam loves painting with their kids"),
        ("I really miss my old job", "Sam really misses their old job"),
        ("I don't drink coffee", "Sam doesn't drink coffee"),
        ("I've got a dog and I need a bigger flat", "Sam has got a dog and they need a bigger flat"),
        ("I went home and I was tired", "Sam went home and they were tired"),
        ("The group made me feel accepted", "The group made Sam feel accepted"),
        ("I study biology and I fly often", "Sam studies biology and they fly often"),
        ("Diana and I are getting married", "Diana and Sam are getting married"),
        ("I rewrote the parser", "Sam rewrote the parser"),
        ("my partner Kim and I are planning a trip", "Sam and their partner Kim are planning a trip"),
        ("my wife and I moved to Lisbon and I love it", "Sam and their wife moved to Lisbon and they love it"),
    ],
)
def test_rewrite_first_person(sentence: str, expected: str) -> None:
    assert rewrite_first_person(sentence, "Sam") == expected


@pytest.mark.parametrize(
    ("verb", "expected"),
    [("love", "loves"), ("go", "goes"), ("watch", "watches"), ("try", "tries"), ("play", "plays")]
    + [("went", "went"), ("moved", "moved"), ("need", "needs"), ("have", "has"), ("can", "can"), ("are", "is")],
)
def test_third_person(verb: str, expected: str) -> None:
    assert third_person(verb) == expected


def test_excerpts_cover_every_turn_that_says_anything_each_citing_its_turn() -> None:
    chunk = chunk_of(
        turn("u1", "User", "hi"),
        turn("u2", "User", "Which hotel did you recommend in Porto for my parents?"),
        turn("a1", "Assistant", " ".join(f"word{i}." for i in range(2 * PASSAGE_WORDS + 5))),
    )
    excerpts = turn_excerpts(chunk)
    assert [e.candidate.turn_ids for e in excerpts] == [["u2"], ["a1"], ["a1"], ["a1"]]
    assert all(e.candidate.kind == "episode" for e in excerpts)
    assert excerpts[0].candidate.content.startswith("User: Which hotel")
    assert all(len(e.candidate.content.split()) <= PASSAGE_WORDS + 1 for e in excerpts)
    assert excerpts[1].candidate.context.startswith("User: Which hotel")  # searched with the question it answers
    assert len({e.key for e in excerpts}) == len(excerpts)


@pytest.mark.parametrize(
    ("said", "answered", "tags"),
    [
        # a turn that only asks (filler around it included) states no fact
        ("What should I feed my dog in the morning?", "Salmon kibble, about a cup.", (["question"], [])),
        ("Thanks! Can my dog eat rice?", "Plain cooked rice is fine for dogs in small amounts.", (["question"], [])),
        # asking while stating states
        ("I went to the vet today with Rex. What do you think?", "Got it. Anything else?", ([], ["question"])),
        # an unnamed assistant acknowledging a statement, with nothing the user did not say
        ("Rex is allergic to chicken.", "Noted, I'll keep that in mind.", ([], ["acknowledgement"])),
        (
            "I have a beagle called Rex, he is three years old.",
            "Noted, Rex is a three-year-old beagle.",
            ([], ["acknowledgement"]),
        ),
        (
            "What should I feed my dog when he is sick?",
            "Okay, thanks for letting me know!",
            (["question"], ["acknowledgement"]),
        ),
        # a short reply that brings a name or a number, or answers a question, is kept as said
        ("I'm flying to Lisbon on Friday.", "Your flight is at 7:45 from gate 12.", ([], [])),
        ("I'm flying to Lisbon on Friday.", "Great, Alfama is worth a visit, try the Belem bakery.", ([], [])),
        ("Can my dog eat grapes?", "No, grapes are toxic to dogs.", (["question"], [])),
        # a question that names someone, a place or a number tells what it names
        ("Did you go skiing in Banff last week?", "Yes, the slopes near Lake Louise were perfect.", ([], [])),
        ("How much should I feed my dog, he weighs 12 kg?", "About two cups a day.", ([], [])),
        # a sentence that opens like a question but ends with a full stop or "!" states
        ("Can't wait for the grand opening of the bakery!", "The bakery opens its doors at nine tomorrow.", ([], [])),
    ],
)
def test_excerpts_that_only_ask_or_acknowledge_are_tagged(
    said: str, answered: str, tags: tuple[list[str], list[str]]
) -> None:
    excerpts = turn_excerpts(chunk_of(turn("u1", "User", said), turn("a1", "Assistant", answered)))
    by_turn = {e.candidate.turn_ids[0]: e.candidate.tags[2:] for e in excerpts}
    assert (by_turn["u1"], by_turn["a1"]) == tags


def test_between_named_people_neither_questions_nor_replies_are_tagged() -> None:
    """A named speaker is a person in the chat: a question tells what they talk about (it leads to
    the answer), and a reply is theirs, not an assistant's filler."""
    chunk = chunk_of(
        turn("u1", "Caroline", "What got you into long distance running?"),
        turn("a1", "Melanie", "Wow, that is wonderful news about the marathon training!"),
    )
    assert [e.candidate.tags for e in turn_excerpts(chunk)] == [["excerpt", "user"], ["excerpt", "assistant"]]


@pytest.mark.parametrize(
    ("text", "content", "slot"),
    [
        # a reason or a feeling stays with what it is about instead of becoming a fragment of its own
        (
            "always give me temperatures in celsius, I never remember the conversion",
            "Standing instruction from the user: always give me temperatures in celsius, I never remember the "
            "conversion",
            "",
        ),
        ("I like cycling, I go most weekends", "The user likes cycling, they go most weekends", ""),
        # what chat says in two steps, or without a verb or a "my"
        (
            "changed my research topic! now it's coral reef acoustics. my advisor is thrilled",
            "The user's research topic changed to coral reef acoustics",
            "user|topic",
        ),
        ("the kids renamed the puppy, she's Luna now", "The user's kids renamed the puppy Luna", "user:puppy|name"),
        (
            "we adopted a rescue greyhound! she's 4, named her Nova",
            "The user adopted a rescue greyhound, she's 4, named her Nova",
            "user:greyhound|name",
        ),
        ("all services on deno 2 now.", "All services are on deno 2 now", "team|runtime"),
        ("ok trip: march 3 next year. like 6 people", "The user's trip is march 3 (in 2024)", ""),
        ("the gym raised prices so the fee is £35 now", "The gym raised prices so the fee is £35 now", ""),
        # where one lives, a team's new name, an age with its unit
        ("we're in boise now!!", "The user is in boise now", "user|residence"),
        (
            "denver rent is brutal for me, 2400 for a studio",
            "Denver rent is brutal for the user, 2400 for a studio",
            "user|residence",
        ),
        ("ok we're Northwind now", "The team is now called Northwind", "team|name"),
        ("I'm 41, is that too late to learn piano?", "The user is 41 years old", "user|age"),
        # a dropped "I'm" before where one is; a dropped "I" after an auxiliary in a later clause; a taste
        # in three words; "next goal" is the speaker's
        ("still under my budget.", "The user is still under their budget", ""),
        ("just back from Rome, exhausted", "The user is just back from Rome, exhausted", ""),
        (
            "I've been running a lot lately, did my first half marathon in 1:52 last weekend",
            "The user has been running a lot lately, did their first half marathon in 1:52 (the weekend of 6 May 2023)",
            "",
        ),
        ("also I hate ORMs", "The user hates ORMs", ""),
        ("next goal is sub 1:45", "The user's next goal is sub 1:45", "user|goal"),
        (
            "I prefer Postgres over Snowflake honestly",
            "The user prefers Postgres over Snowflake",
            "user|database",
        ),
        # "we both" is one subject's verb, not a verb "boths"; "we use Postgres" is the team's stack
        ("We both love hiking in the Alps.", "The user loves hiking in the Alps", ""),
        ("We use Postgres.", "The user uses Postgres", "team|database"),
        ("My phone is an iPhone 12.", "The user's phone is an iPhone 12", "user|phone"),
    ],
)
def test_statements_a_careful_reader_would_write(text: str, content: str, slot: str) -> None:
    memories = extract(turn("u1", "User", text))
    assert memories[0].content == content, [m.content for m in memories]
    assert memories[0].slot == slot


@pytest.mark.parametrize(
    "text",
    [
        "that was fun, I laughed so hard",
        "thinking maybe next year",
        "we're in a meeting now",
        "I'm in bed now",
    ],
)
def test_passing_remarks_make_no_memory(text: str) -> None:
    assert contents(turn("u1", "User", text)) == []


def test_being_somewhere_now_for_a_visit_is_not_where_one_lives() -> None:
    [memory] = extract(turn("u1", "User", "we're in Boise now for the weekend, visiting friends"))
    assert memory.slot != "user|residence"


@pytest.mark.parametrize(
    ("first", "correction", "content"),
    [
        ("our flight is on the 9th", "sorry, it's the 11th", "The user's flight is on the 11th"),
        (
            "my cousin Ilse is visiting in June",
            "oops Elsa, not Ilse",
            "The user's cousin Elsa is visiting (in June 2023)",
        ),
        ("ok date: june 12 next year", "wait scratch that, its the 14th", "The user's date is june 14th (in 2024)"),
        # a weekday is resolved again, not swapped for a word of the date
        ("our flight is on Friday", "sorry, it's Saturday", "The user's flight is (on Saturday 13 May 2023)"),
        (
            "my dentist appointment is on Monday at 3pm",
            "actually they moved it to Thursday same time",
            "The user's dentist appointment is at 3pm (on Thursday 11 May 2023)",
        ),
    ],
)
def test_a_correction_in_the_same_chunk_rewrites_what_it_corrects(first: str, correction: str, content: str) -> None:
    memories = extract(turn("u1", "User", first), turn("a1", "Assistant", "Noted."), turn("u2", "User", correction))
    assert [(m.content, m.turn_ids) for m in memories] == [(content, ["u1", "u2"])]


def test_a_remark_is_no_correction() -> None:
    memories = extract(
        turn("u1", "User", "my sister Ines lives in Porto"),
        turn("a1", "Assistant", "Lovely."),
        turn("u2", "User", "actually it's fine"),
    )
    assert [m.content for m in memories] == ["The user's sister Ines lives in Porto"]


def test_a_bare_correction_with_nothing_to_correct_is_dropped() -> None:
    assert extract(turn("u1", "User", "sorry, it's the 11th")) == []


def test_a_correction_of_something_said_earlier_is_left_for_reconcile() -> None:
    [memory] = extract(turn("u1", "User", "actually it's Max, not Rex"))
    assert memory.correction == ["Rex", "Max"]


def test_a_contrast_or_a_long_remark_is_a_statement_of_its_own() -> None:
    # merged, "two brothers" would be one clause of a long statement about something else, and a
    # question about siblings would not find it
    found = contents(
        turn(
            "u",
            "User",
            "I grew up with two brothers, so I've always felt comfortable around big and loud groups of people, "
            "but I've noticed that my book club is much quieter than that.",
        ),
        turn("a", "Assistant", "Interesting!"),
    )
    assert found[0] == "The user grew up with two brothers"
    assert "The user has noticed that their book club is much quieter than that" in found
    assert not any("brothers" in f and "book club" in f for f in found)


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("We use Postgres, not MySQL.", "team|database", "postgres"),
        ("We went with Postgres rather than MySQL.", "team|database", "postgres"),
        ("I use neovim, not vscode.", "user|editor", "neovim"),
        ("I code in python, never java.", "user|language", "python"),
        ("We don't run kafka, just rabbitmq.", "team|queue", "rabbitmq"),
        ("I never use emacs.", "", ""),
        ("We're not on kubernetes.", "", ""),
    ],
)
def test_a_tool_named_only_to_deny_it_is_not_the_slot_value(text: str, slot: str, value: str) -> None:
    [memory] = extract(turn("u1", "User", text))
    assert (memory.slot, memory.slot_value) == (slot, value)


@pytest.mark.parametrize(
    ("text", "slot", "value", "retracts"),
    [
        ("We migrated to Postgres from MySQL last year.", "team|database", "postgres", ["mysql"]),
        ("I switched over to neovim from vim.", "user|editor", "neovim", ["vim"]),
        ("We moved the app to fly.io from heroku.", "team|hosting", "fly.io", ["heroku"]),
        ("I moved to Lisbon from Berlin in May.", "user|residence", "lisbon", ["berlin"]),
        ("I tried vim but I use vscode every day.", "user|editor", "vscode", []),
        ("I left Amazon for Shopify last month.", "", "", ["amazon"]),
        ("We left AWS for GCP in March.", "team|hosting", "gcp", ["aws"]),
        ("I don't work at Google, my brother does.", "", "", []),
        ("I'm not based in London, just visiting a lot.", "", "", ["based", "london"]),  # a denial takes it back
    ],
)
def test_the_value_is_the_one_the_sentence_says_is_current(
    text: str, slot: str, value: str, retracts: list[str]
) -> None:
    """Said the other way round ("to X from Y"), after a tool only tried, or denied: the slot holds
    what is true now, and what was left is what the sentence takes back."""
    [memory] = extract(turn("u1", "User", text))
    assert (memory.slot, memory.slot_value, memory.retracts) == (slot, value, retracts)


@pytest.mark.parametrize(
    ("text", "slot", "value"),
    [
        ("My name is Sam.", "user|name", "sam"),
        ("My name's Sam, nice to meet you.", "user|name", "sam"),
        ("My dog is called Rex.", "user:dog|name", "rex"),
        ("Our cat's name is Miso.", "user:cat|name", "miso"),
        ("We renamed our dog to Max.", "user:dog|name", "max"),
        ("Our new puppy is called Luna.", "user:puppy|name", "luna"),
        ("We're Inkwell now, the old name had trademark trouble.", "team|name", "inkwell"),
    ],
)
def test_a_name_is_read_at_the_start_of_a_sentence_too(text: str, slot: str, value: str) -> None:
    """Capitalised as people type them: "My dog is called Rex" filled no slot (and "my dog is
    called Rex" filled one held by "dog is"), so a rename never retired the old name."""
    [memory] = extract(turn("u1", "User", text))
    assert (memory.slot, memory.slot_value) == (slot, value)


def test_a_change_of_mind_is_no_memory_of_its_own() -> None:
    assert contents(turn("u1", "User", "Changed my mind, I'm getting a Rivian instead.")) == [
        "The user is getting a Rivian instead"
    ]


def test_a_we_clause_that_says_its_we_again_is_a_fact_of_its_own() -> None:
    """Each tool of "we use Postgres and we deploy on fly.io" can be replaced on its own."""
    memories = extract(turn("u1", "User", "We use Postgres and we deploy on fly.io."))
    assert [(m.content, m.slot) for m in memories] == [
        ("The user uses Postgres", "team|database"),
        ("The user's team deploys on fly.io", "team|hosting"),
    ]


@pytest.mark.parametrize(
    ("text", "slot", "value", "retracts"),
    [
        ("My manager is Priya.", "user:manager|name", "priya", []),
        ("Tom is my new manager.", "user:manager|name", "tom", []),
        ("My doctor is Dr. Lee, she is great.", "user:doctor|name", "dr. lee", []),
        ("My boss is OK I guess.", "", "", []),  # a judgement, not a name
        ("My favourite band is Radiohead.", "user|favorite band", "radiohead", []),
        ("My favorite part is when the dragon shows up.", "", "", []),  # a favourite of the moment
        ("My wife Clara is a nurse.", "user:wife|job", "nurse", []),
        ("Clara got a new job as a teacher.", "clara|job", "teacher", []),
        ("It is a teacher thing.", "", "", []),  # nobody's job
        ("I'm not allergic to cats, it was the dust.", "", "", ["allergic", "cats"]),
        ("I'm not sure I like the new office.", "", "", []),  # uncertainty denies nothing
        ("I'm not working today.", "", "", []),  # one word alone would take back too much
        ("My dentist appointment got moved to Friday.", "", "", []),  # a thing moved to a day: no home
        ("She is living in Paris now.", "", "", []),  # whose home is unknown until "she" is resolved
        ("My son Leo is 5.", "user:son|age", "5", []),
        ("I broke up with Alex.", "user:partner|name", "no one", []),
        ("My parents split up when I was 5.", "", "", []),  # not the speaker's relationship
        ("We never broke up.", "", "", []),
        ("After we broke up I moved to Berlin.", "user|residence", "berlin", []),  # the move is the news
        ("I'm seeing Dr. Patel on Monday.", "", "", []),  # a doctor's appointment, not a partner
        ("My son goes to Westfield High School now.", "user:son|school", "westfield high school", []),
        ("I met her at Lincoln Elementary.", "", "", []),  # a place met, not a school attended
        ("I'm at Stanford University this week for a talk.", "", "", []),  # a visit
        ("My son is in 3rd grade.", "user:son|grade", "3rd grade", []),
        ("I teach 3rd grade.", "", "", []),  # a job's class, not the speaker's school year
        ("This is 3rd grade level stuff.", "", "", []),  # a level, not anyone's school year
        ("My wife drives to work.", "user:wife|commute mode", "drive", []),
        ("I've been cycling to work.", "user|commute mode", "bike", []),  # one way, however said
        ("I took the bus to work today.", "", "", []),  # one day's way, not the usual one
        ("The Office is my favorite show now.", "user|favorite show", "office", []),
        ("This is my favorite band!", "", "", []),  # which band, the sentence does not say
        ("I've been seeing someone named Chris.", "user:partner|name", "chris", []),
        # of two tools, the one in use now: not one complained about, not one that stays the same
        ("We're on Fly.io now, Heroku got too expensive.", "team|hosting", "fly.io", []),
        ("We rewrote the backend in FastAPI, still Postgres.", "team|backend framework", "fastapi", []),
        ("I moved to the search team last month.", "user|team membership", "search", []),
        ("I'm on the same team as Bob.", "", "", []),
        ("I work from the office now.", "user|work mode", "office", []),
        ("I'm back in the office three days a week.", "user|work mode", "office", []),
        ("I weigh 92 kg.", "user|weight", "92 kg", []),
        ("I'm down to 87kg now!", "user|weight", "87kg", []),
    ],
)
def test_roles_favourites_other_peoples_jobs_and_denials(text: str, slot: str, value: str, retracts: list[str]) -> None:
    """What an update of each fills or takes back, so that it retires the statement it updates."""
    reading = read_slot(text, "user")
    assert (reading.slot, reading.value, list(reading.retracts)) == (slot, value, retracts)


def test_the_preferred_tool_is_the_slot_value_and_a_sell_out_takes_nothing_back() -> None:
    [preferred] = extract(turn("u1", "User", "I prefer Postgres over Snowflake."))
    assert (preferred.slot, preferred.slot_value) == ("user|database", "postgres")
    [gift] = extract(turn("u1", "User", "I got Maya the chalk bag instead, the dutch oven was sold out"))
    assert gift.retracts == []
    [sold] = extract(turn("u1", "User", "I sold my car last month."))
    assert sold.retracts == ["car"]


@pytest.mark.parametrize(
    ("text", "content"),
    [
        (
            "my phone number changed btw, it's 0612 334 812 now",
            "The user's phone number changed, it's 0612 334 812 now",
        ),
        ("I prefer Postgres over Snowflake honestly", "The user prefers Postgres over Snowflake"),
        ("tbh I think the new job is great", "The user thinks the new job is great"),
        ("I'm, like, really into bouldering these days", "The user is really into bouldering these days"),
        (
            "Honestly the commute is 40 minutes each way which is fine I guess",
            "The commute is 40 minutes each way which is fine",
        ),
        (
            "ok so basically I switched my team to Rust this quarter, kinda",
            "The user switched their team to Rust this quarter",
        ),
        (
            "also I've gone vegan since march, no more cheese for me :(",
            "The user has gone vegan since march, no more cheese for them",
        ),
        ("I'm at 14 books now, ahead of schedule 😎", "The user is at 14 books now, ahead of schedule"),
        ("yes please, my budget is like 40 euros", "The user's budget is like 40 euros"),
        ("I keep my notes in C:/Users/ana/notes :/", "The user keeps their notes in C:/Users/ana/notes"),
        # inside a clause the same words carry meaning
        (
            "Always answer honestly, even if it hurts.",
            "Standing instruction from the user: Always answer honestly, even if it hurts",
        ),
        ("I like jazz and I take my training seriously", "The user likes jazz and they take their training seriously"),
    ],
)
def test_chat_markers_and_stand_alone_hedges_are_not_stored(text: str, content: str) -> None:
    assert contents(turn("u1", "User", text)) == [content]


def test_a_sentence_that_is_only_a_chat_marker_makes_no_memory_and_breaks_nothing() -> None:
    assert contents(turn("u1", "User", "lol. I moved to Porto in March lol, still getting used to it")) == [
        "The user moved to Porto, still getting used to it (in March 2023)"
    ]


def test_a_brief_reply_that_picks_from_the_options_offered_keeps_the_question_it_settles() -> None:
    asked = turn("u1", "User", "which laptop should I get for coding, budget 1200")
    offered = turn("a1", "Assistant", "At that budget: a MacBook Air M3 for battery life, or a ThinkPad T14 for Linux.")
    [choice] = extract(asked, offered, turn("u2", "User", "thinkpad then"))
    assert (
        choice.content
        == 'The user asked "which laptop should I get for coding, budget 1200?", then chose: thinkpad then'
    )
    assert (choice.kind, choice.turn_ids) == ("decision", ["u1", "u2"])
    # a statement stays a statement; thanks, or a word the reply did not offer, is no choice
    assert contents(asked, offered, turn("u2", "User", "I'll use the thinkpad")) == ["The user will use the thinkpad"]
    [short] = contents(asked, offered, turn("u2", "User", "I'll get the thinkpad"))  # too short alone: a choice
    assert short == (
        'The user asked "which laptop should I get for coding, budget 1200?", '
        "then chose: the user will get the thinkpad"
    )

    assert contents(asked, offered, turn("u2", "User", "thanks!")) == []
    assert contents(asked, offered, turn("u2", "User", "hmm, dell maybe")) == []
    # without the speaker's question, the assistant's offer it picked from is quoted
    backpacks = turn(
        "a1", "Assistant", "Good options under 40 euros: the Deuter Pico, the Little Joe, or the Affenzahn."
    )
    found = contents(
        turn("u1", "User", "my budget is 40 euros"), backpacks, turn("u2", "User", "deuter I guess, my wife had one")
    )
    assert found[1] == (
        "The user chose deuter from the assistant's options: "
        '"Good options under 40 euros: the Deuter Pico, the Little Joe, or the Affenzahn."'
    )
    # a long offer is quoted by the option picked
    breakfasts = turn(
        "a1",
        "Assistant",
        "Vegan breakfasts: 1) overnight oats with soy milk, chia and peanut butter, 2) chickpea-flour omelette with "
        "spinach, 3) tempeh bacon sandwiches on sourdough, 4) soy yoghurt with granola, 5) tofu scramble with beans.",
    )
    found = contents(turn("u1", "User", "give me breakfast ideas"), breakfasts, turn("u2", "User", "the oats one."))
    assert found == ['The user chose the oats one from the assistant\'s options: "…overnight oats with soy milk…"']
    # an assistant's reply that offers no choice is no offer; a person's reply is no assistant's offer
    plain = turn("a1", "Assistant", "The Deuter Pico is a good backpack.")
    assert contents(turn("u1", "User", "my budget is 40 euros"), plain, turn("u2", "User", "deuter then")) == [
        "The user's budget is 40 euros"
    ]
    melanie = turn("m1", "Melanie", "Good options: the Deuter Pico, the Little Joe, or the Affenzahn.")
    assert not any("chose" in c for c in contents(melanie, turn("u2", "User", "deuter then")))


@pytest.mark.parametrize(
    ("text", "content"),
    [
        (
            "I quit. starting at the Royal Free in August, ICU",
            "The user is starting at the Royal Free, ICU (in August 2023)",
        ),
        ("also the Japan trip moved to November", "The Japan trip moved to November"),
        ("the wedding got pushed to June", "The wedding got pushed to June"),
        ("yeah go ahead. the repo is called ledger-api", "The repo is called ledger-api"),
        ("the Radiohead gig got cancelled so no Paris trip", "The Radiohead gig got cancelled so no Paris trip"),
        ("sadly Miso died yesterday, she was 16", "Miso died, she was 16 (on 7 May 2023)"),
        ("the CTO is Maria, she signs off on infra changes", "The CTO is Maria, she signs off on infra changes"),
        (
            "5 years at an agency in Lisbon, mostly fintech apps",
            "The user has spent 5 years at an agency in Lisbon, mostly fintech apps",
        ),
        # "we use sqlc" says too little alone (sqlc is no tool tap knows): it stays with the instruction
        ("also don't suggest ORMs, we use sqlc", "Standing instruction from the user: don't suggest ORMs, we use sqlc"),
    ],
)
def test_a_new_start_without_its_i_and_a_plan_that_moved_are_kept(text: str, content: str) -> None:
    assert content in contents(turn("u1", "User", text))


def test_something_that_moved_is_no_plan_that_moved() -> None:
    assert contents(turn("u1", "User", "the cat moved to the sofa")) == []


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("Learning German has been tough but worth it", "For the user, learning German has been tough but worth it"),
        ("Writing has always been a passion of mine", "Writing has always been a passion of the user's"),
        ("running a half marathon in May", "The user is running a half marathon (in May 2023)"),
    ],
)
def test_an_opening_gerund_that_is_the_subject_gets_no_i(text: str, content: str) -> None:
    assert contents(turn("u1", "User", text)) == [content]


def test_you_know_is_only_dropped_as_a_tag() -> None:
    assert contents(turn("u1", "User", "I'll check my schedule and let Ben know")) == [
        "The user will check their schedule and let Ben know"
    ]
    assert contents(turn("u1", "User", "just so you know, I moved to Porto last week")) == [
        "The user moved to Porto (the week before 8 May 2023)"
    ]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I have a golden retriever named Max.", "fact"),  # a name given is not something done
        ("My sister is called Ana and she lives in Porto.", "fact"),
        ("I met a climber named Tom at the gym.", "event"),  # meeting him is
    ],
)
def test_a_name_given_is_not_a_past_event(text: str, kind: str) -> None:
    [memory] = extract(turn("u1", "User", text))
    assert memory.kind == kind


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Leo broke his arm at school, so no swimming lessons for 6 weeks", "Leo broke his arm at school"),
        ("Maya took her first steps today!", "Maya took her first steps"),
    ],
)
def test_what_a_named_person_did_is_kept_with_an_irregular_verb_too(text: str, kept: str) -> None:
    assert any(kept in content for content in contents(turn("u1", "User", text)))


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("We're expecting our first baby in June!", ["in June 2024"]),
        ("The baby is due in June", ["in June 2024"]),
        ("My birthday is in June", ["in June 2024"]),  # half a year either way: the coming one
        ("We met in June", ["in June 2023"]),
        ("I was expecting more from the June release", []),
    ],
)
def test_a_month_half_a_year_away_or_expected_is_the_coming_one(text: str, dates: list[str]) -> None:
    december_5 = datetime(2023, 12, 5, 12, 0, tzinfo=UTC).timestamp()
    assert resolve_dates(text, december_5)[1] == dates


@pytest.mark.parametrize(
    ("text", "content", "retracts"),
    [
        ("I quit smoking.", "The user quit smoking", ["smoking"]),
        ("I left Google.", "The user left Google", ["google"]),
        ("Jenkins is gone.", "Jenkins is gone", ["jenkins"]),
    ],
)
def test_a_short_retraction_is_kept(text: str, content: str, retracts: list[str]) -> None:
    [memory] = extract(turn("u1", "User", text))
    assert (memory.content, memory.retracts) == (content, retracts)


def test_a_tool_said_without_a_verb_is_the_tool_in_use() -> None:
    [memory] = extract(turn("u1", "User", "GitHub Actions for everything now."))
    assert (memory.slot, memory.slot_value) == ("team|ci", "github-actions")


@pytest.mark.parametrize(
    ("text", "retracts"),
    [
        ("Jenkins is gone", ("jenkins",)),
        ("My headaches are finally gone", ("headaches",)),
        ("my dad is gone", ()),  # someone who left or died is no dropped thing
        ("Luna is gone", ()),
        # healed: a body part or an ailment takes back what was said of it
        ("My ankle is fine now, back to running.", ("ankle",)),
        ("The rash cleared up.", ("rash",)),
        ("My mom is fine now.", ()),
        ("The app is back to normal.", ()),
        ("My back is better now.", ()),  # "back" would take back the backend too
        ("Avoid the sun until your skin has fully healed.", ()),
        # a taste reversed, a thing renamed
        ("I've come around on cilantro.", ("cilantro",)),
        ("We renamed master to main.", ("master",)),
        ("We renamed the kitten to Mochi.", ()),
    ],
)
def test_what_is_gone_is_taken_back_unless_it_is_someone(text: str, retracts: tuple[str, ...]) -> None:
    assert read_slot(text, "user").retracts == retracts


@pytest.mark.parametrize(
    ("said", "kept", "not_kept"),
    [
        ("My best friend is Jake, we met in college.", "Jake, they met in college", "met in college"),
        ("Jake and I had a huge fight, we don't talk anymore.", "they don't talk anymore", "doesn't talk"),
    ],
)
def test_what_the_user_and_someone_named_do_together_stays_with_them(said: str, kept: str, not_kept: str) -> None:
    # alone, the "we" clause would read as the user's household
    found = contents(turn("t1", "user", said))
    assert any(kept in c for c in found), found
    assert not any(c.startswith(("User " + not_kept, "The user " + not_kept)) for c in found), found


def test_a_we_clause_after_no_one_named_is_the_users_own() -> None:
    found = contents(turn("t1", "user", "The weather was great, we went hiking in Wales."))
    assert any(c.startswith(("User went hiking", "The user went hiking")) for c in found), found


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("right so I raised the room rate to £95 last month", "£95"),
        ("right, sold the van for 4000 in the end", "4000"),
        ("what I love most is sea swimming at dawn", "sea swimming"),
        ("how I met Priya is a long story, she runs the cafe on Dock St now", "cafe"),
    ],
)
def test_a_statement_that_opens_like_a_question_word_is_still_a_statement(text: str, kept: str) -> None:
    assert any(kept in content for content in contents(turn("t1", "User", text)))


@pytest.mark.parametrize(
    "text",
    [
        "whats the best way to store winter tyres",
        "which glaze should I use for the mugs",
        "how many coats do I need on oak",
        "is it normal for the dough to smell like that",
    ],
)
def test_a_question_without_its_question_mark_makes_no_memory(text: str) -> None:
    assert contents(turn("t1", "User", text)) == []


def test_a_word_in_capitals_is_an_acronym_not_chat_spelling() -> None:
    [content] = contents(turn("t1", "User", "my coach Ilona is an IM and she coaches juniors on fridays"))
    assert "an IM" in content


def test_a_plain_project_decision_in_a_transcript_is_a_statement() -> None:
    [memory] = extract(turn("t1", "User", "for this project we decided to host on Render and keep Paddle for billing"))
    assert memory.kind == "decision" and "Render" in memory.content and "Paddle" in memory.content
