"""Turn a short BERT / RoBERTa / MPNet checkpoint (or a Longformer one) into a long Longformer.

The recipe of Beltagy, Peters & Cohan (2020), section 5 ("copy initialisation"):
  * a new position table of `max_positions` rows (plus the pad_token_id + 1 offset rows that
    RoBERTa-style positions skip), filled by tiling the pretrained learned rows again and
    again;
  * global projections (query/key/value_global) copied from the local ones;
  * everything else (word and token-type embeddings, layers, LayerNorm eps, vocab, special
    token ids, task heads) unchanged;
  * MPNet's layers renamed to Longformer's, and its relative position bias table kept: the
    encoder adds it inside the band and on the global rows (models/longformer.py);
  * a sentence-transformers folder's pooling and normalisation go into config.json's "lfcli"
    block, where `lfcli embed` reads them.

BERT sources need one more step: transformers' Longformer computes position ids RoBERTa-style,
`cumsum(input_ids != pad) * mask + pad_token_id`, so the first real token sits at row
pad_token_id + 1, whereas BERT counts from 0. BERT row i therefore goes to row
pad_token_id + 1 + i, and the table has max_positions + pad_token_id + 1 rows. The offset rows
themselves are zeros (only padding tokens read them, and padding is masked out).

With those, the converted model computes what the source computes on any input of at most
`attention_window // 2 + 1` tokens that also fits the source's position table (every query
then sees every key), and it runs on inputs up to `max_positions` tokens.

The output folder is a transformers-layout checkpoint (config.json + model.safetensors +
the source's tokenizer files) that both transformers' `LongformerModel` and lfcli load.
The same source gives the same bytes.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import torch
from safetensors.torch import save_file

from .checkpoint import CheckpointError, global_from_local, read_state_dict, split_prefix
from .config import ConfigError, LongformerConfig
from .convert_tokenizer import copy_long_tokenizer, tokenizer_special_ids
from .heads import source_heads

log = logging.getLogger("lfcli.convert")

SOURCE_TYPES = ("bert", "roberta", "mpnet", "longformer")
# MPNet's names for the parts a Longformer layer calls otherwise (transformers' modeling_mpnet).
MPNET_NAMES = {
    ".attention.attn.q.": ".attention.self.query.",
    ".attention.attn.k.": ".attention.self.key.",
    ".attention.attn.v.": ".attention.self.value.",
    ".attention.attn.o.": ".attention.output.dense.",
    ".attention.LayerNorm.": ".attention.output.LayerNorm.",
}
RELATIVE_BIAS = "encoder.relative_attention_bias.weight"
# transformers' MPNet fixes the largest bucketed distance at 128 (it is not in config.json).
MPNET_MAX_DISTANCE = 128
POSITIONS = "embeddings.position_embeddings.weight"
# Fields of the transformers LongformerConfig taken from the source config as they are.
CARRIED_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "initializer_range",
    "dtype",
    "torch_dtype",
    "problem_type",
)
LABELLED = ("LongformerForSequenceClassification", "LongformerForTokenClassification")
SUPPORTED_ACTS = ("gelu", "relu", "gelu_new", "silu")


def convert_to_long(
    src_dir: str | Path,
    out_dir: str | Path,
    max_positions: int = 4096,
    attention_window: int | list[int] = 512,
    *,
    config_extra: dict[str, Any] | None = None,
    overwrite: bool = False,
    on_note: Callable[[str], None] | None = None,
) -> Path:
    """Convert the checkpoint folder `src_dir` into a Longformer checkpoint in `out_dir`.

    `attention_window` is the FULL window (transformers' convention), one even int or one per
    layer. `config_extra` is merged into the written config.json (a top-level "lfcli" dict is
    merged key by key into the one written here). Things dropped or changed on the way
    (an NSP head, a padding rule in tokenizer.json, ...) are reported through `on_note`
    (default: a logging warning on "lfcli.convert"). The folder is written next to `out_dir`
    first and renamed into place, so it is complete or absent; an existing non-empty
    `out_dir` is an error unless `overwrite`. Returns `out_dir`.
    """
    src, out = Path(src_dir), Path(out_dir)
    note = on_note or log.warning
    if not isinstance(max_positions, int) or isinstance(max_positions, bool) or max_positions <= 0:
        raise CheckpointError(f"max_positions must be a positive int, got {max_positions!r}")
    if not src.is_dir():
        raise CheckpointError(f"{src}: not a checkpoint folder (expected config.json and model.safetensors)")
    if out.resolve() == src.resolve():
        raise CheckpointError(f"{out}: the output folder must differ from the source folder")
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not overwrite)):
        raise CheckpointError(f"{out}: already exists and is not empty (pick another folder, or overwrite)")

    raw = _read_source_config(src)
    state = read_state_dict(src)
    config, tensors = convert_state(raw, state, src, max_positions, attention_window, note, tokenizer_special_ids(src))
    if config_extra:
        extra = dict(config_extra)
        block = extra.pop("lfcli", None)
        config.update(extra)
        if block is not None:
            config["lfcli"] = {**config.get("lfcli", {}), **block}

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        _write(tmp, config, tensors)
        copy_long_tokenizer(src, tmp, max_positions, note)
        _install(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


# -- reading the source --------------------------------------------------------------------
def _read_source_config(src: Path) -> dict[str, Any]:
    path = src / "config.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{src}: no config.json there") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    model_type = raw.get("model_type")
    if model_type not in SOURCE_TYPES:
        raise CheckpointError(
            f"{src}: model_type {model_type!r} cannot be converted (lfcli converts {', '.join(SOURCE_TYPES)} checkpoints)"
        )
    if raw.get("position_embedding_type", "absolute") not in (None, "absolute"):
        raise CheckpointError(
            f"{src}: position_embedding_type {raw['position_embedding_type']!r} cannot be converted (only absolute)"
        )
    if raw.get("hidden_act", "gelu") not in SUPPORTED_ACTS:
        raise CheckpointError(
            f"{src}: hidden_act {raw['hidden_act']!r} is not supported (lfcli runs {', '.join(SUPPORTED_ACTS)})"
        )
    return raw


def _special_ids(raw: dict[str, Any], tokenizer_ids: dict[str, int]) -> dict[str, int]:
    """pad/bos/eos/sep ids: the source config's, else the tokenizer's, else the usual ones."""
    bert = raw["model_type"] == "bert"
    defaults = {"pad": 0, "bos": 101, "eos": 102, "sep": 102} if bert else {"pad": 1, "bos": 0, "eos": 2, "sep": 2}
    # BERT has no bos/eos: [CLS]/[SEP] play their part.
    fallbacks = {"pad": ("pad",), "bos": ("bos", "cls"), "eos": ("eos", "sep"), "sep": ("sep", "eos")}
    out = {}
    for role, default in defaults.items():
        value = raw.get(f"{role}_token_id")
        if isinstance(value, list):  # a list of eos ids: the first one
            value = value[0] if value else None
        if not isinstance(value, int) or isinstance(value, bool):
            value = next((tokenizer_ids[r] for r in fallbacks[role] if r in tokenizer_ids), default)
        out[role] = value
    return out


# -- the conversion proper -----------------------------------------------------------------
def _head_class(raw: dict[str, Any], names: set[str], note: Callable[[str], None]) -> str:
    archs = raw.get("architectures") or []
    arch = archs[0] if archs and isinstance(archs[0], str) else ""
    if "For" in arch:
        suffix = arch.split("For", 1)[1]
        heads = source_heads()
        if suffix in heads:
            return heads[suffix]
        note(f"the {arch} head has no Longformer counterpart in lfcli; only the encoder is converted")
        return "LongformerModel"
    if arch:
        return "LongformerModel"
    # No architectures entry: guess from the tensor names.
    bare = {split_prefix(n)[1] for n in names}
    if any(n.startswith(("lm_head.", "cls.predictions.")) for n in bare):
        return "LongformerForMaskedLM"
    if any(n.startswith("qa_outputs.") for n in bare):
        return "LongformerForQuestionAnswering"
    if any(n.startswith("classifier.out_proj.") for n in bare):
        return "LongformerForSequenceClassification"
    if any(n.startswith("classifier.") for n in bare):
        note("config.json names no architecture and the classifier could be per sequence or per token; "
             "only the encoder is converted")
    return "LongformerModel"


def _map_head(
    model_type: str, arch: str, heads: dict[str, torch.Tensor], encoder: dict[str, torch.Tensor],
    hidden_act: str, note: Callable[[str], None],
) -> tuple[str, dict[str, torch.Tensor]]:
    """The head tensors under Longformer names, or ("LongformerModel", {}) when they cannot be kept."""
    words = encoder.get("embeddings.word_embeddings.weight")
    out: dict[str, torch.Tensor] = {}
    if arch == "LongformerForMaskedLM":
        if model_type == "bert":
            rename = {
                "cls.predictions.transform.dense.weight": "lm_head.dense.weight",
                "cls.predictions.transform.dense.bias": "lm_head.dense.bias",
                "cls.predictions.transform.LayerNorm.weight": "lm_head.layer_norm.weight",
                "cls.predictions.transform.LayerNorm.bias": "lm_head.layer_norm.bias",
                "cls.predictions.bias": "lm_head.bias",
            }
            decoder = heads.get("cls.predictions.decoder.weight")
            if any(k.startswith("cls.seq_relationship.") for k in heads):
                note("the next-sentence-prediction head (cls.seq_relationship) is dropped")
            if hidden_act != "gelu":
                # Longformer's LM head always applies exact GELU; BERT's uses hidden_act.
                note(f"the BERT masked-LM head uses {hidden_act!r}, Longformer's uses gelu; the head is dropped")
                return "LongformerModel", {}
        else:
            rename = {f"lm_head.{k}": f"lm_head.{k}" for k in
                      ("dense.weight", "dense.bias", "layer_norm.weight", "layer_norm.bias", "bias")}
            decoder = heads.get("lm_head.decoder.weight")
            if "lm_head.bias" not in heads and "lm_head.decoder.bias" in heads:
                rename["lm_head.decoder.bias"] = "lm_head.bias"
        if decoder is not None and words is not None and not torch.equal(decoder, words):
            note("the masked-LM decoder is not tied to the word embeddings (Longformer ties them); the head is dropped")
            return "LongformerModel", {}
    elif arch == "LongformerForSequenceClassification":
        if model_type == "bert":
            # BERT: tanh(pooler.dense(h[CLS])) -> classifier; Longformer: tanh(dense(h[0])) -> out_proj.
            rename = {
                "pooler.dense.weight": "classifier.dense.weight",
                "pooler.dense.bias": "classifier.dense.bias",
                "classifier.weight": "classifier.out_proj.weight",
                "classifier.bias": "classifier.out_proj.bias",
            }
            heads = {**heads, **{k: v for k, v in encoder.items() if k.startswith("pooler.")}}
        else:
            rename = {f"classifier.{k}": f"classifier.{k}" for k in
                      ("dense.weight", "dense.bias", "out_proj.weight", "out_proj.bias")}
    elif arch == "LongformerForTokenClassification":
        rename = {"classifier.weight": "classifier.weight", "classifier.bias": "classifier.bias"}
    elif arch == "LongformerForQuestionAnswering":
        rename = {"qa_outputs.weight": "qa_outputs.weight", "qa_outputs.bias": "qa_outputs.bias"}
    else:
        return arch, {}
    for src_name, dst_name in rename.items():
        if src_name in heads:
            out[dst_name] = heads[src_name]
    wanted = set(rename.values())
    if out.keys() != wanted:
        missing = sorted(wanted - out.keys())
        note(f"the source head is incomplete (missing {', '.join(missing)}); only the encoder is converted")
        return "LongformerModel", {}
    return arch, out


def _tile_positions(table: torch.Tensor, model_type: str, pad: int, max_positions: int) -> torch.Tensor:
    """The new (max_positions + pad + 1, hidden) table, learned rows tiled after the offset rows."""
    offset = pad + 1
    if model_type == "bert":
        learned = table
        head = torch.zeros(offset, table.shape[1], dtype=table.dtype)
    else:
        learned = table[offset:]
        head = table[:offset]
    if learned.shape[0] == 0:
        raise CheckpointError(f"the position table has {table.shape[0]} rows: no learned rows after the {offset} offset rows")
    repeats = -(-max_positions // learned.shape[0])
    tiled = learned.repeat(repeats, 1)[:max_positions]
    return torch.cat([head, tiled], dim=0).contiguous()


def convert_state(
    raw: dict[str, Any],
    state: dict[str, torch.Tensor],
    src: Path,
    max_positions: int,
    attention_window: int | list[int],
    note: Callable[[str], None],
    tokenizer_ids: dict[str, int] | None = None,
) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """(config.json dict, tensors) of the converted checkpoint."""
    model_type = raw["model_type"]
    ids = _special_ids(raw, tokenizer_ids or {})
    pad = ids["pad"]

    encoder: dict[str, torch.Tensor] = {}
    heads: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        is_encoder, bare = split_prefix(name)
        if bare == "embeddings.position_ids" or name == "embeddings.position_ids":
            continue
        (encoder if is_encoder else heads)[bare] = tensor
    if POSITIONS not in encoder or "embeddings.word_embeddings.weight" not in encoder:
        raise CheckpointError(f"{src}: no embeddings in the weights file (is this a {model_type} checkpoint?)")
    if model_type == "mpnet":
        encoder = _from_mpnet(encoder, src)

    arch = _head_class(raw, set(state), note)
    arch, head_tensors = _map_head(model_type, arch, heads, encoder, raw.get("hidden_act", "gelu"), note)

    source_positions = encoder[POSITIONS].shape[0]
    raw_max = raw.get("max_position_embeddings", source_positions)
    if raw_max != source_positions:
        raise CheckpointError(
            f"{src}: max_position_embeddings is {raw_max} but the position table has {source_positions} rows"
        )
    if model_type != "bert" and source_positions <= pad + 1:
        raise CheckpointError(f"{src}: the position table has no learned rows after the {pad + 1} offset rows")
    tensors: dict[str, torch.Tensor] = {}
    prefix = "" if arch == "LongformerModel" else "longformer."
    for name, tensor in encoder.items():
        if name.startswith("pooler.") and arch != "LongformerModel":
            continue  # the task models have no pooler
        tensors[prefix + name] = tensor
    tensors[prefix + POSITIONS] = _tile_positions(encoder[POSITIONS], model_type, pad, max_positions)
    tensors.update(global_from_local(tensors))
    tensors.update(head_tensors)
    tensors = {k: v.detach().to("cpu").contiguous().clone() for k, v in sorted(tensors.items())}

    # config.json: transformers' LongformerConfig fields under their names.
    config: dict[str, Any] = {k: raw[k] for k in CARRIED_FIELDS if raw.get(k) is not None}
    config.update(
        model_type="longformer",
        architectures=[arch],
        attention_window=attention_window,
        max_position_embeddings=max_positions + pad + 1,
        type_vocab_size=raw.get("type_vocab_size", 2 if model_type == "bert" else 1),
        layer_norm_eps=raw.get("layer_norm_eps", 1e-12 if model_type == "bert" else 1e-5),
        pad_token_id=pad,
        bos_token_id=ids["bos"],
        eos_token_id=ids["eos"],
        sep_token_id=ids["sep"],
    )
    if arch in LABELLED and raw.get("id2label"):
        config["id2label"] = {str(k): v for k, v in raw["id2label"].items()}
        config["label2id"] = {v: int(k) for k, v in raw["id2label"].items()}
    if model_type == "mpnet":
        config.update(relative_attention_num_buckets=raw.get("relative_attention_num_buckets", 32),
                      relative_attention_max_distance=MPNET_MAX_DISTANCE)
    learned = source_positions if model_type == "bert" else source_positions - pad - 1
    config["lfcli"] = {"converted_from": model_type, "source_positions": learned, **sentence_pooling(src)}
    _check(config, tensors, arch, src)
    return config, tensors


def _from_mpnet(encoder: dict[str, torch.Tensor], src: Path) -> dict[str, torch.Tensor]:
    """An MPNet encoder's tensors under Longformer's names. MPNet has no token types: a
    Longformer's one-row token-type table of zeros adds nothing. Its relative position bias
    table keeps its name (the Longformer encoder reads it when the config has buckets)."""
    if RELATIVE_BIAS not in encoder:
        raise CheckpointError(f"{src}: an mpnet checkpoint without {RELATIVE_BIAS}")
    out = {}
    for name, tensor in encoder.items():
        for old, new in MPNET_NAMES.items():
            name = name.replace(old, new)
        out[name] = tensor
    words = out["embeddings.word_embeddings.weight"]
    out.setdefault("embeddings.token_type_embeddings.weight", words.new_zeros((1, words.shape[1])))
    return out


def sentence_pooling(src: Path) -> dict[str, Any]:
    """A sentence-transformers folder's pooling and normalisation (modules.json and its
    Pooling module's config.json), as the embed task reads them from config.json's "lfcli"
    block: {"pooling": "mean" | "cls", "normalize": bool}; {} for any other folder, or a
    pooling lfcli does not run."""
    try:
        modules = json.loads((src / "modules.json").read_text(encoding="utf-8"))
        kinds = {m["type"].rsplit(".", 1)[-1]: m.get("path", "") for m in modules}
        pooling = json.loads((src / kinds["Pooling"] / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
    modes = [mode for mode in ("mean", "cls") if pooling.get(f"pooling_mode_{mode}_tokens" if mode == "mean" else "pooling_mode_cls_token")]
    others = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v and k not in
              ("pooling_mode_mean_tokens", "pooling_mode_cls_token")]
    if len(modes) != 1 or others:
        return {}
    return {"pooling": modes[0], "normalize": "Normalize" in kinds}


def _expected_shapes(cfg: LongformerConfig, arch: str) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every tensor lfcli's (and transformers') model of class `arch` loads."""
    h, i, prefix = cfg.hidden_size, cfg.intermediate_size, ("" if arch == "LongformerModel" else "longformer.")
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (cfg.vocab_size, h),
        POSITIONS: (cfg.max_position_embeddings, h),
        "embeddings.token_type_embeddings.weight": (cfg.type_vocab_size, h),
        "embeddings.LayerNorm.weight": (h,),
        "embeddings.LayerNorm.bias": (h,),
    }
    if cfg.relative_attention_num_buckets:
        shapes[RELATIVE_BIAS] = (cfg.relative_attention_num_buckets, cfg.num_attention_heads)
    linear = {f"attention.self.{p}": (h, h) for p in ("query", "key", "value", "query_global", "key_global", "value_global")}
    linear.update({"attention.output.dense": (h, h), "intermediate.dense": (i, h), "output.dense": (h, i)})
    for layer in range(cfg.num_hidden_layers):
        for name, shape in linear.items():
            shapes[f"encoder.layer.{layer}.{name}.weight"] = shape
            shapes[f"encoder.layer.{layer}.{name}.bias"] = shape[:1]
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[f"encoder.layer.{layer}.{norm}.weight"] = (h,)
            shapes[f"encoder.layer.{layer}.{norm}.bias"] = (h,)
    shapes = {prefix + k: v for k, v in shapes.items()}
    if arch == "LongformerModel":
        shapes.update({"pooler.dense.weight": (h, h), "pooler.dense.bias": (h,)})
    elif arch == "LongformerForMaskedLM":
        shapes.update({"lm_head.dense.weight": (h, h), "lm_head.dense.bias": (h,), "lm_head.layer_norm.weight": (h,),
                       "lm_head.layer_norm.bias": (h,), "lm_head.bias": (cfg.vocab_size,)})
    elif arch == "LongformerForSequenceClassification":
        shapes.update({"classifier.dense.weight": (h, h), "classifier.dense.bias": (h,),
                       "classifier.out_proj.weight": (cfg.num_labels, h), "classifier.out_proj.bias": (cfg.num_labels,)})
    elif arch == "LongformerForTokenClassification":
        shapes.update({"classifier.weight": (cfg.num_labels, h), "classifier.bias": (cfg.num_labels,)})
    elif arch == "LongformerForQuestionAnswering":
        shapes.update({"qa_outputs.weight": (2, h), "qa_outputs.bias": (2,)})
    return shapes


