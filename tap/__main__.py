"""`python -m tap` runs the CLI."""

from tap.cli import main

main()
