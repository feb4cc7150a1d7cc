"""Quality: extractive QA over whole novels, and how far its score can be trusted there.

The questions are benchmarks/book_qa.json: 184 questions over 23 whole public-domain works of
fiction, 20 novels and novellas and 3 short works (LitBank's original Project Gutenberg texts,
read from ../shared/data/litbank/original; no book text is kept in the repository), each with
answers written as they stand in the book (checked here, white space collapsed as `lfcli qa`
writes answers). None is one of the novels held out from this project's work. Every question
is asked of its whole book, decoded exactly as `lfcli qa BOOK -q QUESTION` decodes (256-token
windows: 50-500 a book);
`--check-cli N` runs that command on N questions and checks its answer and score.

An answer is right when its SQuAD token F1 with one of the gold answers is at least 0.5 (as
for the score's calibration on paragraphs, train.qa.RIGHT_F1). Reported: top-1 accuracy,
and the score as a probability that the answer is right: ECE (10 equal-width bins) and AUROC.

The books are split in two (book_qa.json's "split"): `--fit` fits the score's window terms
(answers.QACalibration: how the no-answer mass and the temperature grow with the number of
windows; the paragraph temperature stays, so a one-window document scores as before) on the
"fit" books' questions only, and the figures are reported on the "report" books, which no
fit saw. `--save-calibration` writes the fitted terms into the model folder's config.json
(lfcli.qa_calibration), which `lfcli qa` reads.

The model's answers and candidates are cached (`--cache FILE`, JSON: margins and spans, no
book text), so a refit does not rerun the model.

    python benchmarks/eval_book_qa.py --cache /tmp/book_qa_small.json            # small tier, all 184
    python benchmarks/eval_book_qa.py --cache /tmp/book_qa_small.json --fit --save-calibration
    python benchmarks/eval_book_qa.py -m base --books 208,219 --cache /tmp/book_qa_base.json
    python benchmarks/eval_book_qa.py --quick --fit      # 4 questions over Bartleby and Daisy Miller
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "book_qa.json"
BOOKS = "litbank/original"


def load_questions(path: Path = QUESTIONS, books_dir: Path | None = None, only: list[str] | None = None):
    """(questions, books {file: {title, split}}), each answer checked against its book (white
    space collapsed). `only`: book file name prefixes to keep ("208", "219_heart")."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    books = data["books"]
    questions = [q for q in data["questions"] if not only or any(q["book"].startswith(p) for p in only)]
    if books_dir is not None:
        for book in sorted({q["book"] for q in questions}):
            text = " ".join((books_dir / book).read_text(encoding="utf-8").split())
            for q in (q for q in questions if q["book"] == book):
                missing = [a for a in q["answers"] if a not in text]
                if missing:
                    raise SystemExit(f"{q['id']}: answer {missing[0]!r} is not in {book}")
    return questions, books


def judged(answer: str, golds: list[str]) -> dict:
    """An answer as a case keeps it: its words joined by single spaces, its SQuAD F1 against
    the gold answers, and whether it is right (F1 at least train.RIGHT_F1, as the trainer's
    evaluation counts it)."""
    from lfcli.pipelines.eval.metrics import squad_f1
    from lfcli.pipelines.tasks.qa.train import RIGHT_F1

    answer = " ".join(answer.split())
    f1 = squad_f1(answer, golds)
    return {"answer": answer, "f1": f1, "right": f1 >= RIGHT_F1}


