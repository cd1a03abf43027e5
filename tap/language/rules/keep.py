"""Which sentences are worth a memory: the judgement a careful person makes, as rules.

`why_not_kept(sentence)` takes one lead-stripped sentence of a person's turn and answers why it is not
worth keeping ("question", "request", "hypothetical", "filler", "about-assistant", "fragment",
"no-anchor", "too-short", "code", "secret"), or "" to keep it. Kept are statements about the speaker, their
people, pets, plans, preferences, decisions and work ("I moved to Lisbon", "my sister lives in
Madrid", "we use Postgres"), and standing instructions to the assistant ("always answer in metric
units"), which `is_instruction` recognises. Not kept: questions (also when they lack a question
mark), requests for the task at hand ("can you…", "help me…", "I was wondering…"), hypotheticals
("if I moved to Tokyo…", "imagine…", "I would…"), greetings, thanks, reactions and
acknowledgements, promises to try the assistant's advice, remarks about the assistant, fragments
whose subject is in another sentence ("It made me cry", "Since I was 17"), pasted code, and
sentences that are about nobody in particular.

Invariants: pure and deterministic; a sentence containing a redaction mark is never kept.
"""

from __future__ import annotations

import re

from tap.language.forget_requests import forget_request
from tap.language.rules.slots import read_slot, tool_category, tool_category_in
from tap.language.rules.text import MIN_WORDS, content_words, is_question_clause
from tap.scrub import REDACTED

__all__ = ["is_filler", "is_fragment", "is_instruction", "why_not_kept"]

