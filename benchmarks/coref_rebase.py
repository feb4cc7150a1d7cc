"""A coreference model moved onto another base: the step of the "continued MLM pretraining" variant
of minilm-l6-long-litbank-coref (its card, "Variants tried").

The model's encoder becomes the new base plus the model's own change from its old base
(model - old base + new base, tensor by tensor), and its head is kept; the result is a full
checkpoint folder that `lfcli finetune corefs -m` trains on. With a LoRA model, its change is
the adapter's update, so this is the adapter applied over the new base.

    python benchmarks/coref_rebase.py minilm-l6-long-litbank-coref mlm-run/ rebased/
    python benchmarks/coref_rebase.py MODEL NEW_BASE OUT --old-base minilm-l6-long
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def main(argv=None) -> Path:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", help="coreference model: bundled name or folder (a LoRA adapter folder too)")
    p.add_argument("new_base", help="encoder folder to move it onto, e.g. `lfcli pretrain-continue`'s output")
    p.add_argument("out", help="folder to write")
    p.add_argument("--old-base", default="minilm-l6-long", help="the base the model was trained over")
    args = p.parse_args(argv)

    import torch

    from lfcli.models import LongformerForCoreference, LongformerModel
    from lfcli.models.bundled import resolve_model

    source = resolve_model(args.model)
    old = LongformerModel.from_pretrained(resolve_model(args.old_base)).state_dict()
    new = LongformerModel.from_pretrained(resolve_model(args.new_base)).state_dict()
    model = LongformerForCoreference.from_pretrained(source)
    with torch.no_grad():
        for name, p in model.longformer.named_parameters():
            if name in old and name in new:
                p.add_(new[name].to(p.dtype) - old[name].to(p.dtype))
    out = Path(args.out)
    model.save_pretrained(out)
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copy(source / name, out / name)
    moved = sum(int(not torch.equal(old[k], new[k])) for k in old if k in new)
    print(f"wrote {out}: {moved} of {len(old)} encoder tensors differ between the two bases")
    return out


if __name__ == "__main__":
    main()