def run_model(model: str, dtype: str, questions: list[dict], books_dir: Path, say=print, read: str = "retrieve",
              top_windows: int | None = None, passages: str | None = None, rank_weight: float | None = None) -> dict:
    """Question id -> case: the top answer, whether it is right, the document's candidates
    (spans, margins, windows) and the answer's (first, last, margin), decoded as `lfcli qa`
    (`read`: as its --read; `top_windows`: the windows a question reads, else lfcli's default;
    `passages`: its --cache folder; `rank_weight`: the retrieval rank weight instead of the
    model's saved one)."""
    import torch

    import lfcli
    from lfcli.pipelines.tasks.qa.train import QARecord, predict_cases

    pipe = lfcli.Pipeline("qa", model=model, dtype=dtype, read=read, cache=passages)
    if top_windows and pipe.task.retriever is not None:
        pipe.task.retriever.top_windows = top_windows
    if rank_weight is not None:
        pipe.task.calibration = replace(pipe.task.calibration, rank_weight=rank_weight)
    out = {"model": model, "folder": str(pipe.folder), "dtype": str(next(pipe.model.parameters()).dtype),
           "max_length": pipe.max_length, "read": read,
           "top_windows": pipe.task.retriever.top_windows if pipe.task.retriever is not None else None,
           "rank_weight": pipe.task.calibration.rank_weight, "cases": {}}
    for book in dict.fromkeys(q["book"] for q in questions):
        text = (books_dir / book).read_text(encoding="utf-8")
        records = [QARecord(q["id"], text, q["question"], [{"text": a, "answer_start": -1} for a in q["answers"]])
                   for q in questions if q["book"] == book]
        t0 = time.perf_counter()
        with torch.inference_mode():
            cases = predict_cases(pipe.model, pipe.task, records, pipe.model.config.pad_token_id)
        seconds = time.perf_counter() - t0
        for r in records:
            answer, cands, top = cases[r.id]
            out["cases"][r.id] = {"book": book, **judged(answer, [a["text"] for a in r.answers]),
                                  "windows": cands.windows, "spans": [list(s) for s in cands.spans],
                                  "margins": [round(m, 4) for m in cands.margins], "top": list(top)}
        say(f"{book}: {len(records)} questions, {cands.windows} windows, {seconds:.0f} s", file=sys.stderr)
    return out


