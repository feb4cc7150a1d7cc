"""Speed: many questions over one whole novel, against one `lfcli embed` of it, in one run.

`lfcli qa BOOK --questions FILE` reads the book once: its passages are embedded once, and each
question reads only the windows around its best passages (pipelines/tasks/qa/retrieve.py). The
target (issue: many questions over one book at book speed): 100 questions over a ~200k-token
novel in at most 2x the time of one `lfcli embed` of that novel; `--read all` (every question
reads every window) is timed on a few questions for scale.

Both commands run as a user runs them (a subprocess each, model loading included), one after
the other on the same machine, each twice and the faster kept; the questions are made from
the book's own names ("Who is NAME?", "Where does NAME go?", ...): the answers are not the
point here, the time is (benchmarks/eval_book_qa.py scores answers).

    python benchmarks/book_qa_speed.py                          # small tier, Tess of the d'Urbervilles
    python benchmarks/book_qa_speed.py -m base --json out.json
    python benchmarks/book_qa_speed.py --quick                  # a short book, 10 questions
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

BOOK = "litbank/original/110_tess_of_the_durbervilles_a_pure_woman.txt"
QUICK_BOOK = "litbank/original/932_the_fall_of_the_house_of_usher.txt"
TEMPLATES = ("Who is {}?", "Where does {} go?", "What does {} want?", "Whom does {} love?", "What happened to {}?")


def book_questions(text: str, n: int) -> list[str]:
    """`n` questions about the book's commonest capitalised names (TEMPLATES in turn)."""
    words = collections.Counter(re.findall(r"\b([A-Z][a-z]{2,})\b", text))
    lower = set(re.findall(r"\b([a-z]{3,})\b", text))  # "Well", "What": words, not names
    names = [w for w, _ in words.most_common() if w.lower() not in lower and w not in ("Mrs", "Miss", "Sir")][: n]
    return [TEMPLATES[k % len(TEMPLATES)].format(names[k % len(names)]) for k in range(n)]


def timed(args: list[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "lfcli", *args, "--quiet"], check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-m", "--model", default="small", help="a tier: small or base")
    p.add_argument("--book", default=None, help=f"a text file (default: ../shared/data/{BOOK})")
    p.add_argument("--questions", type=int, default=100)
    p.add_argument("--all-questions", type=int, default=3, help="questions timed with --read all (0: none)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--json", default=None)
    p.add_argument("--quick", action="store_true", help="a short book (The Fall of the House of Usher), 10 questions")
    args = p.parse_args(argv)
    if args.quick:
        args.questions, args.all_questions, args.repeats = 10, 1, 1
        args.book = args.book or str(common.shared_data_dir() / QUICK_BOOK)
    book = Path(args.book) if args.book else common.shared_data_dir() / BOOK
    if not book.is_file():
        raise SystemExit(f"{book}: missing (the novels live in ../shared/data)")
    text = book.read_text(encoding="utf-8")
    info = common.machine_info(common.resolve_device("cpu"))
    with tempfile.TemporaryDirectory() as tmp:
        qfile = Path(tmp) / "questions.txt"
        questions = book_questions(text, args.questions)
        qfile.write_text("\n".join(questions) + "\n", encoding="utf-8")
        embed = timed(["embed", str(book), "-m", args.model, "-o", str(Path(tmp) / "e.jsonl"), "--force"], args.repeats)
        qa = timed(["qa", str(book), "-m", args.model, "--questions", str(qfile), "-o", str(Path(tmp) / "q.jsonl"),
                    "--force"], args.repeats)
        whole = None
        if args.all_questions:
            few = Path(tmp) / "few.txt"
            few.write_text("\n".join(questions[: args.all_questions]) + "\n", encoding="utf-8")
            whole = timed(["qa", str(book), "-m", args.model, "--questions", str(few), "--read", "all",
                           "-o", str(Path(tmp) / "w.jsonl"), "--force"], 1)
    out = {"model": args.model, "book": book.name, "chars": len(text), "machine": info, "questions": args.questions,
           "embed_s": round(embed, 2), "qa_s": round(qa, 2), "ratio": round(qa / embed, 3)}
    print(f"# {args.model} tier, {book.name} ({len(text):,} characters), {info.get('cpu', '?')}, "
          f"{info.get('torch_threads', '?')} threads, {info['time']}")
    print("| command | seconds | / embed |\n| --- | ---: | ---: |")
    print(f"| lfcli embed BOOK | {embed:.1f} | 1.00 |")
    print(f"| lfcli qa BOOK --questions ({args.questions}) | {qa:.1f} | {qa / embed:.2f} |")
    if whole is not None:
        per = whole / args.all_questions
        out.update(all_s=round(whole, 2), all_questions=args.all_questions)
        print(f"| lfcli qa BOOK --read all ({args.all_questions} questions) | {whole:.1f} | {whole / embed:.2f} |")
        print(f"| (--read all, {args.questions} questions at that rate) | {per * args.questions:.0f} | "
              f"{per * args.questions / embed:.1f} |")
    print(f"target: {args.questions} questions in at most 2x one embed: {'met' if qa <= 2 * embed else 'NOT met'}")
    if args.json:
        common.write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
