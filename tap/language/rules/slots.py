"""What a statement says about whom: the slot (holder + attribute) it fills, and what it retracts.

An update only supersedes what it updates when tap knows two statements fill the same slot:
"I live in Berlin" and, later, "I moved to Lisbon" both fill (user, residence); "we use
PostgreSQL" and "we migrated to CockroachDB" both fill (team, database). `read_slot(sentence,
speaker)` reads a first-person sentence (before it is rewritten) and returns:

- `slot`: "<holder>|<attribute>" and the value, for single-valued attributes of a person, a pet,
  a team or a project: where someone lives, where they work, their job or role (another person's
  too: "my wife Clara is a nurse"), their name, a pet's or a relative's name, who fills one of the
  speaker's roles ("my manager is Priya": "user:manager|name"; a break-up empties the partner role:
  "Alex and I broke up" fills it with "no one"), a favourite ("my favorite band is …": "user|favorite
  band"), relationship status, age, school and school year, the way to work, diet, and for tools:
  the database, programming language, backend / frontend / mobile framework, editor, hosting or
  deploy target, CI, test framework, operating system, phone, browser, chat tool, package manager,
  queue, ORM, monitoring or cloud storage in use. The holder is the speaker ("I"), the team ("we",
  "our" in work talk), a qualified part of it ("our backend", "… for the mobile app") or a
  possession ("my dog", "my sister");
- `retracts`: the words of what a statement takes back: "I no longer eat meat" → ["eat", "meat"],
  "switched from vim to helix" → ["vim"], "I left Google" → ["google"], "I'm not allergic to cats"
  → ["allergic", "cats"] (a denied state, of two words or more);
- `correction`: (wrong, right) for "actually it's Dana, not Diana" / "I meant Dana".

Only present-tense assertions fill a slot (past "I lived in …", plans "I'm moving to … next
month", wishes and hypotheticals do not), except "moved to / relocated to / joined / switched to",
whose past tense states the present. The value is what is true now, wherever the sentence names
it: a tool or a place named only to deny it ("Postgres, not MySQL", "I never use vim", "I'm not
based in London") is not a value, "migrated to Postgres from MySQL" is Postgres (and takes MySQL
back), "I tried vim but I use vscode" is vscode. Read as the denied or the left value, "We use
Postgres now, not MySQL" was dropped as a restatement of "we run everything on MySQL", and "I
never use emacs" retired "I use vim for everything". The tool categories are general software
knowledge, not tuned to any data set.

Invariants: pure and deterministic; a sentence fills at most one slot; values are normalised
(lower case, aliases folded: postgres = postgresql, k8s = kubernetes) so "Postgres" and
"PostgreSQL" are the same value.
"""

from __future__ import annotations

import re
from functools import lru_cache

import msgspec

from tap.candidates import NO_PARTNER
from tap.language.death import KIN_AND_PETS
from tap.language.rules.text import content_words, is_stopword

__all__ = [
    "TOOL_CATEGORIES",
    "SlotReading",
    "normalise_value",
    "read_slot",
    "slot_words",
    "statement_holder",
    "tool_category",
    "tool_category_in",
]


class SlotReading(msgspec.Struct, frozen=True, kw_only=True):
    """What one sentence says about a slot (all fields empty when it says nothing)."""

    slot: str = ""
    part: str = ""
    value: str = ""
    retracts: tuple[str, ...] = ()
    correction: tuple[str, ...] = ()
    change: str = ""  # "update" when the sentence says something changed, "now" for a weaker cue


_TOOLS: dict[str, str] = {
    "database": "postgres postgresql mysql mariadb sqlite mongodb mongo cockroachdb cockroach dynamodb cassandra "
    "oracle mssql sql-server supabase firestore neo4j clickhouse snowflake bigquery duckdb couchdb "
    "planetscale timescaledb influxdb scylladb aurora",
    "language": "python javascript typescript golang rust java kotlin swift ruby php c# c++ scala elixir haskell "
    "clojure dart lua perl julia zig ocaml f# erlang",
    "backend framework": "django flask fastapi rails laravel spring express nestjs phoenix asp.net symfony "
    "fastify hono gin actix axum sinatra koa",
    "frontend framework": "react vue angular svelte sveltekit solidjs qwik ember next.js nextjs nuxt remix "
    "gatsby htmx alpine.js preact",
    "mobile framework": "flutter react-native swiftui jetpack-compose ionic xamarin",
    "editor": "vim neovim nvim emacs vscode vs-code sublime atom intellij pycharm webstorm helix zed cursor nano "
    "xcode goland rider clion",
    "hosting": "aws gcp azure heroku fly.io vercel netlify railway digitalocean hetzner linode cloudflare "
    "kubernetes k8s ecs lambda render.com",
    "ci": "github-actions gitlab-ci jenkins circleci travis buildkite teamcity drone",
    "test framework": "pytest unittest jest vitest mocha jasmine rspec junit cypress playwright selenium",
    "operating system": "linux ubuntu debian fedora archlinux macos windows nixos",
    "phone": "iphone android pixel galaxy",
    "browser": "chrome firefox safari brave vivaldi",
    "chat tool": "slack discord mattermost zulip msteams",
    "package manager": "npm yarn pnpm bun poetry conda pipenv",
    "queue": "kafka rabbitmq sqs nats pulsar",
    "orm": "sqlalchemy prisma typeorm sequelize hibernate drizzle",
    "monitoring": "datadog grafana prometheus sentry newrelic",
    "cloud storage": "dropbox onedrive icloud gdrive",
    "dataframe library": "pandas polars dask pyspark modin vaex",
    "runtime": "node node.js nodejs deno",
    "site generator": "jekyll hugo eleventy 11ty hexo pelican docusaurus mkdocs wordpress ghost astro",
}
TOOL_CATEGORIES: dict[str, str] = {term: category for category, terms in _TOOLS.items() for term in terms.split()}
_ALIASES = {
    "remotely": "remote",
    "from home": "remote",
    "in office": "office",  # "in the office": normalise_value drops the articles before it looks here
    "from office": "office",
    "onsite": "office",
    "on-site": "office",
    "in person": "office",
    "postgresql": "postgres",
    "mongo": "mongodb",
    "cockroach": "cockroachdb",
    "nvim": "neovim",
    "vs-code": "vscode",
    "k8s": "kubernetes",
    "nextjs": "next.js",
    "golang": "go",
    "node.js": "node",
    "nodejs": "node",
    "veggie": "vegetarian",
    "meat": "vegetarian",  # only ever a diet value: "no longer eat meat"
}
_MULTIWORD = {
    "vs code": "vs-code",
    "visual studio code": "vscode",
    "sql server": "sql-server",
    "github actions": "github-actions",
    "gitlab ci": "gitlab-ci",
    "react native": "react-native",
    "jetpack compose": "jetpack-compose",
    "google drive": "gdrive",
    "google cloud": "gcp",
    "new relic": "newrelic",
    "microsoft teams": "msteams",
    "arch linux": "archlinux",
    "render.com": "render.com",
}
_GO_LANGUAGE = re.compile(r"\b(?:in|with|to|use|using|uses|written in|on)\s+Go\b")
_R_LANGUAGE = re.compile(r"\b(?:in|with|to|use|using|uses|written in|on)\s+R\b")
_TERM = re.compile(r"[A-Za-z][\w.#+-]*[\w#+]|[A-Za-z]")

