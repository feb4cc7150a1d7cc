"""`lfcli evaluate classify|qa|corefs PRED GOLD`: scores of predictions against gold labels."""

from __future__ import annotations

from .cli import app  # noqa: F401  (commands are registered on the one app)