MAX_WORDS = 70
_REQUEST = re.compile(
    r"^(?:please\s+|pls\s+|kindly\s+)?(?:(?:can|could|would|will)\s+you|help|tell|show|give|write|draft|explain|list"
    r"|summari[sz]e|recommend|suggest|create|make|generate|find|compare|translate|fix|review|check|rewrite"
    r"|convert|calculate|describe|outline|provide|send|let me know|remind me|walk me|teach|plan|brainstorm"
    r"|go ahead|continue|proceed|try|look up|search|book|add|update|change|edit|format|shorten|expand)\b"
    r"(?!\s+[\w'’-]+\s+(?:is|are|was|were)\b)"  # "book club is on …" is no request
    r"|^I(?:'d|’d| would) (?:like|love|appreciate) (?:you|some|any|a few|to (?:know|get|see|hear|learn|find|ask"
    r"|understand|explore|discuss)|help|it if|your|more|information|info|advice|tips|ideas|suggestions)"
    r"|^I(?:'m|’m| am)?\s*(?:looking|searching) for (?:some |any |a few |more )?(?:help|advice|tips|ideas"
    r"|suggestions|recommendations|resources|guidance|information|info|options|inspiration|feedback)"
    r"|^I (?:need|want|wanted) (?:you to|your|help|some help|advice|some advice|tips|ideas|suggestions"
    r"|recommendations|to know|to ask|to understand|to learn more|more information|guidance|a (?:list|summary"
    r"|recipe|plan|template|script|draft|function|rundown))"
    r"|^I(?:'m|’m| am| was)? (?:just )?(?:wondering|curious|hoping you|trying to (?:figure out|understand|decide))"
    r"|^I wonder\b|^I have (?:a|another|one more|some|a few|two|three) (?:quick |follow-up |more )?questions?\b"
    r"|^(?:some|any|more) (?:ideas|tips|suggestions|recommendations|advice|examples|options)\b"
    r"|^(?:now|next|also|then|ok|okay)\s*,?\s*(?:can|could|please|let'?s (?:see|try|do|look|talk|move))\b",
    re.IGNORECASE,
)
_INSTRUCTION_MARK = re.compile(
    r"\b(?:always|never|from now on|going forward|in (?:the )?future|whenever|every time|each time|by default"
    r"|stop (?:using|adding|writing|putting|giving|saying|calling|suggesting|including|doing|making)"
    r"|don'?t ever|do not ever|no more|in all (?:your )?(?:answers|replies|responses)"
    r"|(?:don'?t|do not|never) (?:suggest|recommend|propose))\b",
    re.IGNORECASE,
)
_INSTRUCTION_START = re.compile(
    r"^(?:please\s+)?(?:always|never|don'?t|do not|stop|avoid|use|answer|reply|respond|write|keep|call me|refer to me"
    r"|address me|remember (?:that|to)|make sure|from now on|going forward|in (?:the )?future|whenever"
    r"|when you|I want you to|I'd like you to|I’d like you to|you should|you must|you need to)\b",
    re.IGNORECASE,
)
_PERSONAL_INSTRUCTION = re.compile(r"^(?:call me|refer to me as|address me as|my name is)\b", re.IGNORECASE)
_HYPOTHETICAL = re.compile(
    r"^(?:if|suppose|supposing|imagine|let'?s say|say|hypothetically|what if|in case|assuming|pretend|even if"
    r"|in theory|theoretically|ideally|maybe|perhaps|unless)\b"
    r"|\b(?:if (?:I|we|my|our)|were I|I were|hypothetically|in theory|imagine (?:if|that|I))\b"
    r"|\bI(?:'d|’d| would)\b(?!\s+(?:rather|prefer|love to|like to|really like to|also like to))"
    r"|\b(?:should I|could I|would I|can I|do I|am I)\b"
    r"|\b(?:thinking|probably|possibly)\s+maybe\b|\bmaybe\s+(?:next|this|in|around|spring|summer|autumn|fall|winter)\b",
    re.IGNORECASE,
)
_FILLER = re.compile(
    r"^(?:that'?s|that’s|that is|that was|that sounds|sounds|so (?:cool|great|awesome|nice|happy|glad|proud|sorry"
    r"|sweet)|glad|good luck|congrat|thank|thx|ty\b|take care|talk (?:soon|later)|see you|have fun|enjoy|it'?s (?:great"
    r"|good|awesome|cool|nice|amazing|wonderful|so|fine|ok|okay)|it’s (?:great|so)|what a|how (?:cool|nice|great"
    r"|awesome|sweet|fun)|I'?m (?:so |really )?(?:glad|happy|sorry|proud|grateful)|love (?:that|it|this)"
    r"|(?:really |so )?(?:cool|great|awesome|nice|amazing|wonderful|lovely|beautiful|interesting|perfect|excellent)"
    r"(?:\s+(?:idea|point|question|tip|tips|suggestion|suggestions|advice|list|answer|stuff|work|job))?\s*(?:[!.,:;]|$)"
    r"|no worries|no problem|you'?re welcome|any time|anytime|hope (?:you|it|that)|can'?t wait to (?:see|hear)"
    r"|keep (?:it up|going)|long time no|got it|gotcha|makes sense|will do|good to know|I see\b|I understand"
    r"|I agree|I think so|not sure|I'?m not sure|I don'?t know|I have no idea|me too|same here|fair enough"
    r"|(?:I(?:'ve| have)?\s+)?changed my mind\s*(?:[!.,:;]|$)|change of plans?\s*(?:[!.,:;]|$)"
    r"|noted|understood|this (?:is|was|looks|seems) (?:very |really |super |so )?(?:helpful|useful|great|good|perfect"
    r"|interesting|amazing)|these (?:are|look|sound) (?:great|good|helpful|perfect)|that helps|this helps"
    # "I'm back!" is a greeting; "I'm back from Japan", "I'm back in the office" say where the user is
    r"|I (?:really )?appreciate|appreciate it"
    r"|I'?m (?:back|here)(?!\s+(?:home\s+)?from\s+(?-i:[A-Z])|\s+(?:in|at|on)\s+\w)"
    r"|hello|hi\b|hey\b|good (?:morning|evening|night"
    r"|afternoon)|bye|cheers|lol|haha|oh no|oops|yikes|ugh|sure thing|fine by (?:me|us)|works for (?:me|us)"
    r"|ok by me|that works|sounds fine|deal\b|no rush|all good|I know(?=\s*(?:[^\w\s]|but\b|$))"
    r"|ok\b|okay\b|alright)",
    re.IGNORECASE,
)
# where someone is at the moment: "we're in a meeting now", "I'm on the train right now"
_PASSING = re.compile(
    r"^(?:I(?:'m|’m| am)|we(?:'re|’re| are))\s+(?:just\s+|still\s+)?(?:in|at|on)\s+(?:a|an|the|my|our)\s+"
    r"[\w'’-]+(?:\s+[\w'’-]+)?\s+(?:now|right now|atm|at the moment)\W*$",
    re.IGNORECASE,
)
_VAGUE = frozenset(
    "want wants wanted keep keeps love loves like likes try tries trying make makes get gets go goes think know "
    "need needs see say feel wait put let take come stuff bit kind sort thing".split()
)
_TRY_ADVICE = re.compile(
    r"^(?:I|we)(?:'ll|’ll| will| am going to| are going to|'m going to|’m going to|'re going to| might| may)\s+"
    r"(?:definitely |probably |certainly "
    r"|also |just )?(?:try|give (?:it|them|this|that|these) a (?:try|shot|go)|check (?:it|them|that|this|out)"
    r"|look into|think about|let you know|keep (?:that|this|it) in mind|do that|consider|test|report back"
    r"|get back to you|take a look|read (?:it|them|that|this)|go with (?:that|this|it|the first|the second|option)"
    r"|start with (?:that|this|the)|follow (?:your|these|that|this)|use (?:that|this|these|your)|talk about (?:it|that)"
    r"|sleep on it|see how it goes)\b"
    r"|^I(?:'m|’m| am) (?:trying|doing|testing|reading) (?:that|this|it|them)\b",
    re.IGNORECASE,
)
_SECOND_PERSON = re.compile(r"^(?:you|your|you'?re|you’re|you'?ve|you'?d|you'?ll|u|ur|thanks to you)\b", re.IGNORECASE)
_FIRST_PERSON = re.compile(
    r"\b(?:I|I'm|I’m|I've|I’ve|I'd|I’d|I'll|I’ll|me|my|mine|myself|we|we're|we’re|we've|our|ours|us)\b", re.IGNORECASE
)
_CODE = re.compile(r"[{}<>]|;\s*$|=>|::|\(\)|`|\bdef |\bimport |\bfunction\b|\breturn\b|\$\s|^\s*#|[=]{1}\s*[\w\"'\[]")
_WORK = re.compile(
    r"\b(?:deadline|release|launch|deploy\w*|sprint|standup|stack|database|service|backend|frontend|api|repo"
    r"|project|team|client|customer|budget|roadmap|milestone|meeting|on-?call|app|scraper|pipeline|monorepo"
    r"|dashboard|blog|website|site|bot|library|package|cli|branch|approvals?|PRs?|commits?|tests?|staging"
    r"|production|prod|server|cluster|region)\b",
    re.IGNORECASE,
)
_CONCRETE = re.compile(r"\d|(?<=\s)[A-Z][a-z]+\b")
_TOOL_USE = re.compile(
    r"\b(?:on|uses?|using|runs?|running|written in|built (?:with|on|in)|stays on|moved to|migrated to|switched to"
    r"|deploys? to|hosted on|writing to|backed by|is an? [\w-]+ (?:app|service|site|scraper|tool|bot|api|cli)"
    r"|is an? [\w.-]+ app)\b",
    re.IGNORECASE,
)
# a name and its verb: regular, or one of the irregular pasts life news comes in ("Clara got a new job")
_NAMED_SUBJECT = re.compile(
    r"^(?:[A-Z][\w’'-]+)(?:\s+[A-Z][\w’'-]+)?\s+(?:is|was|has|had|'s|’s|got|became|left|began|[a-z]+(?:s|ed)"
    # the past of the common irregular verbs: "Leo broke his arm", "Maya took her first steps"
    r"|broke|took|fell|went|won|lost|came|ran|hurt|made|found|gave|wrote|bought|sold|flew|drove|met|grew|kept|sent"
    r"|spent|built|caught|forgot|paid|felt|threw|swam|sang|drew|rode|stole|wore|woke|beat|bit|chose|froze|hid"
    r"|shook|spoke|stood|struck|taught|told|thought|brought|fought|sat|slept|split|tore|understood|won"
    r"|quit|cut|hit|put|set|read|led|dug|fed|bent|lent)\b"
)
_PERSONAL_FACT = re.compile(
    r"\b(?:she|he|her|his|she's|he's|started|joined|works?|lives?|moved|married|born|studies|retired|hired|quit"
    r"|died|passed away|divorced|engaged|graduated|pregnant|sick|ill|adopted|new job|promoted|fired|laid off"
    r"|is (?:now )?an?|was an?|uses|runs on|written in|built (?:with|on|in)|turned \d{1,3}|is \d{1,3} years old)\b",
    re.IGNORECASE,
)