_PAST_OR_PLAN = re.compile(
    r"\b(?:used to|lived|worked|was working|was living|will|'ll|’ll|going to|gonna|plan(?:ning)? to|want to"
    r"|hope to|might|may|would|could|should|thinking (?:about|of)|considering|next (?:week|month|year)|soon"
    r"|someday|one day|(?:if|unless)(?!\s+(?:you|that|it|this|needed|necessary)\b)|when I|before I|after I)\b",
    re.IGNORECASE,
)
_STATES_PRESENT = re.compile(
    r"\b(?:moved|relocated|joined|switched|migrated|converted|changed|started (?:at|working at)|got a (?:new )?job"
    r"|became|promoted|renamed|named|turned|went (?:vegan|vegetarian)|adopted)\b",
    re.IGNORECASE,
)
_RETRACT = re.compile(
    r"\b(?:no longer|not any ?more|anymore|any more|stopped|quit|gave up|left|dropped|ditched|got rid of"
    r"|c[oa]me around on|changed my mind (?:about|on)|warmed up to"  # a taste reversed
    r"|(?<!was )(?<!were )(?<!is )(?<!are )(?<!been )sold(?!\s+out\b)"
    r"|no more|not doing .{1,40} after all|cancel+ed|called off|laid off|(?:got|was|been|were) (?:fired|let go)"
    r"|(?:is|are|'s|’s)\s+(?:now\s+|finally\s+|completely\s+)?gone(?!\s+(?:for|to|on|in|by|until|till)\b)"
    r"|don'?t (?:\w+ )?(?:use|eat|drink|live|work|play|do|have|like|own)\b.*\bnow)\b",
    re.IGNORECASE,
)
_RETRACT_NOISE = frozenset(
    "longer anymore stopped quit gave left dropped ditched got rid don't doesn't didn't not now since sold more out "
    "gone doing after cancelled canceled called off "
    "ago months years weeks days recently finally".split()
)
_DATE_WORDS = frozenset(
    "january february march april may june july august september october november december monday tuesday "
    "wednesday thursday friday saturday sunday week month year weekend today yesterday tomorrow last jan feb mar "
    "apr jun jul aug sep sept oct nov dec".split()
)
_FROM_TO = re.compile(
    r"\b(?:switch|switched|switching|migrat\w*|mov\w*|chang\w*|convert\w*|transition\w*|went|port\w*)\s+"
    r"(?:(?:[\w'’]+\s+){0,4}?from\s+(?P<old>[\w.#+-]+(?:\s[\w.#+-]+)?)\s+(?:over\s+)?to\s+(?P<new>[\w.#+-]+)"
    # "migrated to postgres from mysql": the same, said the other way round
    r"|(?:[\w'’]+\s+){0,3}?to\s+(?P<new4>[\w.#+-]+)\s+from\s+(?P<old4>[\w.#+-]+(?:\s[\w.#+-]+)?))",
    re.IGNORECASE,
)
_REPLACED = re.compile(
    r"\breplac\w*\s+(?P<old>[\w.#+-]+(?:\s[\w.#+-]+)?)\s+with\s+(?P<new>[\w.#+-]+)"
    r"|\b(?:ditch\w*|dropp\w*|swapp?\w*|trad\w*|dump\w*|left|leav\w*|quit)\s+(?:the\s+|my\s+|our\s+)?"
    r"(?P<old3>[\w.#+-]+(?:\s[\w.#+-]+)?)"
    r"\s+for\s+(?:the\s+|an?\s+)?(?P<new3>[\w.#+-]+)"
    r"|\binstead of\s+(?P<old2>[\w.#+-]+(?:\s[\w.#+-]+)?)",
    re.IGNORECASE,
)
# "we're off heroku now", "moved home assistant off the pi to a NUC", "took me off the statins"
_OFF = re.compile(
    r"\b(?:mov\w*|migrat\w*|switch\w*|took|taken|tak\w*|came|got|went|are|am|is|we'?re|we’re|i'?m|i’m)\s+"
    r"(?:[\w'’]+\s+){0,3}?off\s+(?!(?:work|sick|duty|today|tomorrow|now|the hook|to|for)\b)"
    r"(?:of\s+)?(?:the\s+|my\s+|our\s+)?(?P<old>[\w.#+-]+)"
    r"(?:\s+(?:to|onto|for)\s+(?:the\s+|an?\s+|my\s+|our\s+)?(?:old\s+|new\s+)?(?P<new>[\w.#+-]+))?",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"(?:\b(?:actually|sorry|correction|oops|wait|i mean|i meant)\b[^.!?]*?)?"
    r"\b(?P<right>[A-Z][\w'’-]+|\d[\w.:/-]*)\s*,?\s+not\s+(?P<wrong>[A-Z][\w'’-]+|\d[\w.:/-]*)\b"
    r"|\bnot\s+(?P<wrong2>[A-Z][\w'’-]+|\d[\w.:/-]*)\s*[,;–—-]+\s*(?:it'?s\s+|but\s+)?(?P<right2>[A-Z][\w'’-]+|\d[\w.:/-]*)\b",
)
_CORRECTION_CUE = re.compile(
    r"\b(?:actually|sorry|correction|oops|i mean|i meant|typo|my bad|mistake|autocorrect|scratch that)\b", re.I
)
_NAME_FOR_NAME = re.compile(r"\b[A-Z][a-z]+,?\s+not\s+[A-Z][a-z]+\b")
_STRONG_CHANGE = re.compile(
    r"\b(?:instead|no longer|any ?more|used to|switched|switching|changed|changing|migrated"
    r"|mov(?:ed|es)\b[^.!?]{0,40}?\b(?:to|from)"
    r"|(?:moved|switched|changed|migrated|went)\b[^.!?]{0,30}\bagain"
    r"|renamed|raised|lowered|increased|decreased|went up|went down|replaced|upgraded|downgraded|after all"
    # an amount that changed: "upped my Lexapro to 30mg", "the team grew to 8", "I'm down to twice a week"
    r"|upped|bumped|reduced|doubled|halved|tripled|(?:grew|shrank|rose|jumped|fell|dropped) to"
    r"|(?:cut|cutting|scaled|scaling) (?:back|down)(?: on [\w'’ ]{1,25}?)? to"
    r"|(?:I'm|I’m|I am|am|is|are|we're|we’re) (?:now )?(?:down|up) to"
    r"|gave up|moved in|moved out|no more|stopped|quit|left|sold|not anymore"
    r"|change of plans?|not .{1,30} after all|update|updated|new (?:job|role|plan|date|venue|address|place|price)"
    r"|from now on|these days|nowadays)\b",
    re.IGNORECASE,
)
_BUT_NOW = re.compile(r"\bused to\b.*?\b(?:but|and)?\s*(?:now|these days|nowadays)\b", re.IGNORECASE)
_WEAK_CHANGE = re.compile(r"\b(?:now|currently|at the moment|right now)\b", re.IGNORECASE)

