"""Small real checkpoints for pipeline and CLI tests: a WordPiece tokenizer trained here on a
little English text, and random-weight lfcli models saved with lfcli's own save_pretrained.
(No mocks: the same loading, tokenising and model code runs as for a real checkpoint.)"""

from __future__ import annotations

from pathlib import Path

import torch

from lfcli.models import ARCHITECTURES, LongformerConfig

TRAINING_TEXT = """
The court held that the contract was void because the seller had concealed the defect.
Patients who received the treatment recovered faster than those who did not, the study found.
It was a bright cold day in April, and the clocks were striking thirteen.
The committee will meet on Tuesday to discuss the budget and the new hiring policy.
She said that he would come back before the winter, but he never did.
What is the capital of France? Paris is the capital and largest city of France.
The answer is forty-two. The passkey is 7351. Remember it. Elizabeth walked to Netherfield.
""" * 3


FIXED_TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "tokenizer.json"


def make_tokenizer(folder: Path, vocab_size: int = 400) -> None:
    """The test tokenizer: a WordPiece tokenizer trained on TRAINING_TEXT (`train_tokenizer`),
    kept as tests/fixtures/tokenizer.json. Kept, not trained per run: tokenizers' trainer breaks
    ties differently in each process, so each run's random-weight models would tokenize, and
    answer, differently, and a test on them pass or fail by chance."""
    if vocab_size != 400:
        train_tokenizer(folder, vocab_size)
        return
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_bytes(FIXED_TOKENIZER.read_bytes())


def train_tokenizer(folder: Path, vocab_size: int = 400) -> None:
    """Train a WordPiece tokenizer on TRAINING_TEXT into `folder` (how the kept fixture was made:
    `python -c "from checkpoints import train_tokenizer; ..."` in tests/)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials)
    tok.train_from_iterator(TRAINING_TEXT.splitlines(), trainer)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))


def make_checkpoint(
    folder: Path,
    architecture: str = "LongformerModel",
    max_tokens: int = 128,
    attention_window: int = 16,
    labels: list[str] | None = None,
    seed: int = 0,
) -> Path:
    """A tiny Longformer (BERT vocabulary, RoBERTa-style positions) with random weights."""
    folder.mkdir(parents=True, exist_ok=True)
    make_tokenizer(folder)
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    pad = tok.token_to_id("[PAD]")
    config = LongformerConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=max_tokens + pad + 1,
        attention_window=attention_window,
        pad_token_id=pad,
        bos_token_id=tok.token_to_id("[CLS]"),
        eos_token_id=tok.token_to_id("[SEP]"),
        sep_token_id=tok.token_to_id("[SEP]"),
        id2label=dict(enumerate(labels)) if labels else None,
    )
    torch.manual_seed(seed)
    ARCHITECTURES[architecture](config).save_pretrained(folder)
    return folder


def task_checkpoints(base: Path) -> dict[str, Path]:
    """One tiny checkpoint per inference task, in folders under `base`."""
    return {
        "embed": make_checkpoint(base / "enc", "LongformerModel"),
        "classify": make_checkpoint(base / "cls", "LongformerForSequenceClassification", labels=["law", "medicine", "news"]),
        "qa": make_checkpoint(base / "qa", "LongformerForQuestionAnswering"),
        "corefs": make_checkpoint(base / "coref", "LongformerForCoreference"),
    }