_PRONOUN_START = re.compile(
    r"^(?!these days\b|this (?:week|month|year|weekend|morning|evening|summer|winter|spring|autumn)\b)"  # time
    r"(?:it|it's|it’s|its|that|that's|that’s|this|they|they're|they’re|they've|these|those|he|he's|she|she's"
    r"|there|there's|there’s|them|which|who|(?:both|one|some|all|most)(?!\s+[a-z]+s\s+(?:are|were|run|use|have)\b))"
    r"\b(?!\s+(?:is\s+)?(?:my|our)\b)",
    re.IGNORECASE,
)
# A preposition opens a phrase, not a clause: what follows it may be the sentence's own subject and
# verb ("with the new job I'm commuting by bike"); "since I was 17" is a clause and nothing more.
_PHRASE_START = re.compile(r"^(?:for|about|around|with|without|like|except|especially)\b", re.IGNORECASE)
_MAIN_CLAUSE = re.compile(
    r"\s(?:I|I'm|I’m|I've|I’ve|we|we're|we’re|we've|we’ve)\s+[a-z]\S*(?:\s+\S+){2}", re.IGNORECASE
)
_SUBORDINATE_START = re.compile(
    r"^(?:since|because|cause|'cause|’cause|when|while|although|though|after|before|until|unless|whereas|as|so that"
    r"|for|about|around|like|with|without|to|and|or|but|than|except|especially|mostly|probably|maybe|just|only"
    r"|not|also|even)\b",
    re.IGNORECASE,
)


