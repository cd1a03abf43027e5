"""The language heuristics (English): everything that reads meaning off words with patterns and
word lists, kept apart from the stages that call it.

- `rules/`: the offline rule-based extractor (sentences → self-contained statements);
- `gate`: the free heuristic gate (is a chunk worth extracting?);
- `death`, `goal`, `new_value`: updates a sentence reports without a slot (a death, a goal
  reached, a thing rescheduled), read off a sentence and matched against stored statements;
- `linked_slots`, `holder_alias`: slots and holders that answer for each other;
- `forget_requests`: a user asking in the chat that something be forgotten;
- `dated_questions`: questions that name a date, for recall;
- `person`: a statement about "the user" as the user would say it (for the rules).

Imports no stage that calls it (pyproject.toml's import contracts).
"""
