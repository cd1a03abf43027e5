"""The real agent CLIs (Claude Code, Codex): installing them, running them, what they send.

`npm` installs a pinned version once per machine, `agents` runs one isolated from the machine's own
settings, `models` answers them with finished text, `record` writes what they send into
testkit/data/clients for the replay tests.
"""
