"""The defaults of a job over documents, stated once: `lfcli TASK`'s options (lfcli/task_cli.py),
lfcli.Pipeline's keywords (infer/runner.py) and the readers (io/readers.py) all take them from
here, so the command line and Python run the same job. No torch: `--help` reads them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobDefaults:
    text_column: str = "text"  # the field or column a record's text is in (JSONL, Parquet)
    device: str = "auto"  # CUDA when there is a GPU, else cpu
    dtype: str = "auto"  # bf16 on a CPU with native bf16, else fp32
    batch_size: int = 8  # windows per batch
    # Tokens per batch (padding included). One 4,096-token window a batch keeps a layer's
    # activations in the CPU's caches: the base tier's embed over a novel took 0.83x the time
    # of 16,384 in bf16 and 0.93x in fp32; the small tier's the same in both (2-core Intel Xeon).
    max_tokens: int = 4096
    # On CUDA: a GPU needs many windows in flight to fill its cores (an H200 ran the small tier's
    # embed at 86k tokens/s with 4,096 tokens a batch, 140k with 65,536; 2026-11-26). The
    # activations of 65,536 tokens of the base tier in bf16 take about 0.5 GB a layer.
    cuda_batch_size: int = 64
    cuda_max_tokens: int = 65536
    row_group_size: int = 256  # rows per Parquet row group
    encoding_errors: str = "strict"
    input_format: str = "auto"
    on_error: str = "skip"
    fast_paths: bool = True  # the speed swaps of models/fast_paths.py


JOB = JobDefaults()
