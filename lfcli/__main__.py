"""`python -m lfcli` is the `lfcli` command."""

from .cli import main

main()
