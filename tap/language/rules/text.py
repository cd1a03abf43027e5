"""Sentence-level text handling for the rules extractor: split, clean the lead, cut off requests.

- `split_sentences`: a turn's sentences and list items ("Dr." and "e.g." do not end a sentence);
- `strip_lead`: drop what opens a sentence without saying anything: interjections ("Oh wow,"),
  acknowledgements ("Thanks!"), connectives before a first-person subject ("So I…" → "I…"),
  asides ("By the way,", "FYI"), and vocatives naming a speaker ("Mel, I…");
- `restore_subject`: put back the "I" that chat drops ("Went home early" → "I went home early");
- `drop_asides`: drop the chat markers and hedges inside a sentence that say nothing about the world
  ("my number changed btw, it's …", "I prefer tea honestly", "…, kinda");
- `statement_part`: the statement before a request in the same sentence ("I just finished my
  degree in CS, so can you recommend courses?" → "I just finished my degree in CS");
- `content_words`: the words that carry meaning (stopwords removed), for thresholds and overlap.

Invariants: pure and deterministic; nothing here decides whether a sentence is kept (tap.language.rules.keep
does), it only normalises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "FUTURE_GOING_TO",
    "MIN_WORDS",
    "clauses",
    "content_words",
    "drop_asides",
    "is_question_clause",
    "normalise_chat",
    "restore_subject",
    "split_sentences",
    "statement_part",
    "strip_lead",
]

MIN_WORDS = 4

# "going to" that speaks of the future ("I'm going to quit", "we're going to Paris in May"), not a
# habit's gerund ("I stopped going to the gym in March": a past fact, its March the last one) or a
# past intention ("I was going to call")
FUTURE_GOING_TO = (
    r"(?<!stopped )(?<!stop )(?<!started )(?<!start )(?<!been )(?<!quit )(?<!keep )(?<!kept )(?<!enjoy )"
    r"(?<!love )(?<!hate )(?<!like )(?<!miss )(?<!avoid )(?<!was )(?<!were )going to"
)

_ABBREVIATION = re.compile(
    r"\b(?:(?i:Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|vs|etc|approx|e\.g|i\.e|a\.m|p\.m|no|approx)|[A-Z])\.(?=\s+\S)"
)
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"”’')\]]*\s+|\n+|\s+[-–—]\s+(?=(?:I|I'm|I've|my|we|our)\b)")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+")
_INTERJECTION = (
    r"hey|hi|hello|wow|whoa|o+h+|a+h+|aw+|yay|yeah|yea|yep|yup|haha+|hah|lol|omg|hmm+|um+|uh|ok|okay|btw|update"
    r"|quick update|news|big news|reminder|quick reminder|friendly reminder|done|welp|ugh|phew|so yeah|good news"
    r"|bad news|heads up|small update|ok so|alright so"
    r"|and|oh and|plus|also|and also|anyway|anyways|so|but|well|then|edit|ps|p\.s\."
    r"|by the way|oh my god|oh wow|fyi|just so you know|for context|for reference|for what it'?s worth|also"
    r"|yes please|no thanks|no thank you|nah|nope"
)
_SOFT_INTERJECTION = (
    r"yes|no|nope|cool|great|awesome|nice|thanks|thank you|right|true|agreed|sure|totally|absolutely"
    r"|definitely|indeed|exactly|well|anyway|anyways|haha|sweet|amazing|wonderful|fantastic|congrats|perfect"
    r"|got it|gotcha|alright|all right|fair enough|makes sense|sounds good|good|oh well|honestly|actually"
)
_CONNECTIVE = r"so|and|but|also|actually|honestly|anyway|anyways|well|plus|then|oh and|and yeah|though|now|besides"
_LEAD = re.compile(
    rf"^(?:(?:{_INTERJECTION})\b[\s,!.…:;-]*|(?:{_SOFT_INTERJECTION})\b\s*[,!.…:;-]+\s*"
    rf"|(?:{_CONNECTIVE}),?\s+(?=(?:I|I'm|I've|I'd|I'll|my|we|we're|we've|our|me)\b))+",
    re.IGNORECASE,
)
_VOCATIVE_START = re.compile(r"^(?P<name>[A-Za-z][a-z]+)\s*(?:[,!.:]+|[^\w\s'’]+)\s*")
_VOCATIVE_END = re.compile(r",\s*(?P<name>[A-Z][a-z]+)(?=\s*[.!?,]|$)")
# A career said résumé-style, without "I": "5 years at an agency in Lisbon", "two years as a nurse".
_SPENT_YEARS = re.compile(
    r"^(?:\d{1,2}(?:\.\d)?|a few|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty)\+?\s+"
    r"(?:years?|yrs?|months?)\s+(?:at|as|in|with|doing|working|teaching)\s(?![^,.;]*\b(?:is|was|are|were)\b)",
    re.IGNORECASE,
)
_DROPPED_NEGATION = re.compile(r"^not\s+(?:\w+ing)\b", re.IGNORECASE)
_DROPPED_BACK = re.compile(r"^(?i:back|home)\s+from\s+[A-Z]")
# 'down to 87 kg now!', 'up to 10 km runs': the speaker's own measure (not 'up to 20 people can come')
_DROPPED_DOWN_TO = re.compile(
    r"^(?:down|up)\s+to\s+\d{1,3}(?:[.,]\d)?\s*(?:kg|kgs|kilos?|lbs?|pounds|st|stone|km|k|miles?)\b", re.IGNORECASE
)
_DROPPED_SUBJECT = re.compile(
    r"^(?:gonna|going|planning|hoping|thinking|trying|working|heading|been|went|got|had|started|finished|loved"
    r"|just|lost|moved|bought|made|took|tried|visited|signed|joined|can't wait|can’t wait|sold|left|quit|switched"
    r"|migrated|dropped|adopted|booked|found|passed|failed|graduated|finally|still|currently|commuting|living"
    r"|using|learning|training|running|doing|reading|watching|playing|building|writing|studying|teaching"
    r"|starting|moving|leaving|joining|switching|flying|visiting|staying|applying|interviewing|selling|buying"
    r"|renamed|named|changed|upgraded|downgraded|ordered|picked|decided|rewrote|rebuilt|shipped|launched"
    r"|released|hired|promoted|love|hate|enjoy|prefer|miss|need|want|own|have|live|work|use|gave|sold|rented"
    r"|killed|ditched|dumped|stopped|ended|closed|cancell?ed|replaced|swapped|traded|no longer|turned"
    r"|bumped|upped|pinned|postponed|rescheduled)\b",
    re.IGNORECASE,
)
_DROPPED_POSSESSIVE = re.compile(
    r"^(?:fav|fave|favourite|favorite|current|new|old|main|usual|daily|go-to|next|latest|best)\s+\w+(?:\s+\w+)?"
    r"\s+(?:is|are|was)\b"
    # what a person has one of, named without "my": "topic is battery modelling", "budget is around 20k"
    r"|^(?:topic|thesis|budget|deadline|salary|rent|commute|schedule|address|birthday|major|degree|diet|role"
    r"|title|goal|target|plan|wedding|flight|appointment|shift|team|stack)\s+(?:is|are)\s+(?!\w+ing\b)",
    re.IGNORECASE,
)
_VERBLESS_ON = re.compile(
    r"^(?P<np>(?:all|the|our|my|both|every)\s+(?:[a-z][\w-]*\s+){0,2}?[a-z][\w-]*)\s+(?=(?:on|in)\s+[^,;]{1,30}\s+now\b)",
    re.IGNORECASE,
)
_BARE_KIN = re.compile(
    r"^(?:the\s+)?(?:mum|mom|dad|mother|father|sister|brother|wife|husband|partner|son|daughter|grandma|grandpa|boss"
    r"|manager|landlord|girlfriend|boyfriend|kids|parents)\s+(?!is\b|are\b)[a-z]+(?:s|ed)\b",
    re.IGNORECASE,
)
_CHAT_WORDS = {
    "im": "I'm",
    "ive": "I've",
    "dont": "don't",
    "doesnt": "doesn't",
    "didnt": "didn't",
    "cant": "can't",
    "wont": "won't",
    "isnt": "isn't",
    "wasnt": "wasn't",
    "arent": "aren't",
    "havent": "haven't",
    "hasnt": "hasn't",
    "thats": "that's",
    "whats": "what's",
    "theres": "there's",
    "youre": "you're",
    "weve": "we've",
    "theyre": "they're",
    "shes": "she's",
    "hes": "he's",
    "couldnt": "couldn't",
    "wouldnt": "wouldn't",
    "shouldnt": "shouldn't",
    "fav": "favourite",
    "fave": "favourite",
    "pls": "please",
    "plz": "please",
    "bc": "because",
    "cuz": "because",
    "coz": "because",
    "tmrw": "tomorrow",
    "tmr": "tomorrow",
    "abt": "about",
    "ppl": "people",
    "u": "you",
    "ur": "your",
    "thx": "thanks",
    "ty": "thanks",
    "rn": "right now",
    "atm": "at the moment",
    "idk": "I don't know",
    "imo": "in my opinion",
    "w/": "with",
    "w/o": "without",
    "i": "I",
    "i'm": "I'm",
    "i've": "I've",
    "i'll": "I'll",
    "i'd": "I'd",
}
_CHAT_WORD = re.compile(
    r"(?<![\w'’/])(?:" + "|".join(re.escape(w) for w in sorted(_CHAT_WORDS, key=len, reverse=True)) + r")(?![\w'’/])",
    re.IGNORECASE,
)
# 'gf' and 'bf' name a partner only after a possessive ('my gf'); elsewhere 'gf' is as likely
# 'gluten-free' ('food needs to be gf'), so it stays as written.
_PARTNER = re.compile(r"\b(my|his|her|their|your|our)\s+(gf|bf)\b", re.IGNORECASE)
_PARTNER_WORDS = {"gf": "girlfriend", "bf": "boyfriend"}
_SHOUTED = re.compile(r"\b[A-Z]+(?:[\s,'’!.-]+[A-Z]+){2,}\b")
_CLAUSE_CUT = re.compile(r",\s+|;\s+|\s+[-–—]+\s+|:\s+(?=\S)")
# A clause asks when it is built as a question, whether or not chat gives it its "?": a question
# word before an auxiliary or "to" ("how do I…", "what's the…", "where to…"), an auxiliary before
# its subject ("is it…", "can you…"), or a short ask ("any tips", "thoughts", "right").
# "what I love is…", "how I met her…" and "right so I put…" state.
_WH = r"what|how|why|when|where|which|who|whose"
_AUX = (
    r"is|are|was|were|do|does|did|can|could|would|will|should|shall|am|has|have|had|isn't|aren't|wasn't|doesn't"
    r"|don't|didn't|can't|won't|wouldn't|shouldn't|haven't|hasn't"
)
_ASKED_SUBJECT = (
    r"i|you|we|they|he|she|it|there|that|this|these|those|my|your|our|their|his|her|the|a|an|any\w*|some\w*"
)
_QUESTION_CLAUSE = re.compile(
    rf"^(?:so\s+|and\s+|but\s+|also\s+|ok\s+|okay\s+)?(?:"
    rf"(?:{_WH})(?:'s|’s|'re|’re|s\b|\s+(?:{_AUX}|to)\b)"
    rf"|(?:what|which|whose|how\s+(?:many|much|long|often))(?:\s+(?!(?:i|we|you|they|he|she)\b)[\w'’-]+){{0,3}}"
    rf"\s+(?:{_AUX})\b"
    rf"|who\s+[a-z]+s\b"
    rf"|(?:{_AUX})\s+(?:{_ASKED_SUBJECT})\b"
    rf"|(?:any|anything|thoughts|ideas|recs|recommendations|suggestions|tips|advice|right|or)\b(?=(?:\W+\w+){{0,3}}\W*$)"
    rf")",
    re.IGNORECASE,
)
# Where a request to the assistant begins inside a sentence that opened with a statement.
_REQUEST_TAIL = re.compile(
    r"(?:(?:,|;|:|\s[-–—])\s*(?:(?:and|so|but|which is why|that'?s why)\s+)?"
    r"|\s(?:and|so|but|which is why|that'?s why)\s+)(?:"
    r"(?:I\s+)?(?:was|am|'m|’m)\s+(?:just\s+)?(?:wondering|curious|hoping (?:you|to get))\b"
    r"|(?:I\s+)?(?:would|'d|’d)\s+(?:really\s+)?(?:like|love|appreciate)\s+(?:some|any|your|a few|to (?:get|know|hear"
    r"|learn|find|see)|it if|if you|you to|help|advice|tips|ideas|suggestions|recommendations)\b"
    r"|(?:can|could|would|will)\s+you\b|(?:do|does)\s+(?:you|anyone)\s+(?:have|know)\b"
    r"|(?:I\s+)?(?:need|want)\s+(?:some\s+|your\s+)?(?:help|advice|tips|ideas|suggestions|recommendations|guidance)\b"
    r"|(?:I'm|I’m|I am)\s+(?:looking|searching)\s+for\s+(?:some\s+|a few\s+)?(?:help|advice|tips|ideas|suggestions"
    r"|recommendations|resources|guidance|options)\b"
    r"|(?:any|got any|what are some)\s+(?:good\s+)?(?:ideas|tips|suggestions|recommendations|advice)\b"
    r"|(?:please\s+)?(?:help me|tell me|show me|give me|recommend|suggest|explain)\b"
    r"|(?:what|how|which|where|why|when)\s+(?:do|does|did|should|would|could|can|is|are|was|were)\b"
    r").*$",
    re.IGNORECASE,
)
_TRAILING_ASIDE = re.compile(
    r"(?:,|\s)\s*(?:by the way|btw|fyi|lol|haha+|lmao|hehe|:\)|:D|😅|😂|🙂|😊|as well|just saying|fwiw)\s*[.!]*\s*$",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|\d+(?:[.,:]\d+)*")
_STOPWORDS = frozenset(
    "the a an and or but so of to in on at for with from by about as is are was were be been being am "
    "it its it's this that these those there here what which who whom when where why how i i'm i've "
    "i'll i'd me my mine we our us you your yours he she him her his they them their just really very "
    "too also so then than now well yeah yes no not dont don't can can't could would should will shall "
    "do does did done have has had get got gonna wanna like some any all more most much many lot lots "
    "thing things stuff way oh hey hi wow cool great good nice awesome amazing totally kinda sure "
    "one ever even still again always never sometimes user user's".split()
)


# Chat markers that never carry content, wherever they stand ("changed btw, it's…", "in March lol").
_CHAT_MARKER = re.compile(
    r"(?P<before>,\s*)?(?<![\w'’])(?:btw|tbh|tbf|ngl|lol|lmao|lmfao|rofl|ha(?:ha)+|he(?:he)+|fwiw)(?![\w'’])[.!]*"
    r"(?P<after>\s*,)?",
    re.IGNORECASE,
)
# Hedges and fillers, dropped only where they stand apart from the clause: set off by commas on
# both sides ("I'm, like, into…"), opening a sentence or clause ("Honestly the commute…"), or
# closing the sentence ("…this quarter, kinda"). Inside a clause they may carry meaning
# ("I like jazz", "take it seriously"), so they stay.
_FILLER = r"like|you know|I mean|I guess|I suppose|honestly|basically|literally|seriously|frankly|to be honest"
_BRACKETED_FILLER = re.compile(rf",\s*(?:{_FILLER})\s*,\s*", re.IGNORECASE)
_OPENING_HEDGE = re.compile(
    r"(?P<start>^(?:(?:ok|okay|so|and|but|well|oh)\b[\s,]*)*|,\s*)"
    r"(?:honestly|basically|literally|seriously|frankly|to be honest"
    r"|not gonna lie|sadly|unfortunately|fortunately|luckily|thankfully)\b[\s,]*(?=\w)",
    re.IGNORECASE,
)
_CLOSING_HEDGE = re.compile(
    r"(?P<gap>,\s*|\s+)(?:(?P<hedge>kinda|sorta|kind of|sort of|I guess|I suppose|basically|honestly|to be honest)"
    r"(?=[\s.!…]*$|\s*,)|(?P<tag>you know)(?=[\s.!…]*$))",
    re.IGNORECASE,
)
# "answer honestly", "spoke honestly": after such a verb "honestly" says how, not how sure.
_HONESTLY_SAYS_HOW = re.compile(
    r"(?:answer|respond|reply|speak|spoke|talk|tell|told|say|said|write|wrote|act|live|be)\w*\s*$", re.IGNORECASE
)


# Emoticons and emoji say how, not what ("no more cheese for me :(", "ahead of schedule 😎").
_EMOTICON = re.compile(
    r"(?<![:/\d])[:;=][-']?[()\[\]DPpOo/\\|*3]+(?![\w(/])|(?<!\S)(?:<3+|x[Dd]|\^_*\^)(?!\S)"
    r"|[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B50\u2B55\uFE0F\u200D]+"
)


def drop_asides(sentence: str) -> str:
    """The sentence without chat markers and stand-alone hedges: "my phone number changed btw, it's
    0612 now" → "my phone number changed, it's 0612 now"; "I prefer Postgres over Snowflake honestly"
    → "I prefer Postgres over Snowflake"; "Honestly the commute is fine" → "the commute is fine"."""
    sentence = _EMOTICON.sub(", ", sentence)  # a face ends what it follows, as a comma would ("lucas 😩 try…")
    sentence = _CHAT_MARKER.sub(_marker_gap, sentence)
    sentence = _BRACKETED_FILLER.sub(" ", sentence)
    sentence = _OPENING_HEDGE.sub(lambda m: m.group("start"), sentence)
    sentence = _CLOSING_HEDGE.sub(_closing_gap, sentence)
    sentence = re.sub(r"\s+([,.!?;:…])", r"\1", sentence)
    sentence = re.sub(r",(?:\s*,)+", ",", re.sub(r",(?=\s*[.!?;:…])", "", sentence))
    return re.sub(r"\s{2,}", " ", sentence).strip(" ,;")


def _marker_gap(match: re.Match[str]) -> str:
    """What a dropped marker leaves: one comma where one comma set it off, else a space."""
    return ", " if bool(match.group("before")) != bool(match.group("after")) else " "


def _closing_gap(match: re.Match[str]) -> str:
    hedge = (match.group("hedge") or "").lower()
    if hedge == "honestly" and _HONESTLY_SAYS_HOW.search(match.string[: match.start()]):
        return match.group(0)
    if match.group("tag") and not match.group("gap").startswith(","):
        return match.group(0)  # "…and let Deborah know", "…what you know": only ", you know" at the end is a tag
    return ""


def normalise_chat(text: str) -> str:
    """Chat spelling as prose: 'im' → "I'm", 'dont' → "don't", 'fav' → 'favourite', 'pls' → 'please'
    (not a word in capitals: "she's an IM" names a title); a sentence shouted in capitals is read
    in lower case ("WE CLOSED ON THE HOUSE")."""
    text = _SHOUTED.sub(lambda m: m.group(0).lower(), text)
    text = _PARTNER.sub(lambda m: f"{m.group(1)} {_PARTNER_WORDS[m.group(2).lower()]}", text)
    return _CHAT_WORD.sub(_chat_word, text)


def _chat_word(match: re.Match[str]) -> str:
    """The prose spelling of a chat word; a word in capitals is an acronym ("an IM", "the IVE")."""
    word = match.group(0)
    return word if word.isupper() and len(word) > 1 else _CHAT_WORDS[word.lower()]


def clauses(sentence: str) -> list[str]:
    """The sentence without its question and request clauses: "how do nurses sleep, I've been on
    nights for 3 months" → "I've been on nights for 3 months"; "fav author is Le Guin, any recs?" →
    "fav author is Le Guin". A sentence that opens with a question is all question ([])."""
    parts = [p.strip() for p in _CLAUSE_CUT.split(sentence) if p.strip()]
    if not parts or _QUESTION_CLAUSE.match(parts[0]) and sentence.rstrip().endswith("?"):
        return [] if parts and len(parts) == 1 else [p for p in parts[1:] if not is_question_clause(p)]
    return [p for n, p in enumerate(parts) if not is_question_clause(p) or (n and _dropped_subject_past(p))]


def is_question_clause(clause: str) -> bool:
    """Whether the clause asks: it ends with a question mark or opens like a question ("how do I…")."""
    return clause.rstrip().endswith("?") or bool(_QUESTION_CLAUSE.match(clause))


# A later clause that opens with an auxiliary followed by no subject ("…, did my first half marathon in
# 1:52", "…, was a great trip") tells what the speaker did: chat drops the "I". With a subject after it
# ("did you …", "is it …", "can we …") it asks.
_AUXILIARY_NO_SUBJECT = re.compile(
    r"^(?:did|was|were|had)\s+(?!(?:you|i|we|they|he|she|it|there|that|this|anyone|anybody|somebody|someone)\b)"
    r"(?:my|our|a|an|the|some|\d|[a-z]+ed\b)",
    re.IGNORECASE,
)


def _dropped_subject_past(clause: str) -> bool:
    """Whether a clause cut from a longer sentence is a statement without its subject (see above)."""
    return not clause.rstrip().endswith("?") and bool(_AUXILIARY_NO_SUBJECT.match(clause))


def split_sentences(text: str) -> list[str]:
    """Sentences and list items of a turn (abbreviations such as 'Dr.' do not end a sentence)."""
    protected = _ABBREVIATION.sub(lambda m: m.group(0)[:-1] + "\u2024", text)
    parts = (_LIST_MARK.sub("", part).strip().replace("\u2024", ".") for part in _SENTENCE_END.split(protected))
    return [part for part in parts if part]


def is_stopword(word: str) -> bool:
    """Whether a lower-cased word carries no meaning of its own ('the', 'to', 'now')."""
    return word in _STOPWORDS


def content_words(text: str) -> list[str]:
    """Words of 3+ letters (or any number) that carry meaning, lower-cased, stopwords removed."""
    words = (word.lower().strip("'’-") for word in _WORD.findall(text))
    return [word for word in words if (len(word) >= 3 or word.isdigit()) and word not in _STOPWORDS]


def strip_lead(sentence: str, names: Sequence[str]) -> str:
    """Drop leading interjections, asides, connectives and vocatives ('Wow, Mel!', 'So I…' → 'I…')."""
    previous = None
    while previous != sentence:
        previous = sentence
        sentence = _LEAD.sub("", sentence).strip()
        sentence = _VOCATIVE_START.sub(lambda m: _unless_name(m, names), sentence)
    return _VOCATIVE_END.sub(lambda m: _unless_name(m, names), sentence).strip()


def _unless_name(match: re.Match[str], names: Sequence[str]) -> str:
    """'' when the matched word is a speaker's name or its short form ('Mel' for Melanie)."""
    word = match.group("name").lower()
    is_name = len(word) >= 3 and any(name.lower().startswith(word) for name in names)
    return "" if is_name else match.group(0)


