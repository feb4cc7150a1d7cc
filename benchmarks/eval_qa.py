"""Quality: extractive QA on held-out SQuAD articles, one paragraph and a whole article as context.

The validation split is the one `lfcli finetune qa` holds out (whole articles, chosen by the
seed, pipelines/tasks/qa/train.py split_by_article): no paragraph of these articles was trained on.
Every question is asked twice, through `lfcli.Pipeline("qa")`, exactly as `lfcli qa` runs:

  paragraph  its own paragraph as the document (SQuAD's setting)
  article    the whole article as the document (its paragraphs joined by blank lines, about
             3-8k tokens): the model has to find the paragraph as well as the span, across
             windows when the article is longer than one window (`--max-length`)

SQuAD v1.1 EM and F1 (official normalisation, max over the gold answers), with the number of
questions; and how far `score` can be trusted: ECE, the expected calibration error of the
scores (10 equal-width bins) as probabilities that the answer is right (token F1 >= 0.5 with
a gold answer), and AUROC, the chance that a right answer scores above a wrong one. Articles
are long, so `--article-questions` caps how many questions (the first N of each held-out
article, in order) are asked of whole articles.

`--fit-temperature` also fits the scores' temperature on the paragraph questions (as
`lfcli finetune qa` does at each evaluation: train.qa.calibrate) and prints it with ECE and
AUROC at it and at the default 1; `--save-calibration` writes it into the model folder's
config.json (lfcli.qa_calibration), which `lfcli qa` reads. On the validation split these
are validation figures: the same questions chose the model's epoch and fit its temperature.

    python benchmarks/eval_qa.py                       # the bundled minilm-l6-long-squad
    python benchmarks/eval_qa.py -m DIR --max-length 512 --article-questions 100
    python benchmarks/eval_qa.py --quick --dtype float32   # 100 + 10 questions (under a minute)
    python benchmarks/eval_qa.py --article-questions 0 --fit-temperature --save-calibration   # the bundled model's
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SQUAD = "squad/squad-v1.1-dev-minus-xquad.json"


def article_records(records):
    """(article text, records re-anchored in it): paragraphs joined by blank lines, each
    answer offset moved by its paragraph's start."""
    from lfcli.pipelines.tasks.qa.train import QARecord

    by_article: dict[str, list] = {}
    for r in records:
        by_article.setdefault(r.article, []).append(r)
    out = {}
    for article, recs in by_article.items():
        contexts = list(dict.fromkeys(r.context for r in recs))
        starts, pos = {}, 0
        for c in contexts:
            starts[c] = pos
            pos += len(c) + 2
        text = "\n\n".join(contexts)
        out[article] = (text, [QARecord(r.id, text, r.question, [
            {"text": a["text"], "answer_start": a["answer_start"] + starts[r.context]} for a in r.answers], article) for r in recs])
    return out


def run(pipe, records) -> tuple[dict, float]:
    """(EM, F1, n, ECE, AUROC, share of scores >= 0.999 and of those right), seconds."""
    from lfcli.pipelines.eval.metrics import squad_f1, squad_scores
    from lfcli.pipelines.io.readers import Document
    from lfcli.pipelines.tasks.qa.calibration import auroc, expected_calibration_error
    from lfcli.pipelines.tasks.qa.train import RIGHT_F1

    docs = [Document(r.id, r.context, fields={"question": r.question}) for r in records]
    t0 = time.perf_counter()
    rows = {row["id"]: row for row in pipe.run(docs)}
    dt = time.perf_counter() - t0
    golds = [[a["text"] for a in r.answers] for r in records]
    scores = squad_scores((rows[r.id].get("answer"), gold) for r, gold in zip(records, golds))
    answered = [(rows[r.id]["score"], squad_f1(rows[r.id]["answer"], gold) >= RIGHT_F1)
                for r, gold in zip(records, golds) if rows[r.id].get("answer") is not None]
    confident = [y for p, y in answered if p >= 0.999]
    scores.update({
        "ece": expected_calibration_error([p for p, _ in answered], [y for _, y in answered]),
        "auroc": auroc([p for p, _ in answered], [y for _, y in answered]),
        "right": sum(y for _, y in answered) / max(1, len(answered)),
        "scores_over_0.999": len(confident) / max(1, len(answered)),
        "right_of_those": sum(confident) / len(confident) if confident else None,
    })
    return scores, dt


def _figures(s: dict) -> str:
    auroc = "n/a" if s["auroc"] is None else f"{s['auroc']:.3f}"
    return f"EM {s['exact_match']:.1f}  F1 {s['f1']:.1f}  ECE {s['ece']:.3f}  AUROC {auroc}"


def fit(pipe, records) -> dict | None:
    """train.qa.calibrate on the answers to `records`: the fitted temperature, and ECE and
    AUROC at it and at 1 (None when it cannot be fitted)."""
    import torch

    from lfcli.pipelines.eval.metrics import squad_f1
    from lfcli.pipelines.tasks.qa.calibration import calibrate
    from lfcli.pipelines.tasks.qa.train import RIGHT_F1, predict_cases

    with torch.inference_mode():
        cases = predict_cases(pipe.model, pipe.task, records, pipe.model.config.pad_token_id)
    right = [squad_f1(cases[r.id][0], [a["text"] for a in r.answers]) >= RIGHT_F1 for r in records]
    return calibrate([cases[r.id][1:] for r in records], right)


