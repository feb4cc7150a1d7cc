"""Story breaks (pipelines/tasks/corefs/stories.py) alone, text only (no model runs): joins of
LitBank excerpts found, and false breaks inside whole novels.

Joins: N files of five LitBank excerpts (../shared/data/litbank/coref/brat/*.txt: the first
~2,000 words of a book each), drawn at random (seeded) from one split, in random order, joined
with a blank line as benchmarks/eval_coref.py's `joined` does; in half of them each excerpt
gets a heading first ("CHAPTER IV", "Chapter 9", a title line or both, on its own paragraph or
line). The candidates are the paragraph starts the pipeline sees (after a blank line). A join
is found when a break lands on it or on its heading; any other break is false.

Novels: every paragraph start of a whole novel (../shared/data/litbank/original); every break
found there is false. Reported per novel for the fifteen of benchmarks/coref_characters*.json.

--fit chooses the detector's weights (printed, for stories.WEIGHTS) on the TRAIN split only:
a logistic regression of the signals at 300 files' joins of train excerpts against every
paragraph start of the 63 train-split novels that are not among the fifteen (nor held out), the
constant the lowest (the most joins found) at which none of those novels has more than one break.

Held out, never read: Tom Sawyer, Little Women, Great Expectations, Dracula, Frankenstein.

    python benchmarks/story_breaks.py                       # 200 dev files, the fifteen novels
    python benchmarks/story_breaks.py --quick               # 20 dev files, three novels
    python benchmarks/story_breaks.py --fit                 # choose the weights on train, then report
    python benchmarks/story_breaks.py --module old.py       # another stories.py (before/after)
    python benchmarks/story_breaks.py --json out.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import random
import re
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

HELD_OUT = ("74_the_adventures_of_tom_sawyer", "514_little_women", "1400_great_expectations", "345_dracula",
            "84_frankenstein")
PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n")  # as pipelines/infer/tokenize.py
ROMAN = "I II III IV V VI VII VIII IX X XI XII XIII XIV XV".split()
SLACK = 2  # characters a break may sit before a join's start and after its heading


def shared_data() -> Path:
    """$LFCLI_SHARED[/data], else ../shared/data next to the repository (as common.py)."""
    env = os.environ.get("LFCLI_SHARED")
    if env:
        base = Path(env).expanduser()
        return base / "data" if (base / "data").is_dir() else base
    return HERE.parent.parent / "shared" / "data"


def held_out(name: str) -> bool:
    return name.startswith(HELD_OUT)


def split_ids(litbank: Path, split: str) -> list[str]:
    ids = (litbank / f"{split}.ids").read_text().split()
    return [i for i in ids if not held_out(i)]


def excerpts(litbank: Path, ids: list[str]) -> dict[str, str]:
    return {i: (litbank / "coref" / "brat" / f"{i}.txt").read_text(encoding="utf-8").strip() for i in ids}


def heading(rng: random.Random, name: str) -> tuple[list[str], str]:
    """Lines put before an excerpt (none, a chapter, the book's title or both) and what
    follows each (a blank line or a line break)."""
    n = rng.randrange(len(ROMAN))
    chapter = rng.choice([f"CHAPTER {ROMAN[n]}", f"Chapter {n + 1}", f"CHAPTER {ROMAN[n]}.", f"{ROMAN[n]}.",
                          f"Chapter {ROMAN[n]}"])
    title = " ".join(name.split("_")[1:])
    title = rng.choice([title.upper(), title.title()])
    lines = rng.choice([[chapter], [title], [title, chapter]])
    return lines, rng.choice(["\n\n", "\n"])


def joined_files(texts: dict[str, str], n: int, seed: int, size: int = 5) -> list[tuple[str, list]]:
    """`n` files of `size` excerpts each: (text, parts), parts (id, start, body start, heading
    or ""); every other file has headings."""
    rng = random.Random(seed)
    pool = sorted(texts)
    out = []
    for f in range(n):
        text, parts = "", []
        for name in rng.sample(pool, size):
            lines, sep = heading(rng, name) if f % 2 else ([], "")
            part = sep.join([*lines, texts[name]])
            start = len(text) + (2 if text else 0)
            text = f"{text}\n\n{part}" if text else part
            parts.append((name, start, start + len(part) - len(texts[name]), " / ".join(lines)))
        out.append((text, parts))
    return out


def paragraph_starts(text: str) -> list[int]:
    return [m.end() for m in PARAGRAPH_BREAK.finditer(text)]


def on_join(b: int, parts) -> bool:
    return any(start - SLACK <= b <= body + SLACK for _, start, body, _ in parts[1:])


def score_joins(detect, files) -> dict:
    """Joins found and false breaks, overall and with/without headings."""
    out = {"joins": 0, "found": 0, "false": 0, "files": len(files)}
    by = {"headings": [0, 0], "no headings": [0, 0]}
    missed = []
    for text, parts in files:
        breaks = detect(text, paragraph_starts(text))
        out["false"] += sum(1 for b in breaks if not on_join(b, parts))
        for k, (name, start, body, head) in enumerate(parts[1:], 1):
            hit = any(start - SLACK <= b <= body + SLACK for b in breaks)
            out["joins"] += 1
            out["found"] += hit
            kind = by["headings" if head else "no headings"]
            kind[0] += hit
            kind[1] += 1
            if not hit:
                missed.append(f"{parts[k - 1][0]} -> {name}")
    out["recall"] = 100 * out["found"] / max(out["joins"], 1)
    out["recall_by_heading"] = {k: 100 * f / max(n, 1) for k, (f, n) in by.items()}
    out["missed"] = missed
    return out


def score_novels(detect, folder: Path, names: list[str]) -> dict:
    """False breaks (every break found) per novel."""
    out = {}
    for name in names:
        assert not held_out(name), name
        text = (folder / f"{name}.txt").read_text(encoding="utf-8")
        out[name] = len(detect(text, paragraph_starts(text)))
    return out


# ---------------------------------------------------------------------------------------
# fitting the weights (train split only)
# ---------------------------------------------------------------------------------------
FEATURES = ("cosine", "names_back", "names_on", "heading", "narrator")


def features(seen, heading: bool) -> list[float]:
    return [math.log(seen.cosine + 0.01), seen.names_back, seen.names_on, float(heading), seen.narrator]


class Places:
    """A document's paragraph starts with their word indices and feature rows (None near an
    end), and for a joined file the character ranges where a break finds each join."""

    def __init__(self, stories, text: str, parts=()):
        self.candidates = paragraph_starts(text)
        self.at, signals = stories.story_signals(text, self.candidates)
        self.rows = [None if s is None else features(*s) for s in signals]
        self.joins = [(start - SLACK, body + SLACK) for _, start, body, _ in parts[1:]]

    def breaks(self, stories, coef, constant: float) -> list[int]:
        scores = [-math.inf if r is None else sum(c * x for c, x in zip(coef, r)) + constant for r in self.rows]
        return stories.pick_breaks(self.candidates, self.at, scores)

    def best(self, coef) -> list[float]:
        """Each join's highest score of its candidates (constant 0)."""
        return [max((sum(c * x for c, x in zip(coef, r)) for c, r in zip(self.candidates, self.rows)
                     if r is not None and lo <= c <= hi), default=-math.inf) for lo, hi in self.joins]


