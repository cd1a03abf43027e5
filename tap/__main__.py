"""`python -m tap` runs the CLI (through tap.cli.launch, so `python -m tap hook …` starts fast too)."""

from tap.cli.launch import main

main()