def save_calibration(folder: Path, calibration: dict) -> Path:
    """Write `calibration` into folder/config.json as lfcli.qa_calibration (the file's other
    keys untouched, written as LongformerConfig writes it)."""
    path = Path(folder) / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.setdefault("lfcli", {})["qa_calibration"] = calibration
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--model", default="minilm-l6-long-squad", help="QA model folder or bundled name")
    parser.add_argument("--quick", action="store_true", help="100 paragraph and 10 article questions (under a minute)")
    parser.add_argument("--dtype", default="auto", help="as lfcli qa --dtype (auto: bf16 on a CPU with native bf16)")
    parser.add_argument("--data", default=None, help="SQuAD JSON (default: ../shared/data/" + SQUAD + ")")
    parser.add_argument("--validation-split", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-length", type=int, default=None, help="window length for lfcli qa (default: the model's)")
    parser.add_argument("--article-questions", type=int, default=None, help="questions asked of whole articles (0: none; default 300, quick 10)")
    parser.add_argument("--limit", type=int, default=None, help="paragraph-level questions (default: all held out)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--fit-temperature", action="store_true",
                        help="fit the scores' temperature on the paragraph questions (train.qa.calibrate) and print it")
    parser.add_argument("--save-calibration", action="store_true",
                        help="with --fit-temperature: write it into the model folder's config.json (lfcli.qa_calibration)")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.save_calibration and not args.fit_temperature:
        parser.error("--save-calibration needs --fit-temperature")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    if args.quick:
        args.limit = args.limit or 100
    if args.article_questions is None:
        args.article_questions = 10 if args.quick else 300

    import lfcli
    from lfcli.pipelines.tasks.qa.train import read_squad_json, split_by_article

    data = Path(args.data) if args.data else common.shared_data_dir() / SQUAD
    if not data.is_file():
        raise SystemExit(f"{data}: missing (the SQuAD file lives in ../shared/data)")
    records, _ = read_squad_json(data)
    _, validation = split_by_article(records, args.validation_split, args.seed)
    paragraph = validation[: args.limit] if args.limit else validation
    pipe = lfcli.Pipeline("qa", model=args.model, max_length=args.max_length, dtype=args.dtype)
    dtype = next(pipe.model.parameters()).dtype
    print(f"model {args.model} ({dtype}), window {pipe.max_length} tokens; held-out articles: "
          f"{sorted({r.article for r in validation})}", file=sys.stderr)
    results = {"model": args.model, "max_length": pipe.max_length, "dtype": str(dtype), "machine": common.machine_info(common.resolve_device("cpu"))}
    print(f"score temperature {pipe.task.temperature:g} "
          f"({'lfcli.qa_calibration' if (pipe.model.config.extra.get('lfcli') or {}).get('qa_calibration') else 'none saved: the default'})",
          file=sys.stderr)
    results["temperature"] = pipe.task.temperature
    scores, dt = run(pipe, paragraph)
    results["paragraph"] = {**scores, "seconds": dt}
    print(f"paragraph: {_figures(scores)}  (n = {scores['n']}, {dt:.0f} s)")
    if args.fit_temperature:
        calibration = fit(pipe, paragraph)
        results["fitted_calibration"] = calibration
        if calibration is None:
            print("temperature: cannot be fitted (too few questions, or none right or none wrong)")
        else:
            print(f"fitted on these {calibration['questions']} questions: temperature {calibration['temperature']:g}, "
                  f"ECE {calibration['ece']:.3f}, AUROC {calibration['auroc']:.3f} "
                  f"(at temperature 1: ECE {calibration['ece_at_t1']:.3f}, AUROC {calibration['auroc_at_t1']:.3f})")
            if args.save_calibration:
                arts = sorted({r.article for r in paragraph})
                calibration = {**calibration, "fitted_on": f"{data.name}: the {len(paragraph)} questions of {arts} "
                               f"(benchmarks/eval_qa.py --fit-temperature, dtype {dtype})"}
                print(f"saved in {save_calibration(pipe.folder, calibration)}", file=sys.stderr)
    if args.article_questions:
        articles = article_records(validation)
        per_article = max(1, args.article_questions // max(1, len(articles)))
        asked = [r for _, recs in articles.values() for r in recs[:per_article]]
        lengths = [len(pipe.tokenizer.encode(text).ids) for text, _ in articles.values()]
        scores, dt = run(pipe, asked)
        results["article"] = {**scores, "seconds": dt, "article_tokens": lengths}
        print(f"article:   {_figures(scores)}  (n = {scores['n']} questions over "
              f"{len(articles)} articles of {min(lengths)}-{max(lengths)} tokens, {dt:.0f} s)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
