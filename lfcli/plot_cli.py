"""`lfcli plot RUN_DIR`: a training run's curves as a PNG."""

from __future__ import annotations