def logistic(x, y, weight, l2: float = 1e-3, steps: int = 50):
    """Weighted logistic regression by Newton's method: (coefficients, intercept)."""
    import numpy as np  # only --fit needs it

    mu, sd = x.mean(0), x.std(0) + 1e-12
    z = np.c_[np.ones(len(x)), (x - mu) / sd]
    beta = np.zeros(z.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-z @ beta))
        grad = z.T @ (weight * (y - p)) - l2 * beta
        hess = (z * (weight * p * (1 - p))[:, None]).T @ z + l2 * np.eye(len(beta))
        step = np.linalg.solve(hess, grad)
        beta += step
        if np.abs(step).max() < 1e-9:
            break
    coef = beta[1:] / sd
    return coef, beta[0] - coef @ mu


def fit(stories, files, folder: Path, novels: list[str], use=FEATURES) -> dict:
    """The weights: a balanced logistic regression of the join candidates of `files` against
    every paragraph start of `novels` on the features `use`; then the lowest constant (the
    most joins found) at which no novel has more than one break."""
    import numpy as np  # only --fit needs it

    joined = [Places(stories, text, parts) for text, parts in files]
    books = [Places(stories, (folder / f"{n}.txt").read_text(encoding="utf-8")) for n in novels if not held_out(n)]
    mask = [FEATURES.index(f) for f in use]
    pos = np.array([r for d in joined for c, r in zip(d.candidates, d.rows)
                    if r is not None and any(lo <= c <= hi for lo, hi in d.joins)])[:, mask]
    neg = np.array([r for d in books for r in d.rows if r is not None])[:, mask]
    x, y = np.r_[pos, neg], np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    coef, _ = logistic(x, y, np.where(y == 1, len(x) / (2 * len(pos)), len(x) / (2 * len(neg))))
    coef = [float(coef[mask.index(k)]) if k in mask else 0.0 for k in range(len(FEATURES))]
    best = sorted(b for d in joined for b in d.best(coef))
    # constant = -best[k] + eps finds every join from k on; the smallest k whose novels hold
    # at most one break each (bisected: fewer joins found, fewer places above 0)
    lo, hi = 0, len(best) - 1
    while lo < hi:
        k = (lo + hi) // 2
        if max(len(d.breaks(stories, coef, -best[k] + 1e-6)) for d in books) <= 1:
            hi = k
        else:
            lo = k + 1
    constant = -best[lo] + 1e-6
    weights = {"constant": round(constant, 3), **{f: round(c, 3) for f, c in zip(FEATURES, coef)}}
    found = sum(b + constant > 0 for b in best)
    print(f"fit on {len(best):,} joins of {len(files)} train files and {len(neg):,} paragraph starts of {len(books)} "
          f"train novels: {found} joins found ({100 * found / len(best):.1f}%), "
          f"{sum(len(d.breaks(stories, coef, constant)) for d in books)} breaks in the novels")
    return weights


