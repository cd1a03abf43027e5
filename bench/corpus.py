"""Synthetic memories and queries for the speed benchmarks (proxy, recall), built fast and reproducibly.

Texts come from seeded templates (people, places, jobs, hobbies, foods, made-up project names), so
the lexical index sees a realistic, growing vocabulary. Embedding 100,000 texts with the embedded
model would take about 8 minutes on 2 cores, so vectors are built the cheap way instead: a pool of
template sentences is embedded for real (MiniLM), and each memory's vector is a normalised mix of
the embeddings of the two pool sentences its text is made of, plus a little noise (so no two vectors
coincide). Query vectors are always computed by the real embedder, on the recall path itself.
Memories are written in batches straight to the store (vectors passed in, Chroma never embeds).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

import numpy as np

from tap.cli.progress import Bar
from tap.ports import Embedder, MemoryStore
from tap.records import Kind, Memory, make_memory

NAMES = (
    "Ana Ben Clara Dmitri Elena Farid Grace Hiro Ines Jonas Kavya Liam Maya Noor Oscar Priya Quentin Rosa "
    "Sami Tara Umar Vera Wen Ximena Yusuf Zoe Amara Bruno Chloe Diego Esther Felix Gita Hugo Ivy Jamal Kenji "
    "Lucia Mateo Nadia Omar Paula Rafael Sofia Tomas Uma Viktor Willa Yara Zain"
).split()
PLACES = (
    "Lisbon Porto Berlin Munich Kyoto Osaka Toronto Denver Nairobi Lagos Lima Quito Oslo Bergen Madrid Seville "
    "Warsaw Krakow Dublin Cork Austin Boston Sydney Perth Hanoi Seoul Busan Cairo Tunis Accra Prague Vienna "
    "Zurich Geneva Lyon Nantes Milan Turin Athens Crete"
).split()
JOBS = (
    "nurse teacher data engineer carpenter pharmacist architect barista translator paramedic software tester "
    "graphic designer accountant electrician chef veterinarian librarian photographer mechanic"
).split(" ")
HOBBIES = (
    "pottery|bouldering|trail running|sourdough baking|birdwatching|chess|salsa dancing|woodworking|kayaking|"
    "urban sketching|beekeeping|film photography|knitting|sailing|astronomy|calligraphy|gardening|surfing|"
    "playing the cello|learning Japanese|restoring old bikes|writing short stories"
).split("|")
FOODS = (
    "ramen|paella|dumplings|tacos al pastor|lentil soup|sushi|pho|falafel|risotto|kimchi stew|pierogi|"
    "pad thai|shakshuka|mole poblano|bibimbap|moussaka|ceviche|jollof rice"
).split("|")
ALLERGENS = "peanuts|shellfish|gluten|lactose|cats|pollen|penicillin|sesame|latex|bee stings".split("|")
MEMORY_KINDS: tuple[Kind, ...] = ("fact", "preference", "decision", "event", "instruction", "plan")
MONTHS = "January February March April May June July August September October November December".split()
TEMPLATES = (
    "{name} moved to {place} in {month} {year} and works as a {job}",
    "{name} has been into {hobby} since {year} and practises every {weekday}",
    "{name} is allergic to {allergen} and avoids {food} because of it",
    "{name} prefers {food} over {food2} and cooks it for friends on weekends",
    "{name} is planning a trip to {place} with {name2} in {month}",
    "{name} decided to switch the {project} project from {tool} to {tool2}",
    "{name}'s sister lives in {place} and visits every {month}",
    "{name} adopted a dog named {pet} after visiting a shelter in {place}",
    "{name} wants the {project} roadmap to focus on reliability instead of new features",
    "{name} ran a half marathon in {place} in {month} {year} in under two hours",
    "{name} asked to be reminded about the dentist appointment on {weekday}",
    "{name} and {name2} started a book club that meets in {place} once a month",
    "{name} bought a used {vehicle} for {amount} dollars in {month}",
    "{name} teaches {hobby} to kids at the community centre in {place}",
    "{name} finished the {project} migration and celebrated with {food} in {place}",
    "{name} always wants answers in short bullet points without emojis",
)
TOOLS = "Postgres MySQL Redis Kafka Rust Go Python Kotlin Terraform Ansible Svelte React Django Flask".split()
VEHICLES = "bike|campervan|scooter|hatchback|cargo bike|sailboat|motorbike".split("|")
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
SYLLABLES = "ka lo mi ra ven tor sel qui bra dan fel gor hin jas kel mur nox pel ri sam tu vy wex zor".split()
QUESTION_TEMPLATES = (
    "Where did {name} move and what does {name} do for work?",
    "What is {name} allergic to?",
    "Can you suggest a dinner for {name}? What food does {name} like?",
    "When is {name} going to {place}?",
    "What did we decide about the {project} project?",
    "Remind me what {name}'s dog is called",
    "I'm meeting {name} in {place} next week, anything I should remember about them?",
    "What hobbies does {name} have and how long has {name} been doing them?",
    "Which tool are we using for {project} now, {tool} or {tool2}?",
    "Help me plan a weekend in {place} with {name2}; we both like {hobby} and {food}.",
    "Write a short birthday message for {name} that mentions {hobby}.",
    "How should you format your answers for me?",
)


def project_name(rng: random.Random) -> str:
    """A made-up project name ('Kalomir'): rare words, like real ones in chats."""
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3))).title()


def _slots(rng: random.Random) -> dict[str, str]:
    name, name2 = rng.sample(NAMES, 2)
    food, food2 = rng.sample(FOODS, 2)
    tool, tool2 = rng.sample(TOOLS, 2)
    return {
        "name": name,
        "name2": name2,
        "place": rng.choice(PLACES),
        "month": rng.choice(MONTHS),
        "year": str(rng.randint(2015, 2025)),
        "job": rng.choice(JOBS),
        "hobby": rng.choice(HOBBIES),
        "weekday": rng.choice(WEEKDAYS),
        "allergen": rng.choice(ALLERGENS),
        "food": food,
        "food2": food2,
        "project": project_name(rng),
        "tool": tool,
        "tool2": tool2,
        "pet": project_name(rng),
        "vehicle": rng.choice(VEHICLES),
        "amount": str(rng.randint(3, 90) * 100),
    }


def sentences(count: int, seed: int) -> list[str]:
    """`count` template sentences (seeded)."""
    rng = random.Random(seed)
    return [rng.choice(TEMPLATES).format(**_slots(rng)) for _ in range(count)]


def queries(count: int, seed: int = 99) -> list[str]:
    """`count` user messages that ask about the kind of things the memories say (seeded)."""
    rng = random.Random(seed)
    return [rng.choice(QUESTION_TEMPLATES).format(**_slots(rng)) for _ in range(count)]


class Corpus:
    """A pool of really embedded sentences from which any number of memories is mixed."""

    def __init__(self, embedder: Embedder, *, pool: int = 1500, seed: int = 1) -> None:
        self.pool = sentences(pool, seed)
        started = time.perf_counter()
        self.vectors = np.asarray(embedder.embed_documents(self.pool), dtype=np.float32)
        self.embed_s = time.perf_counter() - started
        self.embedder_id = embedder.model_id
        self._rng = random.Random(seed + 1)
        self._np = np.random.default_rng(seed + 2)
        self._made = 0

    def memories(self, count: int, *, scope: str) -> tuple[list[Memory], list[list[float]]]:
        """`count` new memories of `scope` with their vectors."""
        rng = self._rng
        first = rng.choices(range(len(self.pool)), k=count)
        second = rng.choices(range(len(self.pool)), k=count)
        mixed = 0.85 * self.vectors[first] + 0.35 * self.vectors[second]
        mixed += self._np.normal(0.0, 0.01, size=mixed.shape).astype(np.float32)
        mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
        now = time.time()
        out: list[Memory] = []
        for index, (a, b) in enumerate(zip(first, second, strict=True)):
            tail = " ".join(self.pool[b].split()[:6])
            memory = make_memory(
                scope=scope,
                content=f"{self.pool[a]}; also {tail} (note {self._made + index})",
                kind=rng.choice(MEMORY_KINDS),
                importance=rng.randint(1, 5),
                source="import",
                sources=[f"t_{self._made + index}"],
                valid_from=now - rng.uniform(0, 2 * 365 * 86400),
                now=now,
            )
            memory.embedder = self.embedder_id
            out.append(memory)
        self._made += count
        return out, mixed.tolist()


def fill(
    store: MemoryStore,
    corpus: Corpus,
    count: int,
    *,
    scope: str,
    batch: int = 2000,
    progress: Callable[[int], None] | None = None,
) -> float:
    """Write `count` synthetic memories into the store in batches; returns the seconds it took.
    Without a `progress` callback, a bar on stderr when it is a terminal."""
    started = time.perf_counter()
    done = 0
    with Bar(f"writing {count:,} memories", total=count, quiet=progress is not None) as bar:
        while done < count:
            size = min(batch, count - done)
            memories, vectors = corpus.memories(size, scope=scope)
            store.add(memories, vectors)
            done += size
            bar.advance(size)
            if progress is not None:
                progress(done)
    return time.perf_counter() - started


def sample(values: Sequence[str], count: int, seed: int) -> list[str]:
    """`count` items cycled from values in a seeded order."""
    rng = random.Random(seed)
    order = list(values)
    rng.shuffle(order)
    return [order[i % len(order)] for i in range(count)]
