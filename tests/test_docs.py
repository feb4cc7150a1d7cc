"""The user-facing docs tell the truth about the code: every `lfcli` command line in the README
and the model cards names commands and options the CLI has, their links resolve, every bundled
model ships a card that `lfcli models NAME` prints, and no doc (README, cards, the benchmark
record, `--help`) reads like a work log. tests/test_readme.py runs the README's Python block."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from lfcli.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BENCH_README = ROOT / "benchmarks" / "README.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# The pages the README's Documentation table links: one a task, and the shared details.
DOC_PAGES = sorted(p for p in (ROOT / "docs").glob("*.md") if p != ARCHITECTURE)
CARDS_DIR = ROOT / "lfcli" / "data" / "models"
runner = CliRunner()

SHELL_LANGUAGES = {"", "bash", "sh", "shell", "console"}
TASKS = ("classify", "qa", "embed", "corefs")  # what `lfcli TASK` stands for
HELP_OPTIONS = {"-h", "--help"}


def _card_paths() -> list[Path]:
    from lfcli.models.bundled import card_path, model_names

    return [card_path(name) for name in model_names()]


def _docs_with_commands() -> list[Path]:
    return [README, ARCHITECTURE, *DOC_PAGES, *_card_paths()]


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block."""
    return re.findall(r"^```([\w-]*)[^\n]*\n(.*?)^```", text, re.M | re.S)


def _inline_code(text: str) -> list[str]:
    """Inline code spans outside fenced blocks, a line break inside one read as a space."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]


def _simple_commands(line: str) -> list[list[str]]:
    """A shell line's simple commands as word lists: split at |, &&, || and ;, quotes kept
    together, comments dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands, words = [], []
    for token in lexer:
        if token and set(token) <= set("|&;"):
            commands.append(words)
            words = []
        else:
            words.append(token)
    commands.append(words)
    return [c for c in commands if c]


def lfcli_command_lines(path: Path) -> list[tuple[str, list[str]]]:
    """(the line as written, its words after `lfcli`) for every lfcli command in the doc's
    shell blocks and inline code. Synopsis brackets ([-o OUT], [NAME]) are read as optional
    words."""
    text = path.read_text(encoding="utf-8")
    lines = [line for language, body in _fenced_blocks(text) if language in SHELL_LANGUAGES
             for line in body.splitlines()]
    lines += [span for span in _inline_code(text) if span.startswith("lfcli ")]
    found = []
    for line in lines:
        stripped = line.strip().removeprefix("$ ")
        if "lfcli" not in stripped:
            continue
        try:
            commands = _simple_commands(stripped)
        except ValueError as exc:  # unbalanced quotes: the line is broken as shell
            raise AssertionError(f"{path.name}: cannot parse {line!r} as a shell line ({exc})") from None
        for words in commands:
            if words[0] == "lfcli":
                found.append((stripped, [w.strip("[]") for w in words[1:] if w.strip("[]")]))
    return found