def is_fragment(sentence: str, *, states_slot: bool = False) -> bool:
    """A sentence that means nothing without what came before it: a pronoun whose referent is in
    another sentence ("It made me feel connected", "I've been doing it for a year", "my manager
    signed it off", "I think that's lame"), or a bare subordinate clause ("Since I was 17"). A
    sentence that states a slot keeps its meaning past a later pronoun ("I'm single and happy
    about it")."""
    if _PRONOUN_START.match(sentence) or (not states_slot and (_dangling_pronoun(sentence) or _dangling_one(sentence))):
        return True
    if _PHRASE_START.match(sentence) and _MAIN_CLAUSE.search(sentence):
        return False  # "for this project we decided to …": a phrase, then a clause of its own
    return bool(_SUBORDINATE_START.match(sentence)) and "," not in sentence


_OBJECT_PRONOUN = re.compile(r"(?<=\s)(?:it|them|that(?:'s|’s| is| was)|it(?:'s|’s| is| was))(?![\w'’])", re.IGNORECASE)
_LEADING_SUBJECT = re.compile(
    r"^(?:(?:I|we|he|she|they)\b|(?:my|our|his|her|their|the)\s+[\w'’-]+|[A-Z][\w'’-]+)\s*", re.IGNORECASE
)
_ANTECEDENT = re.compile(
    r"\b(?:a|an|the|my|our|his|her|their|this|these|those|some|every|each|another)\s+[\w'’-]+"
    r"|(?<=\s)(?!I\b)[A-Z][\w'’-]+|\d",
)