_VALUE = (
    r"(?P<value>(?:the |a |an )?[A-Z0-9][\w'’.&-]*(?:\s+(?:(?:of|de|da|la|le|del|upon|am)\s+)?[A-Z0-9][\w'’.&-]*)*)"
)
_LOWER_VALUE = (
    r"(?P<value>[\w'’.&-]+(?:\s+[\w'’.&-]+){0,3}?)"
    r"(?=\s*(?:[,.;!?]|\band\b|\bbut\b|\bsince\b|\bfor\b|\bwith\b|\bat\b|\bin\b|\bnow\b|\bfrom\b|$))"
)
_JOB_NOUN = (
    r"(?:[\w-]+\s+){0,2}?(?:engineer|developer|nurse|teacher|manager"
    r"|designer|student|doctor|lawyer|consultant|analyst|scientist|writer|chef|architect|accountant"
    r"|researcher|professor|programmer|director|founder|freelancer|intern|pharmacist|therapist"
    r"|photographer|journalist|technician|mechanic|electrician|paramedic|pilot|recruiter|lecturer"
    r"|librarian|veterinarian|dentist|surgeon|physician|barista|cto|ceo|vp|judge|officer|firefighter|farmer"
    r"|plumber|carpenter|artist|musician|actor|actress|cashier|waiter|waitress|realtor|banker|economist"
    r"|psychologist|counsell?or|social worker|midwife|caregiver|paralegal|coordinator|administrator)"
)
# "my wife Clara is a nurse", "Ola is now a senior engineer": another person's job, read only where
# the sentence is about someone other than the speaker (tap.language.rules.slots._holder)
_THIRD_PERSON_JOB = re.compile(rf"\b(?:is|['’]s)\s+(?:now\s+)?an?\s+(?P<value>{_JOB_NOUN})\b", re.IGNORECASE)
# "my son Leo is 5", "Leo turned 6 yesterday": another person's age
_THIRD_PERSON_AGE = re.compile(
    r"\b(?:is|['’]s|turned|just turned)\s+(?:now\s+)?(?P<value>\d{1,3})"
    r"(?:\s+years old|(?=\s*(?:[.!,;]|$|\s+(?:yesterday|today|last|this|on|in|and|but|now|already)\b)))",
    re.IGNORECASE,
)
# a school by its name: the name ends in what kind of school it is ("Lincoln Elementary")
_SCHOOL_NAME = (
    r"(?P<value>(?:[A-Z][\w'’.&-]*\s+){0,3}(?:School|Elementary|Academy|High School|High|Middle School|College"
    r"|University|Prep|Primary|Montessori|Kindergarten))\b"
)
_GRADE = (
    r"(?P<value>\d{1,2}(?:st|nd|rd|th)\s+grade|(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth"
    r"|tenth|eleventh|twelfth)\s+grade|year\s+\d{1,2}|kindergarten|pre-?k|preschool"
    r"|(?:freshman|sophomore|junior|senior)\s+year)\b"
    # the stage ends the clause ("3rd grade level stuff" is a level, not someone's year)
    r"(?=\s*(?:[,.!?;:)]|$|\s+(?:at|in|this|last|now|and|but|since|already|again|so|with|of)\b))"
)
_COMMUTE_WAYS = {"bike": "bike", "biki": "bike", "cycl": "bike", "walk": "walk", "driv": "drive", "carp": "carpool"}
_PERSON_ATTRIBUTES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "residence",
        re.compile(
            rf"\b(?:live|lives|living|reside|resides|residing|based|settled|staying)\s+(?:in|at|near)\s+{_VALUE}"
        ),
    ),
    (
        "residence",  # "moved into a 1920s bungalow in Park Hill": the place, not the house
        re.compile(
            r"\b(?:moved|relocated)\s+(?:back\s+|over\s+)?(?:to|into)\s+(?:an?|the|my|our)\s+(?:[\w'’-]+\s+){0,3}?"
            rf"(?:house|home|flat|apartment|place|bungalow|condo|studio|cottage|loft|room)\s+(?:in|at|near)\s+{_VALUE}"
        ),
    ),
    ("residence", re.compile(rf"\b(?:moved|relocated)\s+(?:back\s+|over\s+)?(?:to|into)\s+{_VALUE}")),
    ("residence", re.compile(rf"\bmy (?:home|place|apartment|flat|house) is (?:now )?in\s+{_VALUE}")),
    (
        "residence",
        re.compile(rf"\b(?:rent|rents|renting|own|owns)\s+(?:an?\s+|the\s+)?[\w\s-]{{0,25}}?\s+in\s+{_VALUE}"),
    ),
    ("residence", re.compile(rf"\b(?:live|lives|living|based|settled)\s+in\s+{_LOWER_VALUE}", re.IGNORECASE)),
    (
        "school",  # "my daughter goes to Lincoln Elementary", "I transferred to Westfield College"
        re.compile(
            r"\b(?:(?:goes|go|going|transferred|switched) to|attends|attend|attending|enrolled (?:at|in)|started at"
            rf"|starting at|starts at)\s+(?:the\s+)?{_SCHOOL_NAME}"
        ),
    ),
    (
        "school",  # "she started middle school at Jefferson": the school, not the stage
        re.compile(
            r"\b(?:started|starts|starting|began|begins|entered|is in|in)\s+(?:(?:middle|high|elementary|primary"
            r"|secondary|grad|graduate|law|medical|nursing|art|boarding)\s+)?school\s+at\s+"
            r"(?P<value>[A-Z][\w'’.&-]*(?:\s+[A-Z][\w'’.&-]*){0,3})"
        ),
    ),
    (
        "grade",  # "my son is in 3rd grade", later "he just started 4th grade"
        re.compile(
            r"\b(?:is|am|are|I'm|I’m|['’]s|started|starts|starting|entered|entering|going into|moved up to)\s+"
            rf"(?:now\s+|just\s+)?(?:in\s+)?(?:the\s+)?{_GRADE}",
            re.IGNORECASE,
        ),
    ),
    (
        "residence",  # "toronto rent is eating me alive": the rent one pays is where one lives
        re.compile(
            r"^(?P<value>[A-Za-z][a-z]+(?:\s+[A-Z][a-z]+)?)\s+rent\s+(?:is|went|keeps|has)\b(?=.*\b(?:me|my|I)\b)"
        ),
    ),
    (
        "residence",  # "I'm in Leeds now", "we're in montreal now!!": being somewhere *now* is living there
        re.compile(
            r"^(?:I(?:'m|’m| am)|we(?:'re|’re| are))\s+(?:now\s+|back\s+|finally\s+)*in\s+"
            rf"(?!(?:bed|class|school|work|the office|office|town|trouble|love|charge|line|pain|hospital|therapy"
            rf"|a |an |the |my |our |it\b|there\b|here\b|touch|shape|debt|luck)){_LOWER_VALUE}"
            r"\s+(?:now|these days|nowadays)\b"
            r"(?![\s,]*(?:for|visiting|on (?:holiday|vacation|a trip|business)|until|till|with)\b)",  # a visit
            re.IGNORECASE,
        ),
    ),
    ("residence", re.compile(rf"\b(?:moved|relocated)\s+(?:back\s+)?to\s+{_LOWER_VALUE}", re.IGNORECASE)),
    ("employer", re.compile(rf"\bwork(?:s|ing)?\s+(?:at|for)\s+{_VALUE}")),
    ("employer", re.compile(rf"\bwork(?:s|ing)?\s+as\s+(?:an?\s+)?[\w\s-]{{1,30}}?\s+(?:at|for)\s+{_VALUE}")),
    (
        "employer",
        re.compile(
            r"\b(?:joined|started (?:a new job |working )?at|got a (?:new )?job (?:at|with)|hired (?:at|by)"
            rf"|employed (?:at|by))\s+{_VALUE}"
        ),
    ),
    (  # "got the Miro offer!! starting June 1st": an accepted job offer names the next employer
        "employer",
        re.compile(
            r"\b(?:got|accepted|took|signed)\s+(?:the|my)\s+(?P<value>[A-Z][\w'’.&-]*(?:\s+[A-Z][\w'’.&-]*)*)"
            r"\s+(?:job\s+)?offer\b(?!\s+(?:for|of|on)\b)"
        ),
    ),
    (  # "I got the Klarna job!!": a job got, named by its employer (not "got the Jenkins job running")
        "employer",
        re.compile(
            r"\b(?:got|accepted|took|landed)\s+the\s+(?P<value>[A-Z][\w'’.&-]*(?:\s+[A-Z][\w'’.&-]*)*)"
            r"\s+(?:job|position|role)\b(?!\s+(?:done|running|working|to|passing|fixed|back|again|green|failing)\b)"
        ),
    ),
    (  # "I'm at N26 now as an analytics engineer": being at a named place *as* a role is working there
        "employer",
        re.compile(
            r"\bI(?:'m|’m| am)\s+(?:now\s+)?at\s+(?P<value>(?:the )?[A-Z][\w'’.&-]*(?:\s+[A-Z][\w'’.&-]*)*)"
            r"(?:\s+now)?,?\s+as\s+(?:an?\s+|the\s+)?[\w-]+"
        ),
    ),
    (  # "I'm starting at the Royal Free in August": a name, not a time ("I start at 9am")
        "employer",
        re.compile(
            r"\b(?:starting|start|starts|going to start|will start) (?:a new job |working |work )?at\s+"
            r"(?P<value>(?:the )?[A-Z][\w'’.&-]*(?:\s+[A-Z][\w'’.&-]*)*)"
        ),
    ),
    ("employer", re.compile(rf"\bmy (?:new )?(?:employer|company) is (?:now )?{_VALUE}")),
    ("employer", re.compile(rf"\bI(?:'m|’m| am)\s+(?:now\s+)?an?\s+(?:[\w-]+\s+){{0,3}}?(?:at|for|with)\s+{_VALUE}")),
    ("employer", re.compile(rf"\b(?:work(?:s|ing)?\s+(?:at|for)|joined)\s+{_LOWER_VALUE}", re.IGNORECASE)),
    ("job", re.compile(rf"\bwork(?:s|ing)?\s+as\s+(?:an?\s+)?{_LOWER_VALUE}", re.IGNORECASE)),
    (
        "job",  # "Clara got a new job as a teacher": the job is the role, wherever it is
        re.compile(
            rf"\bgot\s+(?:a\s+|the\s+)?(?:new\s+)?(?:job|position|role)\s+as\s+(?:an?\s+)?{_LOWER_VALUE}",
            re.IGNORECASE,
        ),
    ),
    (
        "job",
        re.compile(
            r"\b(?:promoted to|became an?|my (?:job )?(?:title|role|position) is(?: now)?)"
            rf"\s+(?:an?\s+)?{_LOWER_VALUE}",
            re.IGNORECASE,
        ),
    ),
    (
        "job",
        re.compile(rf"\bI(?:'m|’m| am)\s+(?:now\s+)?(?:an?\s+)(?P<value>{_JOB_NOUN})\b", re.IGNORECASE),
    ),
    (  # "I'm on the payments team" → "I moved to the search team": one team at a time
        "team membership",
        re.compile(
            r"\b(?:I(?:'m|’m| am)\s+(?:now\s+)?(?:on|in)"
            r"|I\s+(?:just\s+)?(?:moved|switched|transferred)\s+(?:over\s+)?to)"
            r"\s+the\s+(?!same\b|other\b|whole\b|new\b)(?P<value>[\w-]+(?:\s+[\w-]+)?)\s+team\b",
            re.IGNORECASE,
        ),
    ),
    (
        "relationship",
        re.compile(
            r"\bI(?:'m|’m| am| got| just got)\s+(?:now\s+|finally\s+)?"
            r"(?P<value>married|engaged|divorced|single|separated|widowed)\b",
            re.IGNORECASE,
        ),
    ),
    (  # "I weigh 92 kg" → "I'm down to 87 kg now": one weight at a time
        "weight",
        re.compile(
            r"\b(?:I\s+(?:now\s+)?weigh|I(?:'m|’m| am)\s+(?:now\s+)?(?:down|up)\s+to|my\s+weight\s+is(?:\s+now)?)"
            r"\s+(?:about\s+|around\s+)?(?P<value>\d{2,3}(?:[.,]\d)?\s*(?:kg|kgs|kilos?|lbs?|pounds|st|stone))\b",
            re.IGNORECASE,
        ),
    ),
    (
        "age",
        re.compile(
            r"\bI(?:'m|’m| am| just)?\s+(?:turned\s+)?(?P<value>\d{1,3})"
            r"(?:\s+years old|(?=\s*(?:[.!,;]|$|\s+(?:yesterday|today|last|this|on|in|and|but|now|already)\b)))",
            re.IGNORECASE,
        ),
    ),
    (
        "work mode",
        re.compile(
            r"\b(?:I(?:'m|’m| am)|I work|I'm working|I’m working|working)"
            r"\s+(?:now\s+|fully\s+|100%\s+|mostly\s+|back\s+)*"
            r"(?P<value>remote(?:ly)?|hybrid|from home|(?:in|from) the office|on-?site|in person)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "work mode",
        re.compile(
            r"\bI (?:do|have|work)\s+(?P<value>(?:\d|one|two|three|four|five)\s+(?:office|in-office|onsite|on-site)"
            r"\s+days?)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "commute mode",  # "I usually take the bus to work", later "now I bike to work"
        re.compile(
            r"\b(?:take|takes|taking|ride|rides|riding)\s+(?:the\s+|a\s+)?"
            r"(?P<value>bus|train|subway|metro|tube|tram|ferry|shuttle)\s+(?:to|into)\s+(?:work|the office)\b"
            r"(?!.*\b(?:today|tonight|this morning|yesterday)\b)",
            re.IGNORECASE,
        ),
    ),
    (
        "commute mode",
        re.compile(
            r"\b(?P<value>bike|bikes|biking|cycle|cycles|cycling|walk|walks|walking|drive|drives|driving|carpool"
            r"|carpools|carpooling)\s+(?:to|into)\s+(?:work|the office)\b"
            r"(?!.*\b(?:today|tonight|this morning|yesterday)\b)",
            re.IGNORECASE,
        ),
    ),
    (
        "diet",
        re.compile(
            r"\b(?:I'm|I’m|I am|I've been|I have been|I became|I went|I'm now|went)\s+(?:a\s+)?(?:fully\s+|now\s+)?"
            r"(?P<value>vegetarian|vegan|pescatarian|keto|gluten-free|dairy-free|paleo|carnivore)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "diet",  # "I no longer eat meat", "stopped eating meat": a vegetarian diet
        re.compile(r"\b(?:no longer|don'?t|do not|stopped|quit|gave up)\s+(?:eat(?:ing)?\s+)?(?P<value>meat)\b", re.I),
    ),
    (
        "diet",  # "started eating fish again": what a vegetarian or vegan diet left out is back
        re.compile(
            r"(?<!never\s)(?<!not\s)(?<!n't\s)(?<!n’t\s)\b(?:eat|eats|eating)\s+"
            r"(?P<value>(?:meat|fish|chicken|seafood|poultry|dairy|eggs|pork|beef|cheese)\s+again)\b",
            re.I,
        ),
    ),
    (
        "diet",  # "no fish either, full veggie", "strictly vegan these days"
        re.compile(
            r"\b(?:full|fully|strict|strictly|totally|now)\s+(?P<value>veggie|vegetarian|vegan|pescatarian)\b", re.I
        ),
    ),
    (
        "name",
        re.compile(
            r"\b(?:[Mm]y name(?: is|'s|’s)|[Cc]all me|I go by|I(?:'m|’m| am))\s+"
            r"(?P<value>[A-Z][\w'’-]+)(?=\s*(?:[,.!;]|$))"
        ),
    ),
    ("name", re.compile(r"\b(?:[Mm]y name(?: is|'s|’s)|[Cc]all me|I go by)\s+(?P<value>[A-Z][\w'’-]+)")),
)
_NAMED_THING = (
    re.compile(
        r"\b(?:[Mm]y|[Oo]ur)\s+(?P<holder>(?:[a-z]+\s+)?[a-z]+)(?:'s|’s)\s+name\s+is\s+(?:now\s+)?(?P<value>[A-Z][\w'’-]+)"
    ),
    re.compile(
        r"\b(?:[Mm]y|[Oo]ur)\s+(?P<holder>(?:[a-z]+\s+)??[a-z]+)\s+(?:is\s+)?(?:now\s+)?(?:called|named)\s+"
        r"(?P<value>[A-Z][\w'’-]+)"
    ),
    re.compile(r"\b(?:re)?named\s+(?:my|our)\s+(?P<holder>(?:[a-z]+\s+)??[a-z]+)\s+(?:to\s+)?(?P<value>[A-Z][\w'’-]+)"),
    re.compile(  # "we're Inkwell now": a team or company that took another name
        r"^(?:(?:[Oo]k|[Oo]kay|[Ss]o|[Aa]nd)\s+)?(?P<holder>[Ww]e)(?:'re|’re| are)\s+(?:now\s+)?(?:called\s+)?"
        r"(?P<value>(?!I\b)[A-Z][\w'’.-]+(?:\s+[A-Z][\w'’.-]+)?)\s+now\b"
    ),
    re.compile(  # "adopted a kitten, he's 10 weeks, named him Pickle"
        r"\b(?:adopted|got|bought|rescued|have|has)\s+(?:a|an|my|our)\s+(?:[a-z]+\s+){0,2}?(?P<holder>[a-z]+)(?=\s*[,!.;…]|\s+(?:named|called|and|who)\b)"
        r"[^.!?]{0,60}?\bnamed\s+(?:him|her|it|them)\s+(?P<value>[A-Z][\w'’-]+)"
    ),
    re.compile(  # "renamed the band to Low Tide"
        r"\brenamed\s+(?:my|our|the)\s+(?P<holder>[a-z]+)\s+(?:to\s+)?(?P<value>(?:The\s+)?[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)*)"
    ),
)
# "my band The Marmots plays …": a thing's name beside it, read when the sentence fills no other slot
_APPOSED_NAME = re.compile(
    r"^(?:[Mm]y|[Oo]ur)\s+(?P<holder>band|company|startup|business|shop|bakery|restaurant|cafe|podcast|channel"
    r"|newsletter|blog|app|product|project|game|book|novel|team|club|boat|car)\s+(?P<value>(?:The\s+)?[A-Z][\w'’-]+"
    r"(?:\s+[A-Z][\w'’-]+)*)"
)
_RELATIVE_HOLDER = re.compile(
    r"^(?:[Mm]y|[Oo]ur)\s+(?P<noun>(?!name\b)(?:(?:little|big|older|younger|elder|best|new|old|ex|twin|step|oldest|youngest"
    r"|baby|late|dear|current)\s+)?[a-z]+)(?:'s|’s)?\s+(?!name\b)"
    # what follows the noun: a verb ("my sister lives"), a name ("my dog Rex") or a possessive's noun
    r"(?=(?:[A-Z]|(?:is|was|has|had|just|also|still|now|got|moved|works?|lives?|[a-z]+(?:s|ed))\b)|(?<=s\s))"
)
_QUALIFIER = re.compile(
    r"\b(?:for|in|on)\s+(?:the|our|my)\s+(?P<q>(?:[\w-]+\s+){0,2}?(?:app|application|service|backend|frontend|front-end"
    r"|api|site|website|project|repo|monorepo|pipeline|dashboard|server|client|cli|tool|bot|platform))\b",
    re.IGNORECASE,
)
_SUBJECT_PART = re.compile(
    r"^(?:our|the)\s+(?P<q>(?:[\w-]+\s+){0,2}?(?:app|application|service|backend|frontend|front-end|api|site"
    r"|website|project|repo|pipeline|dashboard|server|client|cli|tool|bot|platform))\b",
    re.IGNORECASE,
)
_TOOL_VERB = re.compile(
    r"\b(?:use|uses|using|used|run|runs|running|on|switch\w*|migrat\w*|mov\w*|deploy\w*|host\w*|written in"
    r"|write|writing|code|coding|built|build|is|are|prefer|love|rely on|relies on|stick with|went with|go with"
    r"|picked|chose|settled on|adopted|moved to|via|with|into|on|in)\b",
    re.IGNORECASE,
)
_OWNED_CATEGORIES = frozenset({"phone", "operating system", "browser"})
_OWN_VERB = re.compile(r"\b(?:got|bought|have|has|own|owns|upgraded to|replaced)\b", re.IGNORECASE)


def normalise_value(value: str) -> str:
    """A value as compared between statements: lower case, articles dropped, aliases folded."""
    words = [w for w in re.split(r"\s+", value.lower().strip(" .,;:!?\"'’")) if w not in ("the", "a", "an")]
    text = " ".join(words)
    if _OFFICE_DAYS.match(text):
        return "hybrid"  # "3 office days" is a hybrid week, whatever the number
    return _ALIASES.get(text, text)


_OFFICE_DAYS = re.compile(r"^(?:\d|one|two|three|four) (?:office|in-office|onsite|on-site) days?$")


_MULTIWORD_PATTERNS = tuple(
    (phrase, re.compile(rf"\b{re.escape(phrase)}\b"), token) for phrase, token in _MULTIWORD.items()
)


@lru_cache(maxsize=8192)  # each clause is asked about by several steps of one extraction
def _tool_terms(sentence: str) -> tuple[tuple[str, str], ...]:
    """(term, category) of every known tool in the sentence, in order."""
    text = sentence.lower()
    for phrase, pattern, token in _MULTIWORD_PATTERNS:
        if phrase in text:  # the substring test first: the regex only where it can match
            text = pattern.sub(token, text)
    found = [
        (t, TOOL_CATEGORIES[t]) for t in (m.group(0).rstrip(".") for m in _TERM.finditer(text)) if t in TOOL_CATEGORIES
    ]
    if _GO_LANGUAGE.search(sentence):
        found.append(("golang", "language"))
    if _R_LANGUAGE.search(sentence):
        found.append(("r-language", "language"))
    return tuple((_ALIASES.get(t, t), c) for t, c in found)


_ATTRIBUTE_WORDS = {
    "residence": "lives home city where",
    "employer": "works job company employer",
    "job": "job role works as occupation",
    "name": "name called",
    "relationship": "relationship partner married",
    "age": "age years old",
    "diet": "diet eats food",
    "work mode": "remote office hybrid works from home",
    "school": "school goes attends",
    "grade": "grade school year",
    "commute mode": "commute work bus train bike drive",
}


def slot_words(slot: str) -> str:
    """Words that name what a slot is about, searched beside the statement: "The user moved to
    Lisbon" is found by "where does the user live?"; "…migrated to CockroachDB" by "which database?"."""
    if not slot:
        return ""
    attribute = slot.rsplit("|", 1)[-1]
    return _ATTRIBUTE_WORDS.get(attribute, attribute)


def tool_category_in(sentence: str) -> bool:
    """Whether the sentence names a known tool (a database, language, framework, editor…)."""
    return bool(_tool_terms(sentence))


def tool_category(term: str) -> str:
    """The category of a known tool ('' when unknown)."""
    return TOOL_CATEGORIES.get(term.lower(), "")


def _holder(sentence: str, speaker: str, work: bool) -> tuple[str, str]:
    """Whom the sentence is about (the speaker, their team, or a possession: "user:dog"), and the
    part of the team's work it is about ("backend", "mobile app"; "" for the whole)."""
    lowered = sentence.strip()
    part = _SUBJECT_PART.match(lowered) or _QUALIFIER.search(lowered)
    part_name = _norm_noun(part.group("q")) if part else ""
    first_person = re.search(r"\b(?:I|I'm|I’m|I've|I’ve|[Mm]y|[Mm]e)\b", lowered)  # "My phone is …" too
    we = re.match(r"^(?:we|we're|we’re|we've|we’ve|our|us)\b", lowered, re.IGNORECASE)
    # "we use Postgres" is the team's stack as much as "we migrated to CockroachDB" (work talk) is
    work = work or bool(we and any(category not in _OWNED_CATEGORIES for _, category in _tool_terms(lowered)))
    if (we and work) or (work and part and not first_person):
        return "team", part_name
    if we:
        return speaker, ""  # outside work talk "we" is the speaker's household, as rewrite_we writes it
    if not first_person and _tool_terms(lowered):
        named = re.match(r"^(?:the\s+)?([A-Za-z][\w-]+)\s+(?:is|runs|uses|stays|moved|was|will|has|'s|’s)\b", lowered)
        own = named.group(1).lower() if named and named.group(1).lower() not in _TOOLISH else ""
        return "team", part_name or own  # a stack that names no person: the team's (or its project's)
    relative = _RELATIVE_HOLDER.match(lowered)
    if relative and not _OWN_THINGS.match(lowered) and not _AND_I.match(lowered):
        return f"{speaker}:{_norm_noun(relative.group('noun'))}", ""
    named = _NAMED_HOLDER.match(lowered)
    if named and not first_person and _opening_name(lowered):
        return _opening_name(lowered), ""  # "Ola got promoted to mid-level": Ola's job, not the speaker's
    return speaker, part_name if work else ""


# a sentence about someone named ("Ola got promoted …"), not a dropped "I" before a capitalised
# verb or adverb ("Moved to Lisbon", "Finally switched to Linux")
_NAMED_HOLDER = re.compile(r"^[A-Z][a-z][\w'’-]*\s+(?:is|was|has|had|got|became|left|[a-z]+(?:s|ed))\b")


# "my girlfriend Lea and I live in Kreuzberg": the speaker is in the subject, so it is their statement
_AND_I = re.compile(r"^(?:my|our)\s+(?:[\w'’-]+\s+){0,3}?and\s+(?:I|me)\b", re.IGNORECASE)
_TOOLISH = frozenset(["it", "this", "that", "everything", "all", "which", "there", "team", "we"]) | set(TOOL_CATEGORIES)
_OWN_THINGS = re.compile(  # "my new job is at Stripe": the speaker's own (but "my new boss" is the boss)
    r"^(?:my|our)\s+(?:(?:new|current)\s+)?(?:home|place|apartment|flat|house|job|role|title|company|employer|team"
    r"|stack|database|backend|frontend|app|project|editor|setup|workflow|phone|laptop|computer|browser)\b",
    re.IGNORECASE,
)


_NOT_A_NAME = frozenset(
    "the a an this that these those it its there here my our your his her their some all every each no one "
    "both any another other most many much few everything nothing someone everyone and but so also just "
    # a part of the work opening a statement ("Backend is FastAPI with Postgres"): the team's, not a person's
    "backend frontend front-end back-end api database db infra infrastructure ci website".split()
)
_OPENING_NAME = re.compile(r"^([A-Z][\w’'-]+)\b")


def statement_holder(sentence: str, speaker: str, *, work: bool = False) -> str:
    """Whom a statement is about: the speaker ("user", "grace") for what they say of themselves
    and of their own unnamed things ("internal inventory service, Flask 3"), "team" for their team,
    "<speaker>:<noun>" for a relative or pet ("user:sister"), or the lower-cased name that opens
    a sentence about someone else ("Lucas still uses vim" → "lucas"). Reads the sentence as typed
    (before it is rewritten), so a capital is the writer's own."""
    who = speaker.lower()
    first_person = re.search(r"\b(?:I|I'm|I’m|I've|I’ve|my|me|we|we're|we’re|our|us)\b", sentence, re.IGNORECASE)
    if not first_person and _opening_name(sentence.strip()):
        return _opening_name(sentence.strip())
    holder, _ = _holder(sentence, who, work)
    return holder


def _opening_name(sentence: str) -> str:
    """The lower-cased name a sentence opens with ("Lucas still uses vim" → "lucas"); '' for a
    capitalised common word, an adverb, a verb of a dropped "I" or an acronym."""
    opening = _OPENING_NAME.match(sentence)
    if opening is None or opening.group(1).isupper():
        return ""
    name = opening.group(1).lower()
    if name in _NOT_A_NAME or name in _NOT_A_NAME_OPENING or tool_category(name):
        return ""  # a tool opening a statement ("Jenkins is gone") is the team's, not a person's
    return name


# what a sentence with a dropped "I" opens with ("Got promoted today!", "Moved to Lisbon", "Finally
# switched to Linux"); a list, not a suffix: Emily, Molly and Kelly end in -ly too
_NOT_A_NAME_OPENING = frozenset(
    "got get gets been went had has have was is did do does am moved started joined switched quit left "
    "finished began became bought sold adopted still finally actually basically honestly really recently "
    "currently usually probably definitely literally obviously luckily unfortunately sadly hopefully "
    "apparently seriously totally only lately surely clearly certainly mostly generally normally "
    "personally technically eventually originally initially especially suddenly".split()
)


def _norm_noun(noun: str) -> str:
    """A holder's noun as slots compare it: "my new puppy" is "my puppy" (and "my new boss" the boss
    who replaced the old one); "little sister" stays apart from "sister"'s other siblings."""
    words = noun.lower().split()
    return " ".join(words[1:] if len(words) > 1 and words[0] == "new" else words)


@lru_cache(maxsize=8192)  # a clause is read again by each step that asks (its reading is immutable)
def read_slot(sentence: str, speaker: str, *, work: bool = False) -> SlotReading:
    """The slot a first-person sentence fills, what it retracts and what it corrects."""
    who = speaker.lower()
    correction = _correction(sentence)
    retracts, taken_back = _retracted(sentence)
    now = _BUT_NOW.search(sentence)
    present = sentence[now.end() :] if now else sentence  # "I used to … but now I'm on Python": the present part
    slot, part, value = _slot(present, who, work)
    if slot and _PAST_OR_PLAN.search(present) and not _STATES_PRESENT.search(present):
        slot, part, value = "", "", ""
    if value and (value in retracts or value in {t for t, _ in _tool_terms(taken_back)}):
        slot, part, value = "", "", ""  # "gave up on vs code" takes the value back: it fills no slot
    change = "update" if _STRONG_CHANGE.search(sentence) else "now" if _WEAK_CHANGE.search(sentence) else ""
    return SlotReading(
        slot=slot, part=part, value=value, retracts=tuple(retracts), correction=correction, change=change
    )


_NEGATED_BEFORE = re.compile(r"(?:\b(?:not|never)|n['’]t)\s+(?:[\w'’]+\s+){0,2}$", re.IGNORECASE)
_USE_CLAUSE_BREAK = re.compile(r",?\s+but\s+|;\s*")
# after a comma, a tool with a verb of its own ("…, Heroku got too expensive") or one that stays the
# same ("rewrote the backend in FastAPI, still Postgres") is another clause: what changed comes first
_TOOL_CLAUSE = re.compile(r"(?P<tool>[\w.+#-]+)\s+(?:got|gets|is|was|were|became|kept|has\s+been)\b|(?:still|same)\b")


def _use_clauses(sentence: str) -> list[str]:
    """The clauses `_tools_in_use` reads in turn (see `_TOOL_CLAUSE`)."""
    clauses: list[str] = []
    for clause in _USE_CLAUSE_BREAK.split(sentence):
        pieces = clause.split(", ")
        clauses.append(pieces[0])
        for piece in pieces[1:]:
            opening = _TOOL_CLAUSE.match(piece)
            if opening is not None and (not opening.group("tool") or _tool_terms(opening.group("tool"))):
                clauses.append(piece)
            else:
                clauses[-1] += ", " + piece
    return clauses


def _tools_in_use(sentence: str) -> tuple[tuple[str, str], ...]:
    """The tools a sentence says are in use, less the ones it denies: those of the first clause
    that names one with a verb of use ("I tried vim but I use vscode": vscode), else of the first
    clause naming any ("… is on jekyll, but ruby keeps breaking": jekyll; "we're on fly.io now,
    heroku got too expensive": fly.io; "rewrote the backend in fastapi, still postgres": fastapi),
    else of the sentence."""
    negated = _negated_terms(sentence)
    clauses = _use_clauses(sentence)
    named = [tuple(t for t in _tool_terms(clause) if t[0] not in negated) for clause in clauses]
    used = next(
        (terms for clause, terms in zip(clauses, named, strict=True) if terms and _TOOL_VERB.search(clause)), ()
    )
    return (
        used
        or next((terms for terms in named if terms), ())
        or tuple(t for t in _tool_terms(sentence) if t[0] not in negated)
    )


def _slot(sentence: str, who: str, work: bool) -> tuple[str, str, str]:
    for pattern in _NAMED_THING:
        named = pattern.search(sentence)
        if named:
            holder = "team" if named.group("holder").lower() == "we" else f"{who}:{_norm_noun(named.group('holder'))}"
            return f"{holder}|name", "", normalise_value(named.group("value"))
    if _PRONOUN_SUBJECT.match(sentence):  # "she lives in Paris", its referent unresolved: whose, unknown
        return "", "", ""
    role = _role_named(sentence)
    if role is not None:  # "my manager is Priya", "Tom is my new manager": who fills the role
        return f"{who}:{role[0]}|name", "", normalise_value(role[1])
    holder, part = _holder(sentence, who, work)
    for attribute, pattern in _PERSON_ATTRIBUTES:
        match = pattern.search(sentence)
        if match is None or _NEGATED_BEFORE.search(sentence[: match.start()]):  # "I'd never work at Meta"
            continue
        if attribute == "residence" and _not_a_place(sentence, match):
            continue
        value = normalise_value(match.group("value"))
        if attribute == "commute mode":  # "cycling" and "I bike" are one way to work
            value = _COMMUTE_WAYS.get(value[:4], value)
        return f"{holder}|{attribute}", "", value
    if holder not in (who, "team"):
        for attribute, pattern in (("job", _THIRD_PERSON_JOB), ("age", _THIRD_PERSON_AGE)):
            found = pattern.search(sentence)
            if found is not None and not _NEGATED_BEFORE.search(sentence[: found.start()]):
                return f"{holder}|{attribute}", "", normalise_value(found.group("value"))
    terms = _tools_in_use(sentence)
    owned = any(category in _OWNED_CATEGORIES for _, category in terms) and _OWN_VERB.search(sentence)
    if terms and (_TOOL_VERB.search(sentence) or owned):
        switch = _switch(sentence)
        chosen = terms[-1]
        preferred = _PREFERRED_OVER.search(sentence)
        if preferred is not None:  # "prefer postgres over snowflake": the one preferred, not the last named
            wanted_terms = _tool_terms(preferred.group("chosen"))
            chosen = next((t for t in terms if wanted_terms and t[0] == wanted_terms[0][0]), chosen)
        if switch is not None and switch[1]:
            wanted = normalise_value(switch[1])
            chosen = next((t for t in terms if t[0] == wanted), chosen)
        elif switch is not None:  # "instead of A", "off A": the value is another term
            gone = normalise_value(switch[0])
            chosen = next((t for t in reversed(terms) if t[0] != gone and not gone.startswith(t[0])), chosen)
        return f"{holder}|{chosen[1]}", part, chosen[0]
    apposed = _APPOSED_NAME.match(sentence.strip())
    if apposed:
        return f"{who}:{apposed.group('holder')}|name", "", normalise_value(apposed.group("value"))
    favourite = _FAVOURITE.search(sentence) or _FAVOURITE_FIRST.search(sentence.strip())
    if favourite is not None and favourite.group("value").lower().split()[0] in _NOT_A_FAVOURITE:
        favourite = None  # "this is my favorite band": which one, the sentence does not say
    if favourite is not None and favourite.group("what").lower().split()[-1] not in _VAGUE_FAVOURITES:
        what = " ".join(favourite.group("what").lower().split())
        return f"{who}|favorite {what}", "", normalise_value(" ".join(favourite.group("value").split()[:6]))
    own = _OWN_ATTRIBUTE.search(sentence)
    if own:  # "my research topic is …" / "my thesis topic changed to …": one value at a time
        attribute, value = own.group("attribute").lower(), own.group("value")
        if attribute in _PHONE_WORDS:  # "my new number is +351 …": a phone number, not a lucky one
            if len(re.findall(r"\d", value)) < 7:
                return "", "", ""
            attribute = "phone number"
        return f"{who}|{attribute}", "", normalise_value(" ".join(value.split()[:6]))
    if _partner_ended(sentence):  # last: "after we broke up I moved to Berlin" is about where they live
        return f"{who}:partner|name", "", NO_PARTNER
    return "", "", ""


_PRONOUN_SUBJECT = re.compile(r"^\s*(?:he|she|they)(?:'s|’s|'re|’re)?\b", re.IGNORECASE)


def _not_a_place(sentence: str, match: re.Match[str]) -> bool:
    """Whether a residence reading names no home: a tool ("moved to fly.io"), a day or a time ("my
    appointment got moved to Friday"), or a thing that was moved ("got moved", "was moved")."""
    value = match.group("value")
    first = value.split()[0].lower() if value.split() else ""
    return (
        bool(_tool_terms(value))
        or first in _DATE_WORDS
        or first[:1].isdigit()
        or (
            match.group(0).startswith(("moved", "relocated"))
            and _PASSIVE_BEFORE.search(sentence[: match.start()]) is not None
        )
    )


_PASSIVE_BEFORE = re.compile(r"\b(?:got|get|gets|was|were|been|be|being|is|are)\s+(?:just\s+|finally\s+)?$", re.I)


_PHONE_WORDS = frozenset({"number", "mobile", "cell"})
# Roles one person fills for the speaker at a time: "my manager is Priya", later "my new manager is
# Tom" fills the same slot ("user:manager|name") with another value
_ROLE = (
    r"(?P<role>manager|boss|supervisor|line manager|team lead|tech lead|advisor|adviser|mentor|doctor|gp"
    r"|therapist|dentist|landlord|landlady|roommate|flatmate|housemate|partner|girlfriend|boyfriend|wife"
    r"|husband|fiancée?|fiancee?|spouse|coach|personal trainer|trainer|tutor|accountant|lawyer)"
)
_ROLE_VALUE = r"(?P<value>(?:Dr\.?\s+)?[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)"
_ROLE_NAMED = (
    re.compile(
        rf"\b(?:[Mm]y|[Oo]ur)\s+(?:(?:new|current)\s+)?{_ROLE}\s+is\s+(?:now\s+)?{_ROLE_VALUE}"
        r"(?=\s*(?:[,.!;:)]|$|\s+(?:now|and|but|who|since|from|these days|nowadays)\b))"
    ),
    re.compile(rf"^{_ROLE_VALUE}\s+is\s+(?:now\s+)?(?:my|our)\s+(?:(?:new|current)\s+)?{_ROLE}\b"),
    re.compile(  # "I'm dating Alex": the speaker's partner
        r"\bI(?:'m|’m| am|'ve been|’ve been| have been)\s+(?:now\s+)?(?:also\s+)?(?P<role>dating|seeing)\s+"
        r"(?:(?:someone|a (?:guy|girl|man|woman)) (?:named|called) )?"
        rf"{_ROLE_VALUE}(?=\s*(?:[,.!;:)]|$|\s+(?:now|and|but|who|since|from|for|these days|nowadays)\b))"
    ),
)
# one partner at a time, however they are called ("my girlfriend is Maya", "I'm dating Alex")
_PARTNER_ROLES = frozenset(
    "partner girlfriend boyfriend wife husband fiancé fiancée fiance fiancee spouse dating seeing".split()
)
_NOT_A_ROLE_VALUE = frozenset("ok okay great fine awesome amazing away back out off here there not so very".split())


# "Alex and I broke up", "I broke up with Alex", "she dumped me": the speaker's partner role is
# empty now, another value of it ("no one"), so the slot rule retires whoever filled it
_PARTNER_ENDED = re.compile(
    r"\b(?:I|we)\s+(?:just\s+|finally\s+|recently\s+|officially\s+)?(?:broke up|split up|called it quits)\b"
    r"|\bbroke up with me\b|\bdumped me\b|\bI (?:got|was) dumped\b"
    r"|\bI\s+(?:just\s+|finally\s+)?(?:dumped|left)\s+my\s+(?:girlfriend|boyfriend|partner|fianc[ée]e?)\b"
)


def _partner_ended(sentence: str) -> bool:
    """Whether the sentence says the speaker's relationship ended (see _PARTNER_ENDED)."""
    match = _PARTNER_ENDED.search(sentence)
    return match is not None and not _NEGATED_BEFORE.search(sentence[: match.start()])


def _role_named(sentence: str) -> tuple[str, str] | None:
    """(role, name) when the sentence names who fills one of the speaker's roles (see _ROLE)."""
    for pattern in _ROLE_NAMED:
        match = pattern.search(sentence)
        if match is None:
            continue
        first = match.group("value").split()[0].lower().rstrip(".")
        if first in _NOT_A_NAME or first in _NOT_A_ROLE_VALUE or _NEGATED_BEFORE.search(sentence[: match.start()]):
            return None
        role = match.group("role").lower()
        if role in ("dating", "seeing") and first.startswith("dr"):  # "I'm seeing Dr. Patel": a doctor
            return None
        return "partner" if role in _PARTNER_ROLES else role, match.group("value")
    return None


# "my favourite band is Radiohead", "these days my favorite food is ramen": one favourite at a time
_FAVOURITE = re.compile(
    r"\b(?:my|our)\s+(?:(?:all[- ]time|absolute|current|new)\s+)?favou?rite\s+(?P<what>[a-z]+(?:\s+[a-z]+)?)"
    r"\s+(?:is|is now|these days is)\s+(?:now\s+|still\s+)?"
    r"(?P<value>[^,;.!?]+?)(?=\s+(?:because|since|so|but|and I|for)\b|[,;.!?]|$)",
    re.IGNORECASE,
)
# "Green is my favorite color these days": the same said the other way round (a short value)
_FAVOURITE_FIRST = re.compile(
    r"^(?P<value>[\w'’-]+(?:\s+[\w'’-]+){0,2}?)\s+(?:is|are)\s+(?:now\s+|still\s+)?(?:my|our)\s+"
    r"(?:(?:all[- ]time|absolute|current|new)\s+)?favou?rite\s+"
    r"(?P<what>[a-z]+(?:\s+(?!(?:now|these|nowadays|lately|again|because|since|but|and)\b)[a-z]+)?)"
    r"(?=\s*(?:[,;.!?]|$|\s+(?:now|these days|nowadays|lately|again|because|since|but|and)\b))",
    re.IGNORECASE,
)
_NOT_A_FAVOURITE = frozenset("this that it these those which what here there one".split())
# what is favourite only in the moment ("my favorite part is when …")
_VAGUE_FAVOURITES = frozenset("part thing bit moment way one memory line quote scene kind sort type".split())
# What a person has one value of at a time, named with "my": their topic, budget, salary, commute…
_OWN_ATTRIBUTE = re.compile(
    r"^(?:my|our)\s+(?:[a-z]+\s+){0,2}?(?P<attribute>topic|budget|deadline|salary|rent|commute|schedule|address"
    r"|birthday|major|degree|goal|target|flight|shift|hours|phone number|email|username|handle|nickname|pronouns"
    r"|number|mobile|cell)\s+"
    r"(?:is|are|changed to|is now|are now|moved to)\s+(?:now\s+)?"
    r"(?P<value>[^,;.!?]+?)(?=\s+(?:if|unless|because|since|so|but|for|in case)\b|[,;.!?]|$)",
    re.IGNORECASE,
)


# "Postgres, not MySQL", "I never use vim", "we don't run kafka", "rather than MySQL": a tool named
# right after a negation (up to two words between) is not what the speaker uses
_NEGATION = re.compile(
    r"(?:\b(?:not|never|rather than|instead of|without)|n['’]t)\s+(?P<span>(?:[\w.#+-]+\s+){0,2}[\w.#+-]+)",
    re.IGNORECASE,
)


def _negated_terms(sentence: str) -> frozenset[str]:
    """The tools a sentence names only to deny them (see _NEGATION)."""
    return frozenset(term for match in _NEGATION.finditer(sentence) for term, _ in _tool_terms(match.group("span")))


# "prefer X over Y", "X rather than Y": X is the value, though Y is named last
_PREFERRED_OVER = re.compile(
    r"\b(?:prefer\w*|favou?r\w*|lik\w*|lov\w*|pick\w*|chose|choos\w*|go(?:ing)? with|went with)\s+"
    r"(?:the\s+|a\s+)?(?P<chosen>[\w.#+-]+(?:\s[\w.#+-]+)?)\s+(?:over|to|rather than|more than|instead of)\s",
    re.IGNORECASE,
)


def _switch(sentence: str) -> tuple[str, str] | None:
    """(old, new) when the sentence names what was replaced: "switched from vim to helix", "replaced
    X with Y", "ditched flask for fastapi", "off heroku (to fly.io)", "instead of A" (new = "")."""
    match = _FROM_TO.search(sentence) or _REPLACED.search(sentence) or _OFF.search(sentence)
    if match is None:
        return None
    found = match.groupdict()
    old = found.get("old") or found.get("old4") or found.get("old3") or found.get("old2") or ""
    new = found.get("new") or found.get("new4") or found.get("new3") or ""
    return (old, new) if _named_words(old) else None


def _named_words(phrase: str) -> list[str]:
    """The words naming a replaced thing: short names count ('pi', 'go'), fillers and dates do not."""
    words = (w.strip("'’.-").lower() for w in re.findall(r"[\w.#+'’-]+", phrase))
    return [w for w in words if w and not is_stopword(w) and w not in _RETRACT_NOISE and w not in _DATE_WORDS]


_REALLOWED = re.compile(
    r"(?P<what>[\w'’ -]{3,40}?)\s+(?:are|is)\s+(?:fine|ok|okay|allowed|good|back)\s+again\b"
    r"|\b(?:you can|feel free to)\s+(?:use|do|add|write)\s+(?P<what2>[\w'’ -]{3,40}?)\s+again\b",
    re.IGNORECASE,
)


# a thing named anew: the old name is taken back ("we renamed master to main", "renamed Quill to Inkwell")
_RENAMED = re.compile(r"\brenamed\s+(?P<old>[\w.#+-]+)\s+(?:to|as)\s+[\w.#+-]+", re.IGNORECASE)
_NOT_RENAMED = frozenset("the a an it its my our their his her him them this that these those".split())


# a name replaced by another, said with a word of change: "we're reading Piranesi next, not Klara",
# "it's at Mei's now, not Jonas's", "standup is on Tuesday from now on, not Monday"; the name
# taken back is capitalised (a name, a title, a day), as said. Without the word of change, "Dana,
# not Diana" is a correction of a name said wrong (_correction), not a change
_NOW_NOT = re.compile(
    r"\b(?:now|next|instead|this time|from now on|these days|going forward)\s*,?\s+not\s+(?:the\s+)?"
    r"(?P<old>[A-Z][\w'’-]+)"
)
_NOT_NAMES = frozenset("I I'm I’m I've I’ve I'd I’d I'll I’ll".split())


def _retracted(sentence: str) -> tuple[list[str], str]:
    """The words a statement takes back ([] when it takes nothing back) and the span they come from:
    what follows the marker ("I left google in feb" → google; "no more office days" → office,
    days; "renamed master to main" → master; "my ankle is fine now" → ankle), or for a marker that
    ends the clause ("I don't drink coffee anymore") what precedes it; what is allowed again takes
    back what forbade it ("bullet points are fine again" → bullet, points)."""
    switch = _switch(sentence)
    if switch is not None:
        return _named_words(switch[0]), switch[0]
    healed = _HEALED.search(sentence)
    if healed is not None:
        return [healed.group("part").lower()], healed.group("part")
    renamed = _RENAMED.search(sentence)
    if renamed is not None and renamed.group("old").lower() not in _NOT_RENAMED:  # "renamed master to main"
        return [renamed.group("old").lower()], renamed.group("old")
    replaced = _NOW_NOT.search(sentence)
    if replaced is not None and replaced.group("old") not in _NOT_NAMES:  # "Piranesi next, not Klara"
        old_name = re.sub(r"['’]s$", "", replaced.group("old"))
        if not _tool_terms(old_name):  # "Postgres now, not MySQL": the tool slot's own rules
            return [old_name.lower()], old_name
    again = _REALLOWED.search(sentence)
    if again is not None:
        what = re.split(r"[,;:]", again.group("what") or again.group("what2"))[-1]
        return [w for w in content_words(what) if w not in _RETRACT_NOISE][:3], what
    marker = _RETRACT.search(sentence)
    if marker is None:
        return _denied_state(sentence)
    after = _clause_after(sentence, marker.end())
    if _tool_terms(after):  # "gave up on vs code": every word of the tool's name, short ones too
        return _named_words(after)[:3], after
    words = _taken_back_words(after)[:3]
    if words:
        return words, after
    before = re.split(r"[,;.!?]|\band\b|\bbut\b", sentence[: marker.start()])[-1]
    if marker.group(0).endswith("gone") and not _gone_is_dropped(before):
        return [], ""
    return _taken_back_words(before)[-3:], before


# healed: a body part or an ailment of the speaker's, as a clause's subject ("my ankle is fine now",
# "the rash cleared up"): it takes back what was said of it ("has a sprained ankle"); "my mom is
# fine now" and "the app is back to normal" heal nothing. Only words no other word starts with
# (retractions match word starts: "back" would take back the backend, "hand" what the team handles)
_HEALED = re.compile(
    r"(?:^|[,;]\s*)(?:and\s+|but\s+)?(?:my|the|our)\s+(?P<part>ankle|knee|wrist|shoulder|neck|hip|throat|stomach"
    r"|flu|cough|fever|rash|injury|migraine|headache|infection|sprain|fracture|allergies)s?"
    r"\s+(?:is\s+|are\s+|has\s+|have\s+|'s\s+|’s\s+)?"
    r"(?:(?:now|finally|all|fully|totally|completely)\s+)*(?:healed|better|fine|back\s+to\s+normal|cleared\s+up)\b"
    r"(?=\s*(?:now\b|again\b|finally\b|[,.;!]|$))",
    re.IGNORECASE,
)


def _gone_is_dropped(subject: str) -> bool:
    """Whether "<subject> is gone" says a thing was dropped ("Jenkins is gone", "the pain is gone"),
    not that someone left or died ("my dad is gone", "Luna is gone": tap.language.death reads deaths)."""
    words = re.findall(r"[\w'’-]+", subject)
    if any(w.lower() in KIN_AND_PETS for w in words):
        return False
    return bool(_tool_terms(subject)) or not any(w[:1].isupper() and w.lower() not in _NOT_A_NAME for w in words)


def _clause_after(sentence: str, start: int) -> str:
    """The rest of the clause from `start` (up to punctuation or a conjunction)."""
    return re.split(r"[,;.!?]|\band\b|\bbut\b|\bso\b|\bbecause\b", sentence[start:], maxsplit=1)[0]


def _taken_back_words(span: str) -> list[str]:
    """The content words of a span, less retraction markers and dates, and less a light verb when
    something more is named ("don't need the sumatriptan anymore" takes back the sumatriptan, which
    "my doctor put me on sumatriptan" never said it needed)."""
    words = [w for w in content_words(span) if w not in _RETRACT_NOISE and w not in _DATE_WORDS]
    named = [w for w in words if w not in _LIGHT_VERBS]
    return named or words


_LIGHT_VERBS = frozenset("need needs needed have has take takes taking use uses using want wants get gets".split())


# "I'm not allergic to cats (it was the dust)": a state of the speaker denied, which takes back a
# stored statement holding the same words; not an uncertainty, a plan or an inability
_DENIED_STATE = re.compile(
    r"\b(?:I'?m|I’m|I am)\s+(?:actually\s+|really\s+)?not\s+(?:actually\s+|really\s+)?"
    r"(?!(?:sure|certain|convinced|going|gonna|able|ready|allowed|supposed|trying|asking|saying|looking|here|there"
    r"|that|too|so|very|quite|exactly|even|just|only|at all)\b)"
)


def _denied_state(sentence: str) -> tuple[list[str], str]:
    """The words of a denied state ("allergic", "cats"), when they are at least two: one word alone
    ("I'm not working today") matches too many unrelated statements."""
    denied = _DENIED_STATE.search(sentence)
    if denied is None:
        return [], ""
    after = _clause_after(sentence, denied.end())
    words = _taken_back_words(after)[:3]
    return (words, after) if len(words) >= 2 else ([], "")


def _correction(sentence: str) -> tuple[str, ...]:
    """(wrong, right) when the sentence corrects a name or a number it said before."""
    cued = _CORRECTION_CUE.search(sentence) or re.match(r"^\s*(?:it'?s|its)\s", sentence, re.I)
    if not cued and not _NAME_FOR_NAME.search(sentence):
        return ()
    match = _CORRECTION.search(sentence)
    if match is None:
        return ()
    wrong = match.group("wrong") or match.group("wrong2")
    right = match.group("right") or match.group("right2")
    if not wrong or not right or wrong.lower() == right.lower():
        return ()
    return (wrong, right)
