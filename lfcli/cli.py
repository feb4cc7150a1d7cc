"""The `lfcli` command: classify | qa | embed | corefs | models | convert | pretrain-continue | ... | show | plot.

Data goes to stdout (or -o FILE), progress and messages to stderr. Exit codes: 0 ok, 1 bad
input, 2 bad usage. Tracebacks only with LFCLI_DEBUG=1. torch is imported only when a
command runs, so `lfcli --help` answers at once.
"""

from __future__ import annotations

# Importing a command module registers its commands on the app, in the order --help lists them.
from . import task_cli  # noqa: F401  classify, qa, embed, corefs
from . import model_cli  # noqa: F401  models, convert, pretrain-continue
from . import evaluate_cli  # noqa: F401  evaluate
from . import train_cli  # noqa: F401  finetune, merge
from . import show_cli  # noqa: F401  show
from . import plot_cli  # noqa: F401  plot
from .app import app


def main():
    app()


if __name__ == "__main__":
    main()
