"""Quality: zero-shot label bias. How often each label wins on balanced sets, and accuracy,
with and without a correction of each label's prior.

Zero-shot classify by similarity (`lfcli classify --labels ...`) picks the label whose
embedding is nearest the document's. Some label texts sit nearer every document than others
(a label's prior), and such a label wins documents whatever they say: on chapters of
novels, the small tier once labelled 5 of 10 "animal story". This benchmark builds two
balanced sets from the shared data (nothing is copied into the repository) and measures,
per set and tier, accuracy and each label's share of the wins (a balanced set gives each
label 1/k; the largest share over 2/k is the bias the issue asks to remove):

  topics  SQuAD articles (squad/squad-v1.1-dev-minus-xquad.json) grouped by their titles into
          7 topics, 4 articles each (TOPICS, chosen by title before any run); each article
          gives 3 documents of 4 of its paragraphs (seeded, disjoint): 84 documents. Split by
          article: the first two articles of a topic are "fit", the other two "report".
  genres  passages of about 1,500 words (from a paragraph at 1/3 and at 2/3 of the book) of 18
          novels of LitBank's originals (litbank/original), 3 for each of 6 genres (GENRES; no
          held-out novel): 36 documents. Split by passage: the 1/3 passage is "fit", the 2/3
          one "report".

Corrections (pipelines/tasks/classify/priors.py):
  none         cos(document, label): `lfcli classify --labels ... --label-prior none`
  auto         the default: the leave-own-out priors (below) measured on the documents
               classified together (here: the part, fit or report), applied only when a label
               takes more than twice its share of them without priors: `lfcli classify DOCS
               --labels ...`
  leave-own-out  cos(document, label) - the label's mean cosine over the documents that go to
               other labels, always applied: `lfcli classify DOCS --labels ... --label-prior DOCS`
  batch-mean   cos(document, label) - the label's mean cosine over all the documents (what
               --label-prior did before the leave-own-out priors); shown for comparison
  neutral      cos(document, label) - cos(neutral, label), neutral the mean embedding of 24
               short texts on many subjects (NEUTRAL_TEXTS, written before any run): a fixed
               reference that needs no documents; shown because it does not work (a label's
               prior depends on the kind of documents), so lfcli has no such option

`--one-kind` also scores every part made of the documents of one label only (a batch whose
texts all say the same label: what the priors may cost there).

The documents' and labels' vectors come from `lfcli.Pipeline("embed")`, which gives what
`lfcli classify` computes (checked each run: `--check N` documents of each set through
lfcli.classify, with --label-prior those same documents, float32). `--write DIR` writes the
sets as JSONL (id, text, label, split; outside the repository) for running the command
itself, e.g. `lfcli classify DIR/genres-report.jsonl --labels "$(cat DIR/genres-labels.txt)"
--label-prior DIR/genres-report.jsonl`.

    python benchmarks/eval_label_bias.py                      # both sets, small tier
    python benchmarks/eval_label_bias.py -m base              # the base tier
    python benchmarks/eval_label_bias.py --sets genres --json out.json
    python benchmarks/eval_label_bias.py --quick              # the topics, 28 documents
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

SQUAD = "squad/squad-v1.1-dev-minus-xquad.json"
NOVELS = "litbank/original"
# topic label: its articles (SQuAD titles); the first two "fit", the last two "report"
TOPICS = {
    "geography": ["Warsaw", "Kenya", "Rhine", "Southern_California"],
    "history": ["Normans", "Genghis_Khan", "French_and_Indian_War", "Black_Death"],
    "science": ["Oxygen", "Immune_system", "Chloroplast", "Geology"],
    "technology": ["Steam_engine", "Packet_switching", "Apollo_program", "Construction"],
    "education": ["Teacher", "Harvard_University", "Private_school", "University_of_Chicago"],
    "religion": ["Martin_Luther", "Islamism", "United_Methodist_Church", "Huguenot"],
    "politics": ["European_Union_law", "Scottish_Parliament", "Civil_disobedience", "Economic_inequality"],
}
# genre label: three novels (LitBank file name prefixes) of that genre, none held out
GENRES = {
    "science fiction": ["36_the_war_of_the_worlds", "5230_the_invisible_man", "62_a_princess_of_mars"],
    "detective story": ["2852_the_hound_of_the_baskervilles", "155_the_moonstone", "434_the_circular_staircase"],
    "adventure story": ["120_treasure_island", "2166_king_solomons_mines", "95_the_prisoner_of_zenda"],
    "western": ["1206_the_flying_u_ranch", "502_desert_gold", "3457_the_man_of_the_forest"],
    "gothic horror": ["209_the_turn_of_the_screw", "3268_the_mysteries_of_udolpho", "932_the_fall_of_the_house_of_usher"],
    "romance": ["1342_pride_and_prejudice", "158_emma", "105_persuasion"],
}
PASSAGE_WORDS = 1500
CORRECTIONS = ("none", "auto", "leave-own-out", "batch-mean", "neutral")
NEUTRAL_TEXTS = (
    "The meeting has been moved to Thursday afternoon at three o'clock.",
    "Preheat the oven, then mix the flour, butter and sugar in a large bowl.",
    "The home side scored twice in the second half to win the match.",
    "Shares fell sharply after the company reported lower quarterly earnings.",
    "Take one tablet twice a day with food, and see your doctor if the rash persists.",
    "The tenant shall pay the rent on the first day of each month.",
    "The train to the coast leaves from platform four every hour.",
    "My grandmother grew up on a farm with six brothers and sisters.",
    "The orchestra played the symphony's slow movement beautifully.",
    "Restart the computer and install the latest software update.",
    "Rain is expected across the north tomorrow, clearing by the evening.",
    "The cathedral was built in the twelfth century and restored in 1870.",
    "Dear Sir, I write to thank you for your kind letter of last week.",
    '"Where have you been?" she asked, closing the door behind him.',
    "The committee voted to approve the new budget for the coming year.",
    "Cells divide by mitosis, producing two identical daughter cells.",
    "The children played in the garden until the sun went down.",
    "Our hotel room looked out over the harbour and the old town.",
    "The river rises in the mountains and flows south to the sea.",
    "He walked slowly along the road, thinking of what he would say.",
    "The museum's new exhibition opens to the public next month.",
    "Students must hand in their essays by the end of the term.",
    "The soldiers marched through the night and reached the town at dawn.",
    "Add two cups of water and simmer for twenty minutes.",
)


# -- the sets -------------------------------------------------------------------------------
def topic_set(data_dir: Path, per_article: int = 3, paragraphs: int = 4, seed: int = 0) -> list[dict]:
    """[{id, text, label, split}]: per_article documents of `paragraphs` paragraphs each."""
    data = {a["title"]: a for a in json.loads((data_dir / SQUAD).read_text(encoding="utf-8"))["data"]}
    rng = random.Random(seed)
    docs = []
    for label, titles in TOPICS.items():
        for k, title in enumerate(titles):
            contexts = [p["context"] for p in data[title]["paragraphs"]]
            picked = rng.sample(contexts, per_article * paragraphs)
            for d in range(per_article):
                docs.append({"id": f"{title}/{d}", "text": "\n\n".join(picked[d * paragraphs:(d + 1) * paragraphs]),
                             "label": label, "split": "fit" if k < 2 else "report"})
    return docs


def passage(text: str, at: float, words: int = PASSAGE_WORDS) -> str:
    """About `words` words of whole paragraphs from the first paragraph break after `at` of the text."""
    start = text.find("\n\n", int(len(text) * at))
    out, n = [], 0
    for para in text[start:].split("\n\n"):
        para = para.strip()
        if para:
            out.append(para)
            n += len(para.split())
        if n >= words:
            break
    return "\n\n".join(out)


def genre_set(data_dir: Path) -> list[dict]:
    docs = []
    for label, prefixes in GENRES.items():
        for prefix in prefixes:
            path = data_dir / NOVELS / f"{prefix}.txt"
            if not path.is_file():
                path = next((data_dir / NOVELS).glob(f"{prefix}*.txt"))
            text = path.read_text(encoding="utf-8")
            for split, at in (("fit", 1 / 3), ("report", 2 / 3)):
                docs.append({"id": f"{prefix}@{at:.2f}", "text": passage(text, at), "label": label, "split": split})
    return docs


SETS = {"topics": (topic_set, list(TOPICS)), "genres": (genre_set, list(GENRES))}


# -- scoring ---------------------------------------------------------------------------------
def embed(pipe, texts: list[str]) -> torch.Tensor:
    from lfcli.pipelines.io.readers import Document

    rows = list(pipe.run([Document(str(i), t) for i, t in enumerate(texts)], on_error="fail"))
    return torch.nn.functional.normalize(torch.tensor([r["embedding"] for r in rows], dtype=torch.float32), dim=-1)


def corrected(cos: torch.Tensor, how: str, neutral_cos: torch.Tensor) -> torch.Tensor:
    """(docs, labels) similarities after the correction `how`."""
    from lfcli.pipelines.tasks.classify.priors import automatic_priors, leave_own_out_priors

    cos = cos.double()
    if how == "none":
        return cos
    if how == "neutral":
        return cos - neutral_cos.double()[None, :]
    if how == "auto":
        return cos - automatic_priors(cos)[0]
    if how == "leave-own-out":
        return cos - leave_own_out_priors(cos)
    if how == "batch-mean":
        return cos - cos.mean(0, keepdim=True)
    raise ValueError(how)


def shares(pred: list[int], k: int) -> list[float]:
    return [sum(p == j for p in pred) / max(1, len(pred)) for j in range(k)]


def evaluate(cos, gold, how, neutral_cos, labels) -> dict:
    pred = corrected(cos, how, neutral_cos).argmax(-1).tolist()
    share = shares(pred, len(labels))
    return {"accuracy": sum(p == g for p, g in zip(pred, gold)) / len(gold), "documents": len(gold),
            "shares": dict(zip(labels, share)), "max_share": max(share), "top_label": labels[share.index(max(share))]}


def check_classify(model: str, docs: list[dict], labels: list[str], expected: dict[str, list[str]]) -> None:
    """lfcli.classify (float32) labels `docs` as this benchmark's computation does: with
    --label-prior none, auto (the default) and those same documents (a temporary JSONL)."""
    import tempfile

    import lfcli

    with tempfile.TemporaryDirectory() as tmp:
        reference = Path(tmp) / "docs.jsonl"
        reference.write_text("".join(json.dumps({"id": d["id"], "text": d["text"]}) + "\n" for d in docs), encoding="utf-8")
        for how, want in expected.items():
            prior = {"label_prior": {"leave-own-out": str(reference)}.get(how, how)}
            rows = lfcli.classify([{"id": d["id"], "text": d["text"]} for d in docs], model=model, labels=labels,
                                  dtype="float32", on_error="fail", **prior)
            got = [r["label"] for r in rows]
            if got != want:
                raise SystemExit(f"lfcli.classify ({how}) labels {got}, the benchmark {want}")
    print(f"check: lfcli.classify gives the same labels on {len(docs)} documents with --label-prior "
          f"{', '.join(expected)} (float32)")


def write_sets(folder: Path, name: str, docs: list[dict], labels: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for part in ("fit", "report"):
        with open(folder / f"{name}-{part}.jsonl", "w", encoding="utf-8") as fh:
            for d in docs:
                if d["split"] == part:
                    fh.write(json.dumps(d) + "\n")
    (folder / f"{name}-labels.txt").write_text(",".join(labels) + "\n", encoding="utf-8")


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-m", "--model", default="small", help="a tier (small, base) or an embedding model")
    p.add_argument("--sets", default="topics,genres")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--check", type=int, default=9, help="documents per set to run through lfcli.classify (0: none)")
    p.add_argument("--one-kind", action="store_true", help="also each label's documents alone (see the notes)")
    p.add_argument("--quick", action="store_true", help="the topics only, one document an article (a few minutes)")
    p.add_argument("--write", default=None, metavar="DIR", help="also write the sets as JSONL there (not in the repository)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    import lfcli

    data_dir = common.shared_data_dir()
    info = common.machine_info(common.resolve_device("cpu"))
    pipe = lfcli.Pipeline("embed", model=args.model, dtype=args.dtype)
    print(f"# {args.model} ({pipe.folder.name if hasattr(pipe.folder, 'name') else pipe.folder}), {args.dtype}, "
          f"{info.get('cpu', '?')}, {info['time']}")
    neutral = embed(pipe, list(NEUTRAL_TEXTS)).mean(0)
    results = {"model": args.model, "dtype": args.dtype, "machine": info, "sets": {}}
    for name in ("topics",) if args.quick else args.sets.split(","):
        build, labels = SETS[name]
        docs = build(data_dir, per_article=1) if args.quick else build(data_dir)
        if args.write:
            write_sets(Path(args.write), name, docs, labels)
        t0 = time.perf_counter()
        doc_vecs = embed(pipe, [d["text"] for d in docs])
        label_vecs = embed(pipe, labels)
        seconds = time.perf_counter() - t0
        cos_all = doc_vecs @ label_vecs.T
        neutral_cos = label_vecs @ neutral
        print(f"\n## {name}: {len(docs)} documents, {len(labels)} labels (chance {100 / len(labels):.1f}%, "
              f"a fair share {100 / len(labels):.1f}%, twice it {200 / len(labels):.1f}%), embedded in {seconds:.0f} s")
        print("| correction | part | accuracy | largest share (label) | " + " | ".join(labels) + " |")
        print("| --- | --- | ---: | ---: | " + " | ".join("---:" for _ in labels) + " |")
        out = results["sets"][name] = {"labels": labels, "documents": len(docs), "neutral_cos": neutral_cos.tolist(), "figures": {}}
        parts = {part: [i for i, d in enumerate(docs) if part == "all" or d["split"] == part]
                 for part in ("fit", "report", "all")}
        if args.one_kind:
            parts.update({f"only {lab}": [i for i, d in enumerate(docs) if d["label"] == lab] for lab in labels})
        for how in CORRECTIONS:
            for part, idx in parts.items():
                gold = [labels.index(docs[i]["label"]) for i in idx]
                f = out["figures"][f"{how}/{part}"] = evaluate(cos_all[idx], gold, how, neutral_cos, labels)
                print(f"| {how} | {part} | {100 * f['accuracy']:.1f}% | {100 * f['max_share']:.0f}% ({f['top_label']}) | "
                      + " | ".join(f"{100 * f['shares'][lab]:.0f}%" for lab in labels) + " |")
        if args.check:
            idx = list(range(0, len(docs), max(1, len(docs) // args.check)))[: args.check]
            expected = {how: [labels[j] for j in corrected(cos_all[idx], how, neutral_cos).argmax(-1).tolist()]
                        for how in ("none", "auto", "leave-own-out")}
            check_classify(args.model, [docs[i] for i in idx], labels, expected)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
