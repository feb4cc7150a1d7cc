"""A conversion's tokenizer files: the special tokens' ids they name, and their copies in the
long model's folder (models/convert.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

from .checkpoint import TOKENIZER_FILES


def token_content(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def tokenizer_special_ids(src: Path) -> dict[str, int]:
    """{"cls"|"sep"|"pad"|"bos"|"eos": id} from the source's tokenizer files, where they say."""
    names: dict[str, str] = {}
    for fname in ("tokenizer_config.json", "special_tokens_map.json"):  # the second one wins
        try:
            data = json.loads((src / fname).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            for role in ("cls", "sep", "pad", "bos", "eos"):
                content = token_content(data.get(f"{role}_token"))
                if content is not None:
                    names[role] = content
    vocab: dict[str, int] = {}
    try:
        tok = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
        model_vocab = tok.get("model", {}).get("vocab")
        if isinstance(model_vocab, dict):
            vocab.update({k: v for k, v in model_vocab.items() if isinstance(v, int)})
        for added in tok.get("added_tokens") or []:
            vocab[added["content"]] = added["id"]
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        pass
    if not vocab:
        try:
            vocab = json.loads((src / "vocab.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            try:
                lines = (src / "vocab.txt").read_text(encoding="utf-8").split("\n")
                vocab = {line: i for i, line in enumerate(lines) if line}
            except OSError:
                pass
    # No names in the config files: the usual BERT / RoBERTa ones, if the vocab has them.
    for role, (bert_name, roberta_name) in {
        "cls": ("[CLS]", "<s>"),
        "sep": ("[SEP]", "</s>"),
        "pad": ("[PAD]", "<pad>"),
    }.items():
        names.setdefault(role, bert_name if bert_name in vocab else roberta_name)
    return {role: vocab[name] for role, name in names.items() if isinstance(vocab.get(name), int)}


def copy_long_tokenizer(src: Path, dst: Path, max_positions: int, note: Callable[[str], None]) -> None:
    """The source's tokenizer files, as they are but for tokenizer.json (no fixed truncation
    or padding) and tokenizer_config.json (the long model's model_max_length)."""
    for fname in TOKENIZER_FILES:
        path = src / fname
        if not path.is_file():
            continue
        if fname == "tokenizer.json":
            data = json.loads(path.read_text(encoding="utf-8"))
            # A fixed truncation/padding rule (all-MiniLM-L6-v2 ships 128/128) would silently
            # cut or pad every long document: the converted model gets none.
            dropped = [k for k in ("truncation", "padding") if data.get(k) is not None]
            if dropped:
                for k in dropped:
                    note(f"tokenizer.json: the source's {k} rule ({describe_rule(data[k])}) is removed")
                    data[k] = None
                (dst / fname).write_text(json.dumps(data, ensure_ascii=False) + "\n", encoding="utf-8")
                continue
        elif fname == "tokenizer_config.json":
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and "model_max_length" in data:
                data["model_max_length"] = max_positions
                (dst / fname).write_text(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n",
                                         encoding="utf-8")
                continue
        shutil.copyfile(path, dst / fname)


def describe_rule(rule: Any) -> str:
    if isinstance(rule, dict):
        if "max_length" in rule:
            return f"max_length {rule['max_length']}"
        strategy = rule.get("strategy")
        if isinstance(strategy, dict):
            return ", ".join(f"{k} {v}" for k, v in strategy.items())
        return str(strategy)
    return str(rule)