def restore_subject(sentence: str) -> str:
    """Put back the 'I' that chat drops: 'Gonna try it' → "I'm gonna try it", 'Went home' → 'I went
    home', 'fav author is Le Guin' → 'my fav author is Le Guin'."""
    if _DROPPED_POSSESSIVE.match(sentence) or _BARE_KIN.match(sentence):
        return "my " + re.sub(r"^the\s+", "", sentence, flags=re.IGNORECASE)  # "the kids renamed…": the speaker's
    verbless = _VERBLESS_ON.match(sentence)
    if verbless:  # "all services on node 22 now" → "all services are on node 22 now"
        noun = verbless.group("np").split()[-1].lower()
        verb = "are" if noun.endswith("s") and not noun.endswith("ss") else "is"
        return f"{verbless.group('np')} {verb}{sentence[verbless.end('np') :]}"
    if _DROPPED_NEGATION.match(sentence):  # 'not smoking anymore' → "I'm not smoking anymore"
        return "I'm " + sentence
    if _DROPPED_BACK.match(sentence) or _DROPPED_DOWN_TO.match(sentence):  # 'back from Japan!', 'down to 87 kg now'
        return "I'm " + sentence[0].lower() + sentence[1:]
    if _SPENT_YEARS.match(sentence):  # '5 years at an agency in Lisbon' → "I've spent 5 years at…"
        return "I've spent " + sentence
    match = _DROPPED_SUBJECT.match(sentence)
    if match and _GERUND_SUBJECT.match(sentence):
        if _ANYONE.search(sentence):
            return sentence  # "playing it helps me", "running can boost your mood": the person is named
        return f"for me, {sentence[0].lower()}{sentence[1:]}"  # "Learning German has been tough": the speaker's view
    if not match:
        return sentence
    word = match.group(0).lower()
    if word in _ADVERB_OPENERS and not _verb_follows(sentence[match.end() :]):
        if _PLACE_FOLLOWS.match(sentence[match.end() :]):  # 'still under my budget', 'just back from Rome'
            return "I'm " + sentence
        return sentence  # 'finally some sci fi', 'still no word': no verb, no dropped 'I'

    verb = word
    if word in _ADVERB_OPENERS:  # 'currently fighting with…' → "I'm currently fighting with…"
        following = re.match(r"\s*([a-z]+)", sentence[match.end() :], re.IGNORECASE)
        verb = following.group(1).lower() if following else word
    prefix = "I've " if verb == "been" else "I'm " if verb.endswith(("ing", "gonna")) else "I "
    return prefix + word + sentence[match.end() :]