def run_squad(pipe_model: str, dtype: str, article_questions: int, paragraph_questions: int | None, say=print,
              validation_split: float = 0.1) -> dict:
    """Cases (as run_model's) of SQuAD validation questions (the articles `lfcli finetune qa`
    held out, eval_qa.py's; `validation_split` 1.0: every article, the validation of a model
    trained on SQuAD train): each asked of its paragraph, and the first ones of each article
    also of the whole article, so that the window terms are seen not to harm 1-90 windows."""
    import torch

    import eval_qa
    import lfcli
    from lfcli.pipelines.tasks.qa.train import predict_cases, read_squad_json, split_by_article

    records, _ = read_squad_json(common.shared_data_dir() / eval_qa.SQUAD)
    _, validation = split_by_article(records, validation_split, 0)
    paragraph = validation[:paragraph_questions] if paragraph_questions else validation
    articles = eval_qa.article_records(validation)
    per_article = max(1, article_questions // max(1, len(articles)))
    whole = [r for _, recs in articles.values() for r in recs[:per_article]] if article_questions else []
    pipe = lfcli.Pipeline("qa", model=pipe_model, dtype=dtype)
    out = {}
    for part, recs in (("paragraph", paragraph), ("article", whole)):
        t0 = time.perf_counter()
        with torch.inference_mode():
            cases = predict_cases(pipe.model, pipe.task, recs, pipe.model.config.pad_token_id)
        for r in recs:
            answer, cands, top = cases[r.id]
            out[f"{part}/{r.id}"] = {"book": part, **judged(answer, [a["text"] for a in r.answers]),
                                     "windows": cands.windows, "spans": [list(x) for x in cands.spans],
                                     "margins": [round(m, 4) for m in cands.margins], "top": list(top)}
        say(f"SQuAD {part}: {len(recs)} questions, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return out


def cases_of(cache: dict, ids: list[str]):
    """[(QACandidates, top answer)], [right], [windows] for the question ids in the cache."""
    from lfcli.pipelines.tasks.qa.answers import QACandidates

    cases, right, windows = [], [], []
    for i in ids:
        c = cache["cases"][i]
        cases.append((QACandidates([tuple(s) for s in c["spans"]], c["margins"], c["windows"]), tuple(c["top"])))
        right.append(bool(c["right"]))
        windows.append(c["windows"])
    return cases, right, windows


def ece_floor(scores: list[float], draws: int = 300, seed: int = 0) -> float:
    """The ECE that scores which are exactly right would still show on this many questions:
    the mean ECE of outcomes drawn with the scores' own probabilities (seeded). 10 bins over a
    few dozen questions are noisy; an ECE near this floor is as good as these questions tell."""
    import random

    from lfcli.pipelines.tasks.qa.calibration import expected_calibration_error

    rng = random.Random(seed)
    return sum(expected_calibration_error(scores, [rng.random() < p for p in scores]) for _ in range(draws)) / draws


def figures(cases, right, calibration=None, scores=None) -> dict:
    from lfcli.pipelines.tasks.qa.calibration import auroc, expected_calibration_error

    if scores is None:
        scores = [c.probabilities([a], calibration)[0] for c, a in cases]
    return {"questions": len(scores), "accuracy": sum(right) / max(1, len(right)),
            "mean_score": sum(scores) / max(1, len(scores)), "ece": expected_calibration_error(scores, right),
            "ece_floor": ece_floor(scores), "auroc": auroc(scores, right),
            "max_wrong_score": max((s for s, y in zip(scores, right) if not y), default=None)}


def leave_one_book_out(cache: dict, ids: list[str], temperature, with_squad: bool = False):
    """Each book's scores with window terms fitted on all the other books' questions (and the
    SQuAD whole-article questions, `with_squad`): the out-of-sample scores of a fit on every
    book, pooled (more questions than the report half). (scores, right, the fits)."""
    from lfcli.pipelines.tasks.qa.calibration import fit_window_terms

    squad = squad_cases_of(cache, squad_article_ids(cache) if with_squad else [])
    scores, right, fits = [], [], {}
    for book in dict.fromkeys(cache["cases"][i]["book"] for i in ids):
        train = [i for i in ids if cache["cases"][i]["book"] != book]
        test = [i for i in ids if cache["cases"][i]["book"] == book]
        cases, y, _ = cases_of(cache, train)
        fits[book] = fit_window_terms(cases + squad[0], y + squad[1], temperature)
        cases, y, _ = cases_of(cache, test)
        scores += [c.probabilities([a], fits[book])[0] for c, a in cases]
        right += y
    return scores, right, {b: vars(f) for b, f in fits.items()}


def _row(name: str, f: dict) -> str:
    auroc = "n/a" if f["auroc"] is None else f"{f['auroc']:.3f}"
    worst = "n/a" if f["max_wrong_score"] is None else f"{f['max_wrong_score']:.3f}"
    return (f"| {name} | {f['questions']} | {100 * f['accuracy']:.1f}% | {f['mean_score']:.3f} | {f['ece']:.3f} | "
            f"{f['ece_floor']:.3f} | {auroc} | {worst} |")


def check_cli(model: str, dtype: str, questions: list[dict], cache: dict, books_dir: Path, n: int) -> float:
    """Run `lfcli qa BOOK -q QUESTION` on n questions; the largest |score - the cache's
    score| (the answers must be the same)."""
    from lfcli.pipelines.tasks.qa.answers import qa_calibration
    from lfcli.models import LongformerConfig

    config = LongformerConfig.from_json_file(Path(cache["folder"]) / "config.json")
    calibration = qa_calibration(config)
    worst = 0.0
    for q in questions[:n]:
        run = subprocess.run(["lfcli", "qa", str(books_dir / q["book"]), "-q", q["question"], "-m", model, "--dtype", dtype,
                              "--quiet"], capture_output=True, text=True, check=True)
        row = json.loads(run.stdout)
        [(candidates, top)], _, _ = cases_of(cache, [q["id"]])
        ours = candidates.probabilities([top], calibration)[0]
        if " ".join(row["answer"].split()) != cache["cases"][q["id"]]["answer"]:
            raise SystemExit(f"{q['id']}: lfcli qa answered {row['answer']!r}, the benchmark {cache['cases'][q['id']]['answer']!r}")
        worst = max(worst, abs(row["score"] - ours))
        print(f"check {q['id']}: lfcli qa -> {row['answer']!r} {row['score']:.4f} (benchmark {ours:.4f})")
    return worst


def per_book_and_question(cache: dict, questions: list[dict], books: dict, saved, results: dict) -> None:
    """Each book's and each question's figures into `results`, and one line of books printed."""
    per_book = {}
    for book in dict.fromkeys(q["book"] for q in questions):
        ids = [q["id"] for q in questions if q["book"] == book]
        per_book[book] = {"split": books[book]["split"], "questions": len(ids),
                          "windows": cache["cases"][ids[0]]["windows"],
                          "right": sum(cache["cases"][i]["right"] for i in ids)}
    results["books"] = per_book
    results["questions"] = {}
    for q in questions:
        [(candidates, top)], _, _ = cases_of(cache, [q["id"]])
        c = cache["cases"][q["id"]]
        results["questions"][q["id"]] = {"answer": c["answer"], "f1": round(c["f1"], 3), "right": c["right"],
                                         "windows": c["windows"], "score": round(candidates.probabilities([top], saved)[0], 4)}
    print("books: " + "; ".join(f"{b.split('_', 1)[1][:-4]} ({v['split']}, {v['windows']} windows) {v['right']}/{v['questions']}"
                                for b, v in per_book.items()))


def squad_rows(cache: dict, calibrations: dict, results: dict) -> None:
    """The SQuAD questions' figures (paragraph and whole-article), when the cache has them."""
    squad = cache.get("squad_cases") or {}
    for part in ("paragraph", "article"):
        ids = [k for k in squad if k.startswith(part + "/")]
        if ids:
            for name, cal in calibrations.items():
                f = results["figures"][f"{name} / SQuAD {part}"] = figures(*squad_cases_of(cache, ids)[:2], cal)
                windows = [squad[i]["windows"] for i in ids]
                print(_row(f"{name} / SQuAD {part}s ({min(windows)}-{max(windows)} windows)", f))


def save_terms(cache: dict, questions: list[dict], fit_ids: list[str], calibration, fit_all: bool,
               squad_articles: int = 0) -> None:
    """Write the fitted window terms into the model folder's config.json, naming what fitted them
    (`squad_articles`: the SQuAD whole-article questions fitted with the books', --fit-with-squad)."""
    from lfcli.pipelines.tasks.qa.calibration import save_window_terms

    fit_books = sorted({q["book"] for q in questions if q["id"] in fit_ids})
    squad = f" and {squad_articles} SQuAD validation questions asked of their whole articles" if squad_articles else ""
    flags = (" --fit-all" if fit_all else "") + (" --fit-with-squad" if squad_articles else "")
    path = save_window_terms(Path(cache["folder"]), calibration,
                             f"benchmarks/book_qa.json: the {len(fit_ids)} questions of {fit_books}{squad} "
                             f"(benchmarks/eval_book_qa.py --fit{flags}, dtype {cache['dtype']})",
                             rank_weight=cache.get("rank_weight"))
    print(f"saved in {path}", file=sys.stderr)


def squad_article_ids(cache: dict) -> list[str]:
    """The SQuAD whole-article questions in the cache, in article order (run_squad's)."""
    return [k for k in cache.get("squad_cases") or {} if k.startswith("article/")]


def squad_cases_of(cache: dict, ids: list[str]):
    """cases_of for SQuAD questions of the cache (run_squad's cases)."""
    return cases_of({"cases": cache.get("squad_cases") or {}}, ids)


def fit_terms(cache: dict, fit_ids: list[str], paragraph, with_squad: bool, results: dict):
    """The window terms fitted on the fit questions (with the SQuAD whole-article questions:
    --fit-with-squad). With those, each half of the articles (the first and last half of them,
    whole articles apart) is also scored with terms fitted on the books and the other half:
    their figures out of sample."""
    from lfcli.pipelines.tasks.qa.calibration import fit_window_terms

    cases, right, _ = cases_of(cache, fit_ids)
    articles = squad_article_ids(cache) if with_squad else []
    if articles:
        halves = (articles[:len(articles) // 2], articles[len(articles) // 2:])
        scores, y_all = [], []
        for k, half in enumerate(halves):
            other, other_right, _ = squad_cases_of(cache, halves[1 - k])
            terms = fit_window_terms(cases + other, right + other_right, paragraph)
            held, y, _ = squad_cases_of(cache, half)
            scores += [c.probabilities([a], terms)[0] for c, a in held]
            y_all += y
            results.setdefault("squad_half_fits", []).append(vars(terms))
        f = results["figures"]["each half of the SQuAD articles, terms fitted on the fit books and the other half"] = \
            figures(None, y_all, scores=scores)
        print(_row("each SQuAD article half, terms fitted on the fit books and the other half", f))
    more, more_right, _ = squad_cases_of(cache, articles)
    fitted = fit_window_terms(cases + more, right + more_right, paragraph)
    results["fitted"] = vars(fitted)
    return fitted


def redecide(cache: dict, questions: list[dict], books_dir: Path, calibration) -> None:
    """Each cached book answer decided again from its candidates under `calibration`, as
    `lfcli qa` decides it (answers.distinct_answers), without reading the book again: the window
    terms change how candidates' scores add up, so they can change the top answer. The pool of
    spans is the cache's candidates (each window's 20 best) where `lfcli qa` has each window's
    200; on the small tier's 184 answers at 10 windows this gave the same answers as asking
    again (2026-11-28)."""
    import lfcli
    from lfcli.pipelines.tasks.qa.answers import QACandidates, answer_text, distinct_answers

    task = lfcli.Pipeline("qa", model=cache["folder"]).task  # its tokenizer: the token offsets of the spans
    gold = {q["id"]: q["answers"] for q in questions}
    by_book: dict[str, list[str]] = {}
    for qid, c in cache["cases"].items():
        if qid in gold:
            by_book.setdefault(c["book"], []).append(qid)
    for book, qids in by_book.items():
        text = (books_dir / book).read_text(encoding="utf-8")
        offsets = task.encode(text).offsets
        for qid in qids:
            c = cache["cases"][qid]
            cands = QACandidates([tuple(x) for x in c["spans"]], c["margins"], c["windows"])
            pool = [(a, b, m) for (a, b), m in zip(cands.spans, cands.margins)]
            ((first, last, margin), _), = distinct_answers(pool, cands, calibration,
                                                           lambda x: text[offsets[x[0]][0]:offsets[x[1]][1]], 1)
            c.update(judged(answer_text(text, offsets[first][0], offsets[last][1]), gold[qid]), top=[first, last, margin])


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-m", "--model", default="small", help="a tier (small, base), a bundled name or a QA model folder")
    p.add_argument("--dtype", default="auto", help="as lfcli qa --dtype")
    p.add_argument("--books", default=None, help="comma-separated book file prefixes (default: all)")
    p.add_argument("--cache", default=None, help="JSON of the model's answers and candidates: read if there, else written")
    p.add_argument("--fit", action="store_true", help="fit the window terms on the fit books, report on the others")
    p.add_argument("--save-calibration", action="store_true", help="with --fit: write the terms into the model's config.json")
    p.add_argument("--fit-all", action="store_true",
                   help="with --fit: fit on every book's questions, not the fit books' (with --lobo: how the same fit "
                        "does on a book it did not see)")
    p.add_argument("--lobo", action="store_true",
                   help="also leave one book out: each book scored with terms fitted on all the others, pooled")
    p.add_argument("--check-cli", type=int, default=0, metavar="N", help="run `lfcli qa BOOK -q` on N questions and compare")
    p.add_argument("--quick", action="store_true", help="two questions of each of two short books, one fit, one report")
    p.add_argument("--squad", type=int, default=0, metavar="N",
                   help="also N SQuAD validation questions asked of their whole articles, and the paragraph questions "
                        "(all 741, or --squad-paragraphs): the window terms must not harm them")
    p.add_argument("--squad-paragraphs", type=int, default=None, metavar="N", help="with --squad: N paragraph questions")
    p.add_argument("--squad-split", type=float, default=0.1,
                   help="with --squad: the share of articles that are validation (1.0 for a model trained on SQuAD train)")
    p.add_argument("--fit-with-squad", action="store_true",
                   help="with --fit and --squad: fit the window terms on the SQuAD whole-article questions too")
    p.add_argument("--redecide", action="store_true",
                   help="with --cache: decide each cached book answer again from its candidates under the model's saved "
                        "calibration (new window terms can change the top answer), without reading the books again")
    p.add_argument("--json", default=None, help="write the figures as JSON")
    p.add_argument("--read", default="retrieve", choices=("retrieve", "all"), help="as lfcli qa --read")
    p.add_argument("--top-windows", type=int, default=None, help="with --read retrieve: windows a question reads")
    p.add_argument("--passages", default=None, help="a folder keeping the books' passage vectors (lfcli qa --cache)")
    p.add_argument("--rank-weight", type=float, default=None,
                   help="with --read retrieve: the retrieval rank weight r (a window of rank k adds -r ln(1 + k) to its "
                        "margins) instead of the model's saved one; with --fit --save-calibration it is saved too")
    return p


def answers_of(args, questions: list[dict], books_dir: Path) -> tuple[dict, list[dict]]:
    """The model's answers (run_model's cache, with --squad its SQuAD cases): read from
    --cache where it is there, else run and written there; and the questions it holds."""
    cache_path = Path(args.cache) if args.cache else None
    if cache_path and cache_path.is_file():
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
        questions = [q for q in questions if q["id"] in cache["cases"]]
    else:
        cache = run_model(args.model, args.dtype, questions, books_dir, read=args.read, top_windows=args.top_windows,
                          passages=args.passages, rank_weight=args.rank_weight)
        if cache_path:
            cache_path.write_text(json.dumps(cache) + "\n", encoding="utf-8")
    if args.squad and "squad_cases" not in cache:
        cache["squad_cases"] = run_squad(args.model, args.dtype, args.squad, args.squad_paragraphs,
                                         validation_split=args.squad_split)
        if cache_path:
            cache_path.write_text(json.dumps(cache) + "\n", encoding="utf-8")
    return cache, questions


def main(argv=None) -> dict:
    p = parser()
    args = p.parse_args(argv)
    if args.save_calibration and not args.fit:
        p.error("--save-calibration needs --fit")
    books_dir = common.shared_data_dir() / BOOKS
    if not books_dir.is_dir():
        raise SystemExit(f"{books_dir}: missing (the novels live in ../shared/data)")
    if args.quick:
        args.books = args.books or "11231,208"
    questions, books = load_questions(QUESTIONS, books_dir, args.books.split(",") if args.books else None)
    if args.quick:
        questions = [q for q in questions if int(q["id"].rsplit("-", 1)[1]) <= 2]
    cache, questions = answers_of(args, questions, books_dir)
    from lfcli.models import LongformerConfig
    from lfcli.pipelines.tasks.qa.answers import qa_calibration
    from lfcli.pipelines.tasks.qa.calibration import without_window_terms

    config = LongformerConfig.from_json_file(Path(cache["folder"]) / "config.json")
    saved = qa_calibration(config)
    if args.redecide:
        redecide(cache, questions, books_dir, saved)
    # the paragraph fit alone (temperature and the scores' rescaling), without window terms
    paragraph = without_window_terms(saved)
    info = common.machine_info(common.resolve_device("cpu"))
    print(f"# {cache['model']} ({cache['dtype']}), {info.get('cpu', '?')}, {info['time']}; {len(questions)} questions "
          f"over {len({q['book'] for q in questions})} whole novels, windows of {cache['max_length']} tokens")
    split = {s: [q["id"] for q in questions if books[q["book"]]["split"] == s] for s in ("fit", "report")}
    results = {"model": cache["model"], "dtype": cache["dtype"], "machine": info, "saved": vars(saved), "figures": {}}
    header = ("| calibration, questions | n | top-1 right | mean score | ECE | ECE floor | AUROC | highest wrong score |\n"
              "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(header)
    calibrations = {"paragraph temperature only": paragraph, "saved in config.json": saved}
    fit_ids = [q["id"] for q in questions] if args.fit_all else split["fit"]
    fit_name = "fitted on all books" if args.fit_all else "fitted on the fit books"
    if args.fit:
        fit_name += " and SQuAD articles" if args.fit_with_squad else ""
        calibrations[fit_name] = fit_terms(cache, fit_ids, paragraph, args.fit_with_squad, results)
    for name, cal in calibrations.items():
        for part in ("fit", "report"):
            if split[part]:
                f = results["figures"][f"{name} / {part}"] = figures(*cases_of(cache, split[part])[:2], cal)
                print(_row(f"{name} / {part} books", f))
    if args.lobo:
        everything = [q["id"] for q in questions]
        scores, right, fits = leave_one_book_out(cache, everything, paragraph, args.fit_with_squad)
        f = results["figures"]["leave one book out / all books"] = figures(None, right, scores=scores)
        results["leave_one_book_out_fits"] = fits
        _, plain_right, _ = cases_of(cache, everything)
        f0 = results["figures"]["paragraph temperature only / all books"] = figures(*cases_of(cache, everything)[:2], paragraph)
        print(_row("paragraph temperature only / all books", f0))
        print(_row(f"each book with terms fitted on the other books{' and SQuAD articles' if args.fit_with_squad else ''}"
                   " / all books", f))
        for name in ("saved in config.json", fit_name):
            if name in calibrations:
                f = results["figures"][f"{name} / all books"] = figures(*cases_of(cache, everything)[:2], calibrations[name])
                print(_row(f"{name} / all books", f))
    squad_rows(cache, calibrations, results)
    per_book_and_question(cache, questions, books, saved, results)
    if args.fit and args.save_calibration:
        squad_articles = len(squad_article_ids(cache)) if args.fit_with_squad else 0
        save_terms(cache, questions, fit_ids, calibrations[fit_name], args.fit_all, squad_articles)
    if args.check_cli:
        worst = check_cli(args.model, args.dtype, questions, cache, books_dir, args.check_cli)
        results["cli_max_abs_diff"] = worst
        print(f"lfcli qa gives the same answers; scores within {worst:.1e}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
