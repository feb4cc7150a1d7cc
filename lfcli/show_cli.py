"""`lfcli show OUTPUT --text INPUTS -o NAME.html`: a task's output drawn over its documents."""

from __future__ import annotations