def _dangling_pronoun(sentence: str) -> bool:
    """Whether the sentence's first 'it' / 'them' / "that's" after its subject points outside it:
    nothing it could stand for (a noun phrase, a name, a number) comes between the subject and it,
    and nothing concrete (a name, a number, a known tool) follows it. "I bought a Tesla and love
    it" and "I did it, switched from vim to helix" keep their referent; "my supervisor liked it"
    does not."""
    pronoun = _OBJECT_PRONOUN.search(sentence)
    if pronoun is None:
        return False
    before = _LEADING_SUBJECT.sub("", sentence[: pronoun.start()].strip(), count=1)
    if _ANTECEDENT.search(" " + before) is not None:
        return False
    if len([w for w in content_words(before) if w not in _VAGUE and w not in _LIGHT_VERBS]) >= 2:
        return False  # "doing kickboxing and it's …": a bare noun it can stand for
    after = sentence[pronoun.end() :]
    if _CONCRETE_AFTER.search(after) is not None or tool_category_in(after):
        return False
    phrases = (m.group(0).split()[-1].lower() for m in _ANTECEDENT.finditer(" " + after))
    return all(noun in _TIME_NOUNS for noun in phrases)  # "… it for their family" names what it is for


_ONE_AT_END = re.compile(r"\b(?:a|an|another|the|that|this)\s+(?:[a-z]+\s+)?ones?\W*$", re.IGNORECASE)


def _dangling_one(sentence: str) -> bool:
    """Whether the sentence ends on 'one' standing for a noun it does not name ("I'll need to
    register with a new one"); "I broke my phone and need a new one" names it."""
    one = _ONE_AT_END.search(sentence)
    if one is None:
        return False
    before = _LEADING_SUBJECT.sub("", sentence[: one.start()].strip(), count=1)
    return _ANTECEDENT.search(" " + before) is None


_LIGHT_VERBS = frozenset(
    "doing done did does been being having give gives gave giving talk talked talking signed liked loved hated "
    "enjoyed thinks thought feel felt felt found finds".split()
)
_TIME_NOUNS = frozenset(
    "year years month months week weeks day days while time times bit lot minute minutes hour hours moment "
    "sec second seconds morning evening night weekend".split()
)
_CONCRETE_AFTER = re.compile(r"(?<=\s)(?!I\b)[A-Z][\w'’-]*|\d")


def is_filler(sentence: str) -> bool:
    """A reaction, thanks, acknowledgement or promise to try advice ("have fun", "fine by me")."""
    return bool(_FILLER.match(sentence) or _TRY_ADVICE.match(sentence))


def is_instruction(sentence: str) -> bool:
    """A standing instruction to the assistant ('Always answer in metric units', 'Call me Jo')."""
    if _PERSONAL_INSTRUCTION.match(re.sub(r"^(?:please|pls|and|also)\s+", "", sentence, flags=re.IGNORECASE)):
        return True
    return bool(_INSTRUCTION_START.match(sentence)) and bool(_INSTRUCTION_MARK.search(sentence))


# "don't suggest ORMs": a standing instruction whole in three words ("never give up" is no instruction)
_NO_SUGGEST = re.compile(r"^(?:please\s+)?(?:don'?t|do not|never)\s+(?:suggest|recommend|propose)\s+\w", re.IGNORECASE)
# "I hate ORMs", "I love sushi", "I don't like sushi": a taste is whole in three words
_SHORT_TASTE = re.compile(
    r"^(?:I|we)\s+(?:(?:don'?t|don’t|do not|no longer)\s+)?(?:love|hate|like|dislike|loathe|adore|prefer|enjoy)\s+"
    r"(?!(?:it|that|this|them|him|her)\b)[\w'’-]{3,}",
    re.IGNORECASE,
)