def lfcli_command_lines_from(text: str) -> list[tuple[str, list[str]]]:
    """lfcli_command_lines of a doc holding `text` as one bash block."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "doc.md"
        path.write_text(f"```bash\n{text}```\n", encoding="utf-8")
        return lfcli_command_lines(path)


def _is_placeholder(word: str) -> bool:
    return bool(re.fullmatch(r"[A-Z][A-Z_]*(\.\.\.)?", word))


def _options(command) -> set[str]:
    names = set(HELP_OPTIONS)
    for param in command.params:
        names.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("-"))
    return names


def check_command(words: list[str]) -> list[str]:
    """What is wrong with `lfcli WORDS` (an empty list when it names only what exists)."""
    root = typer.main.get_command(app)
    current = [("lfcli", root)]  # a placeholder such as TASK stands for several commands
    problems = []
    for word in words:
        if word.startswith("-") and word != "-":
            option = word.split("=", 1)[0]
            for name, command in current:
                if option not in _options(command):
                    problems.append(f"`{name}` has no option {option}")
            continue
        groups = [(n, c) for n, c in current if hasattr(c, "commands")]  # typer's (vendored) click groups
        if not groups:
            continue  # an argument of a command
        expanded = []
        for name, group in groups:
            if _is_placeholder(word):
                subnames = TASKS if group is root and word == "TASK" else sorted(group.commands)
            else:
                subnames = [word]
            for sub in subnames:
                if sub in group.commands:
                    expanded.append((f"{name} {sub}", group.commands[sub]))
                else:
                    problems.append(f"`{name}` has no command {sub!r}")
        current = expanded
        if not current:
            break
    return problems


# -- (1) the commands the docs show exist, with the options they name ----------------------
def test_the_checker_catches_what_it_should():
    assert check_command(["embed", "docs/", "-o", "x.jsonl", "--max-tokens", "4096"]) == []
    assert check_command(["finetune", "TASK", "DATA...", "-o", "DIR"]) == []
    assert check_command(["TASK", "INPUT...", "-o", "OUT", "options"]) == []
    assert check_command(["--version", "--verbose"]) == []
    assert check_command(["embed", "--no-such-option"]) == ["`lfcli embed` has no option --no-such-option"]
    assert check_command(["embedd", "docs/"]) == ["`lfcli` has no command 'embedd'"]
    assert check_command(["finetune", "classify", "--top-k", "3"]) == ["`lfcli finetune classify` has no option --top-k"]
    assert check_command(["TASK", "x", "--singletons"])  # only corefs has it
    words = [w for _, w in lfcli_command_lines_from("cat a.txt | lfcli embed - -o 'x y.jsonl'  # stdin\n")]
    assert words == [["embed", "-", "-o", "x y.jsonl"]]


@pytest.mark.parametrize("doc", _docs_with_commands(), ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_commands_name_only_commands_and_options_that_exist(doc):
    lines = lfcli_command_lines(doc)
    assert lines, f"{doc}: no lfcli command found"
    problems = [f"{line!r}: {problem}" for line, words in lines for problem in check_command(words)]
    assert not problems, "\n".join(problems)


def test_readme_shows_every_bundled_models_card_and_cli_command():
    from lfcli.models.bundled import model_names

    text = README.read_text(encoding="utf-8")
    for name in model_names():
        assert f"(lfcli/data/models/{name}/README.md)" in text, f"README links no card of {name}"
    words = {tuple(w[:1]) for _, w in lfcli_command_lines(README)}
    assert ("models",) in words


# -- (2) links resolve ---------------------------------------------------------------------
def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {slug(h) for h in re.findall(r"^#{1,6} +(.+?) *$", text, re.M)}


def _links(path: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.M | re.S)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("doc", [README, BENCH_README, ARCHITECTURE, *DOC_PAGES, *_card_paths()],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_links_and_anchors_resolve(doc):
    bad = []
    for target in _links(doc):
        if re.match(r"[a-z]+://", target):
            continue
        file_part, _, anchor = target.partition("#")
        path = (doc.parent / file_part).resolve() if file_part else doc
        if not path.exists():
            bad.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            bad.append(f"{target}: no heading with that anchor in {path.relative_to(ROOT)}")
    assert not bad, f"{doc.relative_to(ROOT)}:\n" + "\n".join(bad)


def test_the_benchmark_pictures_are_linked_from_where_they_are_discussed():
    record = BENCH_README.read_text(encoding="utf-8")
    for png in sorted((ROOT / "benchmarks" / "results").glob("*.png")):
        assert f"](results/{png.name})" in record, f"benchmarks/README.md does not show {png.name}"


# -- (3) no doc reads like a work log -----------------------------------------------------
# Words that say when or by whom a figure was taken instead of which machine, date and
# command: a figure carries its CPU, date and command. Kept tight so as not to flag
# ordinary prose ("a device this machine lacks" is about the user's machine and is fine).
WORK_LOG = [
    (r"\b(this|that|earlier|previous|last|next) session\b", re.I),
    (r"\bthe issue'?s author\b", re.I),
    (r"\bmeasured by\b", re.I),
    (r"\bwe (measured|tried|ran|found|saw|timed|got)\b", re.I),
    (r"\bwe\b", re.I),
    (r"\bour\b", re.I),
    (r"(?<![\w/.-])I(?=['’][a-z]| [a-z])", 0),  # "I measured", "I've": the pronoun, not I/O
    (r"\bthis (afternoon|morning|evening)\b", re.I),
    (r"\b(yesterday|today|tonight)\b", re.I),
    (r"\b(measured|timed|run|ran) (here )?on this machine\b", re.I),
    (r"\bthis project's machine\b", re.I),
    (r"\bon my machine\b", re.I),
]


def work_log_phrases(text: str) -> list[str]:
    found = []
    for pattern, flags in WORK_LOG:
        for match in re.finditer(pattern, text, flags):
            start = max(0, match.start() - 40)
            found.append(f"{match.group(0)!r} in ...{text[start:match.end() + 40]!r}...")
    return found


def test_the_work_log_check_catches_what_it_should():
    assert work_log_phrases("Measured on this machine (2-core EPYC)")
    assert work_log_phrases("not measured this session; the issue's author measured 41.0")
    assert work_log_phrases("We tried blocks of 64. I measured it this afternoon.")
    assert not work_log_phrases("a device or attention backend this machine lacks is a usage error")
    assert not work_log_phrases("checkpoint I/O, Immune_system; 2026-11-23, 2-core AMD EPYC")


def _help_texts() -> dict[str, str]:
    root = typer.main.get_command(app)
    texts, stack = {}, [[]]
    while stack:
        path = stack.pop()
        result = runner.invoke(app, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        texts[" ".join(["lfcli", *path])] = result.output
        command = root
        for name in path:
            command = command.commands[name]
        stack.extend([*path, name] for name in getattr(command, "commands", {}))
    return texts


@pytest.mark.parametrize("doc", [README, BENCH_README, ARCHITECTURE, *_card_paths()], ids=lambda p: str(p.relative_to(ROOT)))
def test_no_doc_reads_like_a_work_log(doc):
    phrases = work_log_phrases(doc.read_text(encoding="utf-8"))
    assert not phrases, f"{doc.relative_to(ROOT)}:\n" + "\n".join(phrases)


def test_no_help_text_reads_like_a_work_log():
    problems = [f"{path}: {p}" for path, text in _help_texts().items() for p in work_log_phrases(text)]
    assert not problems, "\n".join(problems)


# -- (4) a card for every bundled model, shipped with it and printed by `lfcli models NAME` ----
CARD_SECTIONS = ["## What it does, and what it does not", "## Base, data and licence", "## Scores",
                 "## Speed", "## Known failure modes", "## Training curve"]


def test_every_bundled_model_has_a_card_in_the_package():
    from lfcli.models.bundled import BUNDLED, TASK_MODELS, card_path, model_names, task_models_dir

    assert model_names() == [*BUNDLED, *TASK_MODELS]
    folders = {p.name for p in CARDS_DIR.iterdir() if p.is_dir()}
    assert folders == set(model_names()), "a folder of lfcli/data/models that is no bundled model, or the reverse"
    for name in model_names():
        path = card_path(name)
        assert path == task_models_dir() / name / "README.md" and path.is_file(), f"no card for {name}"
        text = path.read_text(encoding="utf-8")
        assert text.startswith("---\n") and "\nlicense: " in text.split("\n---\n")[0], f"{name}: no hub metadata"
        assert f"\n# {name}\n" in text
        for section in CARD_SECTIONS:
            assert section in text, f"{name}'s card has no '{section}'"
        assert "TODO" not in text and "TBD" not in text


def test_the_cards_are_package_data():
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "data/models/*/README.md" in config["tool"]["setuptools"]["package-data"]["lfcli"]


def test_task_cards_give_split_size_command_cpu_and_date():
    from lfcli.models.bundled import TASK_MODELS, read_card

    for name in TASK_MODELS:
        text = read_card(name)
        scores = text.split("## Scores", 1)[1].split("\n## ", 1)[0]
        assert re.search(r"python benchmarks/eval_\w+\.py", scores), f"{name}: no command with its scores"
        assert re.search(r"AMD EPYC|Intel Xeon", scores), f"{name}: no CPU with its scores"
        assert re.search(r"20\d\d-\d\d-\d\d", scores), f"{name}: no date with its scores"
        assert re.search(r"\d+ (documents|questions|rows)", scores), f"{name}: no split size with its scores"
        assert "lfcli finetune" in text.split("## How it was made", 1)[1], f"{name}: no training command"
        assert re.search(r"!\[[^\]]*\]\([^)]+\.png\)", text), f"{name}: no training-curve picture"


@pytest.mark.parametrize("name", ["minilm-l6-long", "minilm-l6-long-squad", "minilm-l6-long-litbank-coref",
                                  "mpnet-base-long", "mpnet-base-long-squad", "mpnet-base-long-litbank-coref"])
def test_models_name_prints_the_card(name):
    from lfcli.models.bundled import read_card

    result = runner.invoke(app, ["models", name])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == read_card(name).strip()
    assert not result.stdout.startswith("---")  # the metadata header is for model hubs, not readers


def test_models_with_an_unknown_name_is_a_one_line_usage_error():
    from lfcli.models.bundled import model_names

    result = runner.invoke(app, ["models", "no-such-model"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lfcli: error: unknown model 'no-such-model'")
    assert all(name in lines[0] for name in model_names())
    assert result.stdout == ""


def test_models_lists_no_speed_and_dates_its_figures():
    """`lfcli models` gives no speed (one machine's; the cards have it), and its figures name
    the dtype, CPU and date they were measured with."""
    from lfcli.pipelines.infer.catalog import list_models

    from lfcli.models.bundled import model_names

    listed = list_models()
    assert [m["name"] for m in listed] == model_names()
    for m in listed:
        for key in ("description", "trained_on", "scores"):
            text = m.get(key) or ""
            assert not re.search(r"docs?/s|documents/min|tokens/s|/min\b|per (second|minute)", text), (m["name"], key, text)
        assert m.get("scores"), f"lfcli models gives no figures for {m['name']}"
        assert re.search(r"\b(fp32|bf16)\b", m["scores"]), (m["name"], "no dtype", m["scores"])
        assert any(cpu in m["scores"] for cpu in CPUS), (m["name"], "no CPU", m["scores"])
        assert re.search(r"20\d\d-\d\d-\d\d", m["scores"]), (m["name"], "no date", m["scores"])


def test_the_base_models_card_folder_is_no_model(monkeypatch):
    """lfcli/data/models/minilm-l6-long holds only a card: the base still comes from the cache,
    and no task mistakes the folder for a trained model."""
    from lfcli.models import bundled
    from lfcli.pipelines import registry

    folder = bundled.task_models_dir() / bundled.DEFAULT_MODEL
    assert sorted(p.name for p in folder.iterdir()) == ["README.md"]
    assert bundled.DEFAULT_MODEL not in bundled.TASK_MODELS
    assert bundled.default_model(registry.get("embed").models) == bundled.DEFAULT_MODEL
    assert bundled.default_model(registry.get("classify").models) == bundled.DEFAULT_MODEL
    assert bundled.default_model([bundled.DEFAULT_MODEL]) == bundled.DEFAULT_MODEL  # a card folder is no model
    monkeypatch.setattr(bundled, "ensure_bundled", lambda name: Path("/cache") / name)
    assert bundled.resolve_model(bundled.DEFAULT_MODEL) == Path("/cache") / bundled.DEFAULT_MODEL


# -- (5) the training curves ----------------------------------------------------------------
def test_plot_training_draws_a_metrics_file(tmp_path):
    pytest.importorskip("matplotlib")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import plot_training
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    metrics = tmp_path / "metrics.jsonl"
    lines = [{"event": "start", "max_steps": 30}]
    lines += [{"event": "step", "step": s, "loss": 3.0 / s} for s in range(1, 31)]
    lines += [{"event": "eval", "step": 10, "epoch": 1.0, "score": 40.0, "conll_f1": 40.0, "best": True},
              {"event": "eval", "step": 20, "epoch": 2.0, "score": 55.0, "conll_f1": 55.0, "best": True},
              {"event": "eval", "step": 30, "epoch": 3.0, "score": 50.0, "conll_f1": 50.0, "best": False}]
    metrics.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    losses, evals = plot_training.read_metrics(metrics)
    assert len(losses) == 30 and [e["step"] for e in evals] == [10, 20, 30]
    assert plot_training.kept(evals)["step"] == 20
    assert plot_training.score_label(evals, "score") == "validation CoNLL F1"
    out = plot_training.plot(metrics, tmp_path / "curve.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for source, png, _ in plot_training.BUNDLED_CURVES:  # the committed curves and their sources
        assert source.is_file() and png.is_file(), (source, png)


# -- (6) headline figures: each card's "Headline" lines, the same wherever they are quoted -----
# A card states its headline figures once per section, in bold, with the dtype, CPU and date
# they were measured with: "Headline, as `lfcli models` and the README quote it: **F1 72.9**
# ... and **F1 66.6** ...; fp32, 2-core AMD EPYC (AVX512-BF16), 2026-11-23." The card is the
# source: retrain a model, change its card, and this test names every other place to change.
HEADLINE = re.compile(r"Headline, as (?P<where>[^:]+?) quotes? it: (?P<figures>.+?); "
                      r"(?P<dtype>fp32|bf16|fp16), (?P<cpu>[^,]+), (?P<date>20\d\d-\d\d-\d\d)\.")
CPUS = ("AMD EPYC", "Intel Xeon", "CPU not recorded")


def _flat(text: str) -> str:
    return " ".join(text.split())


def card_headlines(name: str) -> list[dict]:
    """The headline lines of `name`'s card: section, where they are quoted, the bold figures,
    dtype, CPU (one of CPUS), date, and the sentence itself."""
    from lfcli.models.bundled import read_card

    found = []
    for section in re.split(r"^## ", read_card(name), flags=re.M)[1:]:
        title, _, body = section.partition("\n")
        for m in HEADLINE.finditer(_flat(body)):
            cpu = [c for c in CPUS if c in m["cpu"]]
            assert len(cpu) == 1, f"{name}'s card, {title}: the headline names no known CPU ({m['cpu']!r})"
            found.append({"section": title.strip(), "where": m["where"], "figures": re.findall(r"\*\*(.+?)\*\*", m["figures"]),
                          "dtype": m["dtype"], "cpu": cpu[0], "date": m["date"], "sentence": m.group(0)})
    return found


def _disagreements(text: str, headline: dict) -> list[str]:
    """What of the headline (its figures, dtype, CPU, date) `text` does not say."""
    flat = _flat(text)
    wanted = [*headline["figures"], headline["dtype"], headline["cpu"], headline["date"]]
    return [item for item in wanted if item not in flat]


def _readme_section(title: str) -> str:
    return README.read_text(encoding="utf-8").split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _performance_rows() -> list[tuple[str, str]]:
    """The README's Performance table: (row, its CPU-and-date cell, "same" read as the row
    above's)."""
    rows = [line for line in _readme_section("Performance").splitlines() if line.startswith("|")]
    column = [c.strip() for c in rows[0].strip("|").split("|")].index("CPU, date")
    out, cpu = [], ""
    for row in rows[2:]:
        cell = row.strip("|").split("|")[column].strip()
        cpu = cpu if cell == "same" else cell
        out.append((row, cpu))
    return out


def test_the_headline_checker_reads_a_headline():
    found = HEADLINE.search("Headline, as the README quotes it: **29.9 docs/s** on short documents and "
                            "**3,690 tokens/s** end to end; fp32, 2-core Intel Xeon (AMX), 2026-11-22. More.")
    assert found and found["where"] == "the README" and found["dtype"] == "fp32" and found["date"] == "2026-11-22"
    headline = {"figures": ["29.9 docs/s", "3,690 tokens/s"], "dtype": "fp32", "cpu": "Intel Xeon", "date": "2026-11-22"}
    assert _disagreements("29.9 docs/s, 3,690 tokens/s; fp32, 2-core Intel Xeon (AMX), 2026-11-22", headline) == []
    assert _disagreements("29.9 docs/s; bf16, 2-core AMD EPYC, 2026-11-24", headline) == [
        "3,690 tokens/s", "fp32", "Intel Xeon", "2026-11-22"]


@pytest.mark.parametrize("name", ["minilm-l6-long", "minilm-l6-long-squad", "minilm-l6-long-litbank-coref",
                                  "mpnet-base-long", "mpnet-base-long-squad", "mpnet-base-long-litbank-coref"])
def test_the_headline_figures_agree_everywhere(name):
    """Each bundled model's headline figures, as its card states them, are the same (with the
    same dtype, CPU and date) in `lfcli models`, the README's models table and its notes on
    the model, and the README's performance table; and the card's own tables give them."""
    from lfcli.models.bundled import read_card
    from lfcli.pipelines.infer.catalog import list_models

    headlines = card_headlines(name)
    scores = [h for h in headlines if h["section"] == "Scores"]
    assert len(scores) == 1, f"{name}'s card has no one Headline line in its Scores"
    assert "`lfcli models`" in scores[0]["where"] and "README" in scores[0]["where"]
    card = _flat(read_card(name))
    problems = []
    for headline in headlines:
        assert headline["figures"], f"{name}: a headline without bold figures: {headline['sentence']}"
        rest = card.replace(headline["sentence"], "")
        for figure in headline["figures"]:
            for number in re.findall(r"\d[\d,]*(?:\.\d+)?", figure):
                if not re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d]|[.,]\d)", rest):
                    problems.append(f"the card's headline {figure!r}: {number} is nowhere else in the card")
        places = {}
        if "`lfcli models`" in headline["where"]:
            places["lfcli models"] = next(m["scores"] for m in list_models() if m["name"] == name)
        if "README" in headline["where"] and headline["section"] == "Scores":
            models = _readme_section("Models")
            places["the README's models table"] = next(line for line in models.splitlines() if line.startswith(f"| `{name}`"))
            note = re.search(rf"^- `{re.escape(name)}`:.*?(?=^- |^\s*$)", models, re.M | re.S)
            if note:
                places["the README's note on the model"] = note.group(0)
        for where, text in places.items():
            problems += [f"{where} does not give {item!r} ({text[:80]}...)" for item in _disagreements(text, headline)]
        if "README" in headline["where"] and headline["section"] == "Speed":
            rows = _performance_rows()
            for figure in headline["figures"]:
                quoted = [(row, cpu) for row, cpu in rows if figure in row]
                if not quoted:
                    problems.append(f"the README's performance table does not give {figure!r}")
                for row, cpu in quoted:  # the table is fp32 unless a row says otherwise
                    dtype_ok = headline["dtype"] in row if headline["dtype"] != "fp32" else "bf16" not in row
                    if not (dtype_ok and headline["cpu"] in cpu and headline["date"] in cpu):
                        problems.append(f"the README's performance row for {figure!r} is not {headline['dtype']}, "
                                        f"{headline['cpu']}, {headline['date']}: {row}")
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_the_coref_models_headline_is_its_metrics_json():
    """The coreference card's headline and speed are those of the model folder's metrics.json
    (a model retrained without updating one of them fails here)."""
    from lfcli.models.bundled import read_card, task_models_dir

    name = "minilm-l6-long-litbank-coref"
    metrics = json.loads((task_models_dir() / name / "metrics.json").read_text(encoding="utf-8"))
    conll = f"{metrics['litbank_fold0_dev']['with_singletons']['conll_f1']:.1f}"
    gap = f"{metrics['gap_validation']['overall_f1']:.1f}"
    (scores,) = [h for h in card_headlines(name) if h["section"] == "Scores"]
    assert f"CoNLL F1 {conll}" in scores["figures"] and f"GAP F1 {gap}" in scores["figures"], scores["figures"]
    speed = metrics["speed"]
    card_speed = _flat(read_card(name).split("\n## Speed\n", 1)[1].split("\n## ", 1)[0])
    for figure in (f"{speed['litbank_dev_docs_per_minute_bf16']:.0f} documents per minute in bf16",
                   f"{speed['litbank_dev_docs_per_minute_fp32']:.0f} in fp32", speed["date"]):
        assert figure in card_speed, f"the card's Speed does not give {figure!r}"


def test_the_readme_is_short_and_links_every_doc_page():
    """The README answers the common questions (set-up, a cookbook, the commands, the models)
    and links a page for the rest; every page under docs/ is linked from it."""
    text = README.read_text(encoding="utf-8")
    assert len(text) < 30_000, f"README.md is {len(text):,} characters: move details to docs/"
    for heading in ("## Set-up (two commands)", "## Cookbook", "## Commands", "## Models", "## Documentation",
                    "## Tests and their data"):
        assert f"\n{heading}\n" in text, heading
    for page in DOC_PAGES + [ARCHITECTURE]:
        assert f"(docs/{page.name})" in text, f"the README links no docs/{page.name}"