# ---------------------------------------------------------------------------------------
def load_stories(path: str | None):
    """The repository's stories.py, or the one at `path` (loaded on its own: it needs only the
    standard library)."""
    if path is None:
        from lfcli.pipelines.tasks.corefs import stories  # here, so that --module never imports it

        return stories
    spec = importlib.util.spec_from_file_location("stories_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def report_novels(title: str, counts: dict) -> None:
    over = {k: v for k, v in counts.items() if v > 1}
    listed = ": " + ", ".join(f"{k} {v}" for k, v in over.items()) if over else ""
    print(f"{title}: {sum(counts.values())} false breaks in {len(counts)} novels, at most "
          f"{max(counts.values(), default=0)} in one; {len(over)} novels with more than one{listed}")


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="20 dev files and three novels (seconds)")
    p.add_argument("--files", type=int, default=200, help="files of five excerpts to report (default 200)")
    p.add_argument("--split", default="dev", choices=("dev", "train"),
                   help="whose excerpts those files join (default dev)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--fit", action="store_true", help="choose the weights on the train split first, and use them")
    p.add_argument("--train-files", type=int, default=300, help="train files of five excerpts for --fit")
    p.add_argument("--features", default=",".join(FEATURES),
                   help=f"what --fit weighs (default: all of {', '.join(FEATURES)})")
    p.add_argument("--train-novels", action="store_true", help="also report the train novels (--fit's negatives)")
    p.add_argument("--module", default=None, help="another stories.py to run (e.g. an older one)")
    p.add_argument("--json", metavar="FILE", default=None)
    args = p.parse_args(argv)
    litbank = shared_data() / "litbank"
    if not (litbank / "coref" / "brat").is_dir():
        raise SystemExit(f"{litbank}: LitBank is missing (the data lives in ../shared/data)")
    started = time.perf_counter()
    stories = load_stories(args.module)
    folder = litbank / "original"
    fifteen = [k[:-4] for f in sorted(HERE.glob("coref_characters*.json"))
               for k in json.loads(f.read_text()) if not k.startswith("_")]
    train_novels = [i for i in split_ids(litbank, "train") if i not in fifteen and (folder / f"{i}.txt").is_file()]
    results = {"module": args.module or "stories.py"}
    detect = stories.story_breaks
    if args.fit:
        train = joined_files(excerpts(litbank, split_ids(litbank, "train")), args.train_files, args.seed + 1)
        weights = fit(stories, train, folder, train_novels, args.features.split(","))
        print(f"WEIGHTS = {weights}")
        results["weights"] = weights

        def detect(text, candidates):
            return stories.story_breaks(text, candidates, weights)
    files = joined_files(excerpts(litbank, split_ids(litbank, args.split)), 20 if args.quick else args.files,
                         args.seed + (args.split == "train"))
    j = results[f"{args.split}_joins"] = score_joins(detect, files)
    print(f"{args.split}: {j['found']} of {j['joins']} joins found ({j['recall']:.1f}%; with headings "
          f"{j['recall_by_heading']['headings']:.1f}%, without {j['recall_by_heading']['no headings']:.1f}%), "
          f"{j['false']} false breaks in {j['files']} files of five excerpts")
    if j["missed"]:
        print("  missed: " + ", ".join(sorted(set(j["missed"]))[:10]))
    novels = fifteen[:3] if args.quick else fifteen
    counts = results["novels"] = score_novels(detect, folder, novels)
    for name, n in counts.items():
        print(f"  {n:3d}  {name}")
    report_novels(f"the {len(novels)} novels", counts)
    if args.train_novels:
        results["train_novels"] = score_novels(detect, folder, train_novels)
        report_novels(f"the {len(train_novels)} train novels", results["train_novels"])
    results["seconds"] = time.perf_counter() - started
    print(f"{results['seconds']:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