_ADVERB_OPENERS = frozenset({"just", "finally", "still", "currently"})
# An -ing opener that is the sentence's subject, not a verb with its "I" dropped: "Staying fit is key",
# "Starting a business takes courage", "Visiting castles is on my list" (but "starting at the Royal
# Free in August" and "running late, sorry" are what the speaker does).
_ANYONE = re.compile(r"\b(?:I|my|me|mine|myself|we|our|us|you|your|yours)\b", re.IGNORECASE)
_GERUND_SUBJECT = re.compile(
    r"^[a-z]+ing\b[^,.;!?]*?\s(?:is|was|are|were|has|had|can|could|will|would|makes|made|sounds|seems|takes|took|keeps"
    r"|kept|builds|gives|gave|helps|helped|means|meant|feels|felt|brings|brought|requires|needs|matters)\b",
    re.IGNORECASE,
)
# After an opening adverb, where the speaker is: chat drops "I'm" before it ("still under my budget",
# "finally off nights", "currently at Google"); "still no word", "finally some sci fi" have no place.
_PLACE_FOLLOWS = re.compile(
    r"\s*(?:under|over|off|on|in|at|back|out of|away|home|from|with|without|into|behind|ahead of|between)\b",
    re.IGNORECASE,
)


def _verb_follows(rest: str) -> bool:
    """Whether the words after an opening adverb start with a verb ('just moved', 'finally got')."""
    rest = rest.strip()
    return bool(_DROPPED_SUBJECT.match(rest)) or bool(re.match(r"^[a-z]+(?:ed|ing)\b", rest, re.IGNORECASE))


def statement_part(sentence: str) -> str:
    """The sentence up to where a request to the assistant begins ('' when it is all request),
    without a trailing aside ('…, by the way.', '… lol')."""
    sentence = _TRAILING_ASIDE.sub("", sentence)
    match = _REQUEST_TAIL.search(sentence)
    if match is None:
        return sentence
    head = sentence[: match.start()].rstrip(" ,;:-–—")
    return head if len(head.split()) >= MIN_WORDS else ""
