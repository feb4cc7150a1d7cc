"""The README's cookbook runs as written: every `lfcli` line of its bash block, in order, on small
inputs this test makes (a folder of contracts with PDFs among them, a book, a questions file,
a Parquet batch, notes in cp1252), on the bundled models; the `--engine ray` line too where
Ray is installed."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

STORY = ("Anna Varga keeps the lighthouse on the north cape. Every evening she climbs the stairs and lights "
         "the lamp, and the ships pass the rocks in safety. Her brother Teodor sails a fishing boat from the "
         "harbour at Kessel, a small town of grey houses below the cliffs. ")


def cookbook_lines() -> list[str]:
    section = README.split("\n## Cookbook\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```bash\n(.*?)^```", section, re.M | re.S).group(1)
    return [line for line in block.splitlines() if line.startswith("lfcli ")]


def make_inputs(folder: Path) -> None:
    fpdf = pytest.importorskip("fpdf", reason="the cookbook's PDFs are made with fpdf2: pip install 'lfcli[dev]'")
    import pyarrow as pa
    import pyarrow.parquet as pq

    contracts = folder / "contracts"
    contracts.mkdir()
    for name, pages in (("lease.pdf", ["The lease runs for five years from 1 March.", "The tenant pays the rent monthly."]),
                        ("employment.pdf", ["The employee works forty hours a week.", "Notice is one month."])):
        pdf = fpdf.FPDF()
        pdf.set_font("helvetica", size=12)
        for text in pages:
            pdf.add_page()
            pdf.multi_cell(0, 6, text)
        pdf.output(str(contracts / name))
    (contracts / "licence.txt").write_text("Permission is granted to copy and modify the software.")
    chapters = [f"Chapter {k}. " + STORY * 6 + f"In chapter {k} a storm came from the west." for k in range(1, 9)]
    (folder / "book.txt").write_text("\n\n".join(chapters))
    (folder / "questions.txt").write_text("Who keeps the lighthouse?\nWhere does Teodor sail from?\n")
    pq.write_table(pa.table({"doc_id": ["a", "b", "c"], "body": [STORY, "A short note.", STORY * 3]}),
                   folder / "batch.parquet")
    notes = folder / "notes"
    notes.mkdir()
    (notes / "fievre.txt").write_bytes("Le patient a de la fièvre depuis trois jours.".encode("cp1252"))
    (notes / "plain.txt").write_text("A plain UTF-8 note.")


def test_the_cookbook_has_the_common_jobs():
    lines = cookbook_lines()
    joined = "\n".join(lines)
    for must in ("contracts/", "--questions", "-q", ".parquet", "--resume", "--engine ray", "corefs", "--encoding"):
        assert must in joined, must


def test_the_cookbook_runs_as_written(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from lfcli.cli import app
    from lfcli.models.bundled import DEFAULT_MODEL, bundled_available

    if (why := bundled_available(DEFAULT_MODEL)) is not None:
        pytest.skip(f"bundled model unavailable: {why}")
    make_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)
    for line in cookbook_lines():
        words = shlex.split(line.split(" #", 1)[0])[1:]
        if "--engine" in words:
            pytest.importorskip("ray", reason="--engine ray needs Ray: pip install 'lfcli[ray]'")
            result = subprocess.run([sys.executable, "-m", "lfcli", *words, "--quiet"], capture_output=True, text=True,
                                    timeout=600)
            assert result.returncode == 0, f"`{line}`: {result.stderr[-2000:]}"
            assert any((tmp_path / "vectors").glob("*.parquet")), line
            continue
        result = CliRunner().invoke(app, [*words, "--quiet"])
        assert result.exit_code == 0, f"`{line}`: {result.output[-2000:]}"
        out = next((words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--output")), None)
        assert (tmp_path / out).stat().st_size > 0 if out else result.stdout.strip(), line
    labels = [json.loads(x) for x in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert [r["id"] for r in labels] == ["employment.pdf", "lease.pdf", "licence.txt"]
    assert all("error" not in r for r in labels)  # the PDFs read
    answers = [json.loads(x) for x in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert [r["question_id"] for r in answers] == ["q1", "q2"] and list((tmp_path / "passages").iterdir())
    notes = [json.loads(x) for x in (tmp_path / "notes.jsonl").read_text().splitlines()]
    assert all("error" not in r for r in notes)  # the cp1252 note read