# "I'm lactose intolerant", "I'm diabetic": a lasting trait of the speaker's health or life is whole
# in two or three words
_SHORT_TRAIT = re.compile(
    r"^(?:I'?m|I’m|I am)\s+(?:[\w-]+\s+)?(?:intolerant|allergic|diabetic|pre-?diabetic|pregnant|colou?r-?blind"
    r"|left-handed|right-handed|deaf|hard of hearing|asthmatic|epileptic|autistic|celiac|coeliac|dyslexic|anemic"
    r"|anaemic|sober|retired|unemployed|self-employed|disabled|immunocompromised|vaccinated|insomniac"
    r"|hypertensive|bipolar|adhd)\b"
    # what the speaker is doing for a while: "I'm learning Spanish", "I'm dating Alex"
    r"|^(?:I'?m|I’m|I am)\s+(?:now\s+)?(?:learning|studying|(?:dating|seeing)(?=\s+(?-i:[A-Z])))\s+"
    r"(?!(?:it|that|this|them)\b)\w{3,}",
    re.IGNORECASE,
)


def why_not_kept(sentence: str, *, states_slot: bool = False) -> str:
    """Why this sentence is not worth a memory, or '' to keep it (see the module docstring).
    `states_slot`: it fills a slot ("I'm married now", "I'm Katherine"), so brevity is no fault."""
    if REDACTED in sentence:
        return "secret"
    words = sentence.split()
    taste = bool(_SHORT_TASTE.match(sentence) or _SHORT_TRAIT.match(sentence))
    if (
        len(words) < MIN_WORDS
        and not _PERSONAL_INSTRUCTION.match(sentence)
        and not _NO_SUGGEST.match(sentence)
        and not (states_slot and len(words) >= 2)
        and not taste
    ):
        return "too-short"
    if len(words) > MAX_WORDS or _CODE.search(sentence):
        return "code" if _CODE.search(sentence) else "too-long"
    if is_instruction(sentence):
        return ""
    if is_question_clause(sentence):
        return "question"
    if _REQUEST.match(sentence) or forget_request(sentence):  # "please forget my address": done, not kept
        return "request"
    if _FILLER.match(sentence) or _TRY_ADVICE.match(sentence) or _PASSING.match(sentence):
        return "filler"
    if _SECOND_PERSON.match(sentence):
        return "about-assistant"
    if is_fragment(sentence, states_slot=states_slot):
        return "fragment"
    if _HYPOTHETICAL.search(sentence):
        return "hypothetical"
    if len([w for w in content_words(sentence) if w not in _VAGUE]) < (1 if states_slot or taste else 2):
        return "too-short"
    if not _FIRST_PERSON.search(sentence) and not _third_party_fact(sentence):
        return "no-anchor"
    return ""


_VALUE_STATEMENT = re.compile(
    # also as the consequence of what came first: "the insurance went up so the fee is £25 now"
    r"^(?:[^,;]{3,60}?\s+so\s+)?(?:the\s+|our\s+|my\s+)?[\w'’-]+(?:\s+[\w'’-]+){0,2}\s+(?:is|are)\s+(?:now\s+)?(?:about\s+|around\s+)?"
    r"(?:[£$€¥]\s?)?\d",
    re.IGNORECASE,
)
_THING_IS_TOOL = re.compile(
    r"^(?:the\s+|our\s+|my\s+)?(?P<thing>[\w'’-]+(?:\s+[\w'’-]+){0,2})\s+(?:is|are)\s+(?:now\s+)?(?:on\s+|in\s+)?"
    r"(?P<value>[\w.#+-]+(?:\s[\w.#+-]+)?)",
    re.IGNORECASE,
)


_STANDING_CHANGE = re.compile(
    r"^(?:the\s+|our\s+|my\s+)?[\w'’-]+(?:\s+[\w'’-]+){0,2}\s+(?:is|are)\s+(?:now\s+)?(?:on|at|in|every)\s+"
    r"(?:the\s+)?(?=\d|[A-Z]|(?i:(?:mon|tues|wednes|thurs|fri|satur|sun)day))\S.*"
    r"\b(?:from now on|now|these days|anymore|going forward)\s*[.!]*$",
)