def _check(config: dict[str, Any], tensors: dict[str, torch.Tensor], arch: str, src: Path) -> None:
    """The converted tensors must be exactly what the Longformer model of that class holds."""
    try:
        cfg = LongformerConfig.from_dict(config)
    except ConfigError as exc:
        raise CheckpointError(f"{src}: {exc}") from None
    expected = _expected_shapes(cfg, arch)
    optional = {"pooler.dense.weight", "pooler.dense.bias"}
    missing = sorted(k for k in expected if k not in tensors and k not in optional)
    unexpected = sorted(k for k in tensors if k not in expected)
    shapes = sorted(f"{k} {tuple(tensors[k].shape)} vs {s}" for k, s in expected.items()
                    if k in tensors and tuple(tensors[k].shape) != s)
    for what, items in (("missing", missing), ("unexpected", unexpected), ("with shapes that differ from config.json", shapes)):
        if items:
            shown = ", ".join(items[:6]) + (f" and {len(items) - 6} more" if len(items) > 6 else "")
            raise CheckpointError(f"{src}: weights {what}: {shown}")


# -- writing -------------------------------------------------------------------------------
def _write(folder: Path, config: dict[str, Any], tensors: dict[str, torch.Tensor]) -> None:
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})


def _install(tmp: Path, out: Path) -> None:
    """Move the finished folder `tmp` to `out` (replacing an existing `out`)."""
    os.chmod(tmp, 0o755)  # mkdtemp makes it 0700
    for path in tmp.iterdir():
        os.chmod(path, 0o644)
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        try:
            os.replace(tmp, out)
        finally:
            shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)
