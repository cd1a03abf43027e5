"""The line `tap serve` prints at start about extraction: which model, where, and what it costs."""

from __future__ import annotations

from tap.config import parse_config
from tap.wiring.server import _extraction_line


def test_the_banner_names_the_model_the_server_and_the_reconcile() -> None:
    assert _extraction_line(parse_config("")) == "rules (offline, no LLM)"
    local = parse_config('[extract]\nprovider = "openai"\ngate = "openai"\nopenai_model = "qwen2.5-7b-instruct"')
    line = _extraction_line(local)
    assert line.startswith("openai (qwen2.5-7b-instruct at http://127.0.0.1:8080/v1, reconcile rules), gate openai")
    assert "count $0" in line
    hosted = parse_config(
        '[extract]\nprovider = "openai"\nopenai_url = "https://api.openai.com/v1"\nopenai_model = "gpt-4.1-mini"\n'
        'reconcile = "llm"'
    )
    assert "reconcile llm" in _extraction_line(hosted) and "count $0" not in _extraction_line(hosted)
    ollama = _extraction_line(parse_config('[extract]\nprovider = "ollama"'))
    assert ollama.startswith("ollama (llama3.2, reconcile rules), budget $2.00/day")
