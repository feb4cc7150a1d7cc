"""The README tells the truth: its Python blocks run as pasted, its Commands block shows every
command the app has, and its test set-up command is the one CI runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    """The text of the README's `## title` section, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(title)}.*?$(.*?)(?=^## |\Z)", README, re.M | re.S)
    assert match, f"no '## {title}' section in README.md"
    return match.group(1)


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, re.M | re.S)


def test_python_blocks_run_as_pasted(monkeypatch, tmp_path):
    """Every ```python block of the README, run as from the repository's folder (a folder
    with its examples, so that what a block writes lands there) on the bundled model. qa
    needs the bundled QA model; until there is one the test skips at that line."""
    from lfcli.models.bundled import DEFAULT_MODEL, bundled_available
    from lfcli.pipelines.errors import InputError

    if bundled_available(DEFAULT_MODEL) is not None:
        pytest.skip(f"bundled model unavailable: {bundled_available(DEFAULT_MODEL)}")
    blocks = _blocks(README, "python")
    assert blocks
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    for code in blocks:
        try:
            exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
        except InputError as exc:
            if "question-answering" not in str(exc):
                raise
            pytest.skip(f"the README's lfcli.qa line needs a bundled QA model, not here yet ({exc})")


def _commands(command, path=()):
    """Every command path of the click command tree below `command`."""
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield (*path, name)
        yield from _commands(sub, (*path, name))


def test_commands_block_shows_every_command_with_an_example():
    import typer.main

    from lfcli.cli import app

    section = _section("Commands")
    examples = "\n".join(_blocks(section, "bash"))
    for path in _commands(typer.main.get_command(app)):
        if len(path) == 1:
            assert re.search(rf"^lfcli {re.escape(path[0])}\b", examples, re.M), f"no example of `lfcli {path[0]}`"
        else:
            assert " ".join(path) in section, f"`lfcli {' '.join(path)}` is not mentioned in the Commands section"


def _words(line: str) -> list[str]:
    """A command line's words; `python -m pip --quiet` and `pip` compare equal."""
    return [w for w in shlex.split(line) if w not in ("python", "-m", "--quiet")]


def test_the_readme_test_command_is_what_ci_runs():
    setup = _blocks(_section("Set-up"), "bash")[0]
    readme = _words(next(line for line in setup.splitlines() if "pytest" in line))
    ci = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    install = _words(next(line for line in ci if "pip install" in line))
    tests = _words(next(line for line in ci if "pytest" in line))
    cut = readme.index("&&")
    assert readme[:cut] == install
    assert tests[: len(readme) - cut - 1] == readme[cut + 1:]  # CI may add reporting flags (-ra)
