"""Where the shared real data is (../shared/data beside the repository, or $LFCLI_SHARED), and
a skip with the reason when a test's file is absent: users' clones have no shared folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def _shared_data() -> Path:
    env = os.environ.get("LFCLI_SHARED")
    if env:
        base = Path(env).expanduser()
        return base / "data" if (base / "data").is_dir() else base
    return Path(__file__).resolve().parents[2] / "shared" / "data"


DATA = _shared_data()


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is missing: the shared data folder (../shared/data or $LFCLI_SHARED) is not here")
    return path
