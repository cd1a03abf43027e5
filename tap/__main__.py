"""`python -m tap` runs the CLI (through tap.launch, so `python -m tap hook …` starts fast too)."""

from tap.launch import main

main()