def _setup_statement(sentence: str) -> bool:
    """A statement of the speaker's own setting that names no one: a thing and its amount ("the
    fee is £25 now", "MSRV is 1.80") or the tool something is done with ("CI is github actions
    now", "state management is riverpod") — not a verdict on a tool ("Postgres is great")."""
    if _VALUE_STATEMENT.match(sentence) or _STANDING_CHANGE.match(sentence):
        return True  # "book club is on the 2nd wednesday from now on"
    match = _THING_IS_TOOL.match(sentence)
    if match is None or tool_category_in(match.group("thing")):
        return False
    return tool_category_in(match.group("value"))


def _third_party_fact(sentence: str) -> bool:
    """A statement about someone or something the speaker knows, without 'I': work facts with a
    concrete detail ("the deadline for the billing API is March 3"), statements about a tool stack
    ("Atlas is a django app on sqlite"), and what a named person did or is ("Chloé started at the
    studio, she's a 3D artist")."""
    if (_WORK.search(sentence) and _CONCRETE.search(sentence)) or _setup_statement(sentence):
        return True
    if tool_category_in(sentence):
        if read_slot(sentence, "user").retracts:
            return True  # a tool dropped: "Jenkins is gone", "heroku is gone for good"
        first = sentence.split()[0].strip(",.:;!?").lower() if sentence.split() else ""
        return not tool_category(first) and bool(_TOOL_USE.search(sentence))
    if _RESCHEDULED.match(sentence) or _NAMED_IS_CALLED.match(sentence) or _ROLE_IS_NAMED.match(sentence):
        return True
    return bool(_NAMED_SUBJECT.match(sentence)) and bool(_PERSONAL_FACT.search(sentence))


# What a thing the speaker works with is called: "the repo is called ledger-api", "the new puppy is named Miso".
_NAMED_IS_CALLED = re.compile(
    r"^the\s+(?:[\w'’-]+\s+){0,2}?[\w'’-]+\s+(?:is|are|was|got)\s+(?:now\s+)?(?:called|named|renamed(?:\s+to)?)\s+\S",
    re.IGNORECASE,
)
# Who holds a role in the speaker's world: "the CTO is Maria", "our landlord is Mr Okafor".
_ROLE_IS_NAMED = re.compile(
    r"^(?i:the|our)\s+(?i:new\s+|current\s+|old\s+)?(?i:cto|ceo|cfo|coo|vp|founder|co-?founder|manager|boss|team lead"
    r"|tech lead|lead|pm|product manager|designer|landlord|landlady|teacher|doctor|gp|dentist|coach|therapist"
    r"|accountant|lawyer|owner|director|editor|supervisor|advisor|adviser|tutor|vet|nanny)\s+(?:is|was)\s+"
    r"(?:called\s+|named\s+)?(?:Mr\.?\s+|Mrs\.?\s+|Ms\.?\s+|Dr\.?\s+)?[A-Z][a-z]+",
)
# What happened to a plan the speaker talks about: "the Japan trip moved to November", "the wedding
# got pushed to June", "the launch was cancelled".
_RESCHEDULED = re.compile(
    r"^(?:the|our|my)\s+(?:[\w'’-]+\s+){0,3}?(?:trip|wedding|party|launch|release|meeting|interview|appointment"
    r"|flight|surgery|exam|move|visit|holiday|vacation|deadline|date|event|concert|show|game|match|class|course|gig"
    r"|tour|festival|race|marathon|lesson|session|shift|operation|closing|opening|premiere|recital"
    r"|reunion|ceremony|dinner|call|review|demo|conference|retreat|booking|reservation|delivery|start)\s+"
    r"(?:got\s+|was\s+|has\s+been\s+|is\s+|'s\s+)?(?:moved|pushed|postponed|rescheduled|delayed|cancell?ed|called off"
    r"|brought forward|changed|shifted|bumped|off)\b",
    re.IGNORECASE,
)
