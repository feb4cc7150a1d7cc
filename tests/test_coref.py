"""Coreference: the start-to-end head (its scores against the paper's formulas, written out
the slow way), decoding known scores into clusters, windows merging across a boundary, the
loss going down on a tiny real model, and `finetune corefs` end to end: CoNLL and JSONL data,
the adapter folder (under the size the bundled model must keep), loading it for `corefs`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from checkpoints import make_checkpoint
from lfcli.models import LongformerConfig, LongformerForCoreference
from lfcli.pipelines.io.readers import Document
from lfcli.pipelines.tasks.corefs.decode import decode_clusters, pronoun_kind, words_of
from lfcli.pipelines.tasks.corefs.entities import Mention, Profile
from lfcli.pipelines.tasks.corefs.task import CorefTask
from lfcli.pipelines.infer.tasks import predict_rows
from lfcli.pipelines.infer.tokenize import DocumentTokenizer, token_span
from lfcli.pipelines.tasks.corefs.train import (
    CorefTrainTask,
    coref_loss,
    read_coref_documents,
)

TEXT = ("Elizabeth walked to Netherfield . She said that he would come back before the winter . "
        "The committee will meet on Tuesday . Elizabeth smiled and she left .")


def spans_of(text: str, *words: tuple[str, int]) -> list[tuple[int, int]]:
    """Character spans of the k-th occurrence of each word."""
    out = []
    for word, k in words:
        at = -1
        for _ in range(k + 1):
            at = text.index(word, at + 1)
        out.append((at, at + len(word)))
    return out


GOLD = [spans_of(TEXT, ("Elizabeth", 0), ("She", 0), ("Elizabeth", 1), ("she", 0)),
        spans_of(TEXT, ("Netherfield", 0)),
        spans_of(TEXT, ("The committee", 0))]


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def coref_dir(tmp_path_factory):
    folder = make_checkpoint(tmp_path_factory.mktemp("coref"), "LongformerForCoreference", max_tokens=128, attention_window=16)
    config = json.loads((folder / "config.json").read_text())
    assert "coref" not in config
    return folder


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory):
    return make_checkpoint(tmp_path_factory.mktemp("base"), "LongformerModel", max_tokens=128, attention_window=16)


def tiny_model(folder: Path, **coref) -> LongformerForCoreference:
    config = LongformerConfig.from_json_file(folder / "config.json")
    config.extra["coref"] = {"ffnn_size": 12, "max_span_width": 5, **coref}
    torch.manual_seed(0)
    return LongformerForCoreference(config).eval()


# -- the head ---------------------------------------------------------------------------------------
def test_scores_follow_the_paper_formulas(coref_dir):
    model = tiny_model(coref_dir, top_lambda=0.5)
    with torch.no_grad():
        for p in model.parameters():  # biases and norms too: every term must count
            p.add_(0.1 * torch.randn_like(p))
    torch.manual_seed(1)
    ids = torch.randint(5, model.config.vocab_size, (2, 20))
    mask = torch.ones_like(ids)
    mask[1, 15:] = 0
    starts = torch.rand(2, 20) > 0.3
    torch.set_grad_enabled(False)
    out = model.score(ids, mask, start_mask=starts)
    h = model.longformer(ids, mask)
    W = model.max_span_width
    ms, me = model.start_mention_mlp(h), model.end_mention_mlp(h)
    for b in range(2):
        n = int(mask[b].sum())
        for i in range(20):
            for w in range(W):
                j = i + w
                expected = float("-inf")
                if j < n and i < n and starts[b, i]:
                    expected = float(model.mention_start_classifier(ms[b, i]) + model.mention_end_classifier(me[b, j])
                                     + ms[b, i] @ model.mention_s2e_classifier.weight.T @ me[b, j]
                                     + model.mention_s2e_classifier.bias @ me[b, j])
                assert float(out.mention_scores[b, i, w]) == pytest.approx(expected, abs=1e-4)
    # kept: top 0.5 * 20 spans of each sample, in text order, with their mention scores
    k = out.spans.shape[1]
    assert k == 10
    for b in range(2):
        flat = out.mention_scores[b].flatten()
        best = set(flat.topk(k).indices.tolist())
        got = [(int(s), int(e)) for s, e in out.spans[b]]
        assert got == sorted(got) and {s * W + (e - s) for s, e in got} == best
    # antecedent scores: the four bilinear terms, -inf unless c is earlier
    a_s, a_e = model.start_coref_mlp(h), model.end_coref_mlp(h)
    lin = lambda m, x: m(x)  # noqa: E731
    for b in range(2):
        for q in range(k):
            for c in range(k):
                got = float(out.antecedent_scores[b, q, c])
                if c >= q:
                    assert got == float("-inf")
                    continue
                sq, eq = out.spans[b, q].tolist()
                sc, ec = out.spans[b, c].tolist()
                fa = (a_s[b, sc] @ lin(model.antecedent_s2s_classifier, a_s[b, sq])
                      + a_e[b, ec] @ lin(model.antecedent_s2e_classifier, a_s[b, sq])
                      + a_s[b, sc] @ lin(model.antecedent_e2s_classifier, a_e[b, eq])
                      + a_e[b, ec] @ lin(model.antecedent_e2e_classifier, a_e[b, eq]))
                expected = float(fa)
                assert got == pytest.approx(expected, rel=1e-4, abs=1e-4)
    torch.set_grad_enabled(True)


def test_keep_forces_gold_spans_into_the_top_mentions(coref_dir):
    model = tiny_model(coref_dir, top_lambda=0.1)
    ids = torch.randint(5, model.config.vocab_size, (1, 30))
    keep = torch.zeros(1, 30, 5, dtype=torch.bool)
    keep[0, 3, 2] = keep[0, 20, 0] = keep[0, 27, 1] = True
    with torch.no_grad():
        out = model.score(ids, keep=keep)
    got = {tuple(s) for s in out.spans[0].tolist()}
    assert {(3, 5), (20, 20), (27, 28)} <= got and len(got) == 3


# -- decoding -------------------------------------------------------------------------------------
def test_decoding_turns_known_scores_into_clusters():
    spans = torch.tensor([[0, 0], [2, 3], [5, 5], [7, 8], [9, 9], [12, 12]])
    valid = torch.tensor([True, True, True, True, True, False])
    ninf = float("-inf")
    pair = torch.full((6, 6), ninf)
    pair[2, 0], pair[2, 1] = 3.0, 1.0  # 2 -> 0 (the best antecedent)
    pair[3, 0], pair[3, 1], pair[3, 2] = -1.0, -2.0, -0.5  # every antecedent below the dummy: no link
    pair[4, 1], pair[4, 2] = 0.5, 2.5  # 4 -> 2, so 0, 2, 4 are one entity
    pair[5, 0] = 9.0  # not a valid mention: ignored
    mention = torch.tensor([1.0, -0.3, 0.2, 0.7, 0.1, 5.0])  # span 1 is no mention (below 0)
    assert decode_clusters(spans, valid, pair, mention) == [[(0, 0), (5, 5), (9, 9)], [(7, 8)]]
    # a link threshold above 2.5 keeps 4 apart, above 3 keeps 2 apart too
    assert decode_clusters(spans, valid, pair, mention, link_threshold=2.7) == [[(0, 0), (5, 5)], [(7, 8)], [(9, 9)]]
    assert decode_clusters(spans, valid, pair, mention, link_threshold=3.0) == [[(0, 0)], [(5, 5)], [(7, 8)], [(9, 9)]]
    # a span that is no mention is never an antecedent, however high its pair score
    pair[4, 1] = 7.0
    assert decode_clusters(spans, valid, pair, mention) == [[(0, 0), (5, 5), (9, 9)], [(7, 8)]]
    # a higher mention threshold leaves spans 0 and 3, linked to nothing: one-mention entities
    assert decode_clusters(spans, valid, pair, mention, mention_threshold=0.5) == [[(0, 0)], [(7, 8)]]
    # a lower one makes span 1 a mention: 4 now links to it, and 1 has no antecedent itself
    assert decode_clusters(spans, valid, pair, mention, mention_threshold=-1.0) == [
        [(0, 0), (5, 5)], [(2, 3), (9, 9)], [(7, 8)]]


def as_profiles(kinds):
    return [Profile.of(Mention(kind=k)) if k else None for k in kinds]


def test_pronoun_agreement_takes_the_next_antecedent_that_agrees():
    # spans: 0 "Anna", 1 "she", 2 "Tom", 3 "he", 4 "her", 5 "they"
    spans = torch.tensor([[0, 0], [2, 2], [4, 4], [6, 6], [8, 8], [10, 10]])
    valid, mention = torch.ones(6, dtype=torch.bool), torch.ones(6)
    kinds = [None, "she", None, "he", "she", "they"]
    pair = torch.full((6, 6), float("-inf"))
    pair[1, 0] = 2.0  # she -> Anna
    pair[2, 1], pair[2, 0] = 1.0, 0.5  # Tom -> she (a name has no kind: allowed)
    pair[3, 2], pair[3, 1], pair[3, 0] = 3.0, 1.5, 0.2  # he: Tom, she and Anna all hold "she" now
    pair[4, 3], pair[4, 0] = 4.0, 1.0  # her -> he, else Anna
    pair[5, 4], pair[5, 1] = 2.0, 1.0  # they: every chain it could join holds "she"
    plain = decode_clusters(spans, valid, pair, mention)
    assert plain == [[(0, 0), (2, 2), (4, 4), (6, 6), (8, 8), (10, 10)]]  # one chain: he, she and they
    agreed = decode_clusters(spans, valid, pair, mention, profiles=as_profiles(kinds))
    # "he" has no antecedent that agrees (all are in the she-chain) and starts its own chain;
    # "her" skips "he" for Anna; "they" finds nothing above the dummy that agrees and stays alone
    assert agreed == [[(0, 0), (2, 2), (4, 4), (8, 8)], [(6, 6)], [(10, 10)]]
    # the threshold still rules: an agreeing antecedent below it is no antecedent
    # (Tom's 1.0 is below 1.2, so "he" joins Tom alone; "her" and "they" find nothing that agrees)
    assert decode_clusters(spans, valid, pair, mention, link_threshold=1.2, profiles=as_profiles(kinds)) == [
        [(0, 0), (2, 2)], [(4, 4), (6, 6)], [(8, 8)], [(10, 10)]]
    # a chain of one kind only, or pronouns without kinds, decode as before
    assert decode_clusters(spans, valid, pair, mention, profiles=[None] * 6) == plain


def test_pronoun_kinds_and_the_words_that_are_pronouns(coref_dir):
    assert [pronoun_kind(w) for w in ("He", "his", "HERSELF", "I", "me", "US", "us", "They", "you", "Anna", "hIs")] == [
        "he", "he", "she", "i", "i", None, "we", "they", None, None, None]
    tok = DocumentTokenizer.from_folder(coref_dir, 64)
    text = "She gave him herself's book; US troops saw us."
    starts, ends, pronouns = words_of(tok.tokenizer, text, len(tok.encode(text).ids))
    offsets = tok.encode(text).offsets
    found = {text[offsets[s][0]:offsets[e][1]]: k for (s, e), k in pronouns.items()}
    assert found == {"She": "she", "him": "he", "herself": "she", "us": "we"}
    assert all(starts[s] and ends[e] for s, e in pronouns)


def test_words_read_in_stretches_equal_words_read_whole(coref_dir):
    """A long text's words are read in the stretches its tokens were (no book-sized tokenizer
    output): the same starts, ends and pronouns as one reading of the whole text."""
    text = "\n\n".join(f"She gave him {k} books; they read it.\nHe smiled at her." for k in range(60))
    small = DocumentTokenizer(DocumentTokenizer.from_folder(coref_dir, 64).tokenizer, 64, stretch_chars=200)
    parts = small.parts(text)
    assert len(parts) > 10 and parts[0][0] == 0 and parts[-1][1] == len(text)
    n = len(small.encode(text).ids)
    assert words_of(small.tokenizer, text, n, parts) == words_of(small.tokenizer, text, n)


def test_decoded_chains_never_mix_pronoun_kinds(coref_dir):
    """A real (random) model that links every mention to its best antecedent: without the
    rule its chains mix "he" and "she"; with it (the default) no chain does."""
    text = " ".join(["He saw her and she saw him ; they met us and we left it ."] * 3)
    tok = DocumentTokenizer.from_folder(coref_dir, 128)

    def chains(agreement: bool) -> list[set[str]]:
        model = tiny_model(coref_dir, top_lambda=1.0, mention_threshold=-1e9, link_threshold=-1e9)
        model.pronoun_agreement = agreement
        with torch.no_grad():
            (row,) = predict_rows(model, CorefTask(tok, "none", singletons=True), [Document("d", text)],
                                  tok.tokenizer.token_to_id("[PAD]"))
        return [{pronoun_kind(m["text"]) for m in c} - {None} for c in (chain["mentions"] for chain in row["chains"])]

    assert any(len(kinds) > 1 for kinds in chains(False))  # the test can fail: mixing happens
    assert all(len(kinds) <= 1 for kinds in chains(True))


def test_windows_merge_across_a_boundary(coref_dir):
    """A chain goes on from one window to the next through the mentions in their overlap, and
    each mention is kept once, from the window that owns its position."""
    text = " ".join(["Elizabeth walked to the house ."] + ["The day was long and cold ."] * 6 + ["She smiled ."])
    tok = DocumentTokenizer.from_folder(coref_dir, 24)
    task = CorefTask(tok, "none", singletons=True)
    prepared = task.prepare(0, Document("d", text))
    windows = [it.window.span for it in prepared.items]
    assert len(windows) >= 3
    offsets = prepared.encoded.offsets
    starts = [offsets[t][0] for t in range(len(offsets))]
    eliz, she = starts.index(text.index("Elizabeth")), starts.index(text.index("She"))
    days = [t for t, a in enumerate(starts) if text.startswith("The day", a)]
    results = [[] for _ in windows]
    # each window links the "The day" mentions it sees to the previous one, and the first
    # window links Elizabeth to the first; the last window also links "She"
    for w, (s, e) in enumerate(windows):
        seen = [(t, t + 1) for t in days if s <= t and t + 1 < e]
        if w == 0:
            seen = [(eliz, eliz)] + seen
        if s <= she < e:
            seen.append((she, she))
        results[w] = [seen] if seen else []
    row = task.finish(Document("d", text), prepared, results)
    chain = [(m["start"], m["end"], m["text"]) for m in row["chains"][0]["mentions"]]
    assert [c[2] for c in chain] == ["Elizabeth"] + ["The day"] * len(days) + ["She"]
    assert all(text[a:z] == t for a, z, t in chain)
    task.singletons = False
    assert len(task.finish(Document("d", text), prepared, results)["chains"]) == 1


def test_mentions_start_and_end_on_word_boundaries(coref_dir):
    tok = DocumentTokenizer.from_folder(coref_dir, 64)
    task = CorefTask(tok, "none")
    text = "Pemberley's passkey"
    prepared = task.prepare(0, Document("d", text))
    item = prepared.items[0]
    words = [text[a:z] for a, z in prepared.encoded.offsets]
    assert len(words) > 4  # Pemberley is several sub-words in the tiny vocabulary
    offsets = prepared.encoded.offsets
    starts = [offsets[t][0] for t, s in enumerate(item.extra["word_starts"]) if s]
    ends = [offsets[t][1] for t, e in enumerate(item.extra["word_ends"]) if e]
    assert starts == [0, 9, 10, 12] and ends == [9, 10, 11, 19]  # Pemberley | ' | s | passkey
    masks = task.mention_masks([item], len(item))
    assert masks["start_mask"].sum() == len(starts) and not masks["start_mask"][0, 0]  # [CLS] is no mention


# -- training ---------------------------------------------------------------------------------------
def test_gold_mentions_map_to_tokens(coref_dir):
    tok = DocumentTokenizer.from_folder(coref_dir, 128)
    enc = tok.encode(TEXT)
    for cluster in GOLD:
        for a, z in cluster:
            s, e = token_span(enc.offsets, a, z)
            assert enc.offsets[s][0] == a and enc.offsets[e][1] == z


def test_loss_goes_down_and_the_model_learns_the_clusters(coref_dir):
    model = tiny_model(coref_dir, top_lambda=0.4)
    config = model.config
    tok = DocumentTokenizer.from_folder(coref_dir, 128)
    from lfcli.pipelines.tasks.corefs.train import CorefDocument, window_examples

    doc = CorefDocument("d", TEXT, GOLD)
    task = CorefTrainTask(CorefTask(tok, "none", singletons=True), config.pad_token_id, model.max_span_width, [doc])
    task.examples, _ = window_examples(task.coref, doc, task.width)
    assert len(task.examples) == 1 and len(task.examples[0].mentions) == 6
    batch = task.collate(task.examples, [0])
    model.train()
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    curve = []
    for _ in range(60):
        loss = task.loss(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        curve.append(float(loss.detach()))
    assert curve[-1] < 0.1 * curve[0]
    model.eval()
    with torch.no_grad():
        metrics = task.evaluate(model)
    assert metrics["conll_f1"] > 90 and metrics["documents"] == 1


def test_loss_counts_the_dummy_for_mentions_without_antecedents():
    # one window, two kept spans, both gold and in one cluster: the second's only gold
    # antecedent is the first; the first's is the dummy.
    class Out:
        mention_scores = torch.tensor([[[2.0, float("-inf")], [1.0, float("-inf")]]])  # (1, n=2, W=2)
        spans = torch.tensor([[[0, 0], [1, 1]]])
        valid = torch.tensor([[True, True]])
        antecedent_scores = torch.tensor([[[float("-inf"), float("-inf")], [4.0, float("-inf")]]])

    gold = torch.tensor([[[1, 0], [1, 0]]])
    loss = coref_loss(Out, gold, torch.ones(1, 2, dtype=torch.bool))
    import math

    antecedent = (0.0 + (math.log(1 + math.exp(4)) - 4)) / 2  # the first: only the dummy, log 1
    mention = (math.log(1 + math.exp(-2)) + math.log(1 + math.exp(-1))) / 2
    assert float(loss) == pytest.approx(antecedent + mention, rel=1e-5)


def conll_file(path: Path, text: str = TEXT, clusters=GOLD, name: str = "doc") -> Path:
    words = text.split(" ")
    starts, pos = [], 0
    for w in words:
        starts.append(pos)
        pos += len(w) + 1
    marks = [[] for _ in words]
    for c, cluster in enumerate(clusters):
        for a, z in cluster:
            first, last = starts.index(a), max(i for i, s in enumerate(starts) if s < z)
            if first == last:
                marks[first].append(f"({c})")
            else:
                marks[first].append(f"({c}")
                marks[last].append(f"{c})")
    lines = [f"#begin document ({name}); part 000"]
    for i, w in enumerate(words):
        lines.append(f"{name}\t0\t{i}\t{w}\t_\t_\t_\t_\t_\t_\t_\t_\t{'|'.join(marks[i]) or '-'}")
        if w == ".":
            lines.append("")
    lines.append("#end document")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_conll_and_jsonl_read_the_same_documents(tmp_path):
    conll = conll_file(tmp_path / "doc.conll")
    (docs,), problems = read_coref_documents([str(conll)])
    assert not problems
    # the CoNLL text puts each sentence on its own line; the clusters are the same words
    assert [[docs.text[a:z] for a, z in c] for c in docs.clusters] == [[TEXT[a:z] for a, z in c] for c in GOLD]
    rows = tmp_path / "docs.jsonl"
    rows.write_text(json.dumps({"id": "x", "text": TEXT, "clusters": [[{"start": a, "end": z} for a, z in c] for c in GOLD]})
                    + "\n" + json.dumps({"id": "bad", "text": TEXT, "clusters": [[[5, 999]]]}) + "\n")
    got, problems = read_coref_documents([str(rows)])
    assert [d.id for d in got] == ["x"] and got[0].clusters == GOLD and "outside the text" in problems[0]
    (ids := tmp_path / "ids").write_text("doc\n")
    assert [d.id for d in read_coref_documents([str(conll), str(rows)], str(ids))[0]] == ["doc"]
    from lfcli.pipelines.errors import InputError

    with pytest.raises(InputError, match="in no input"):
        read_coref_documents([str(conll)], ["doc", "nope"])


def conll_split(tmp_path: Path, train: list[str], dev: list[str]) -> Path:
    """A folder of CoNLL documents named train + dev, and tmp_path/train.ids, dev.ids listing them."""
    data = tmp_path / "data"
    data.mkdir()
    for name in train + dev:
        conll_file(data / f"{name}.conll", name=name)
    (tmp_path / "train.ids").write_text("".join(f"{n}\n" for n in train))
    (tmp_path / "dev.ids").write_text("".join(f"{n}\n" for n in dev))
    return data


def test_finetune_corefs_end_to_end(base_dir, tmp_path):
    from lfcli.models.lora import ADAPTER_CONFIG, ADAPTER_WEIGHTS
    from lfcli.pipelines.train import finetune as F
    from lfcli.pipelines.infer.runner import Pipeline
    from lfcli.pipelines.train.loop import TrainConfig

    data = conll_split(tmp_path, train=["d0", "d1"], dev=["d2"])
    out = tmp_path / "out"
    config = TrainConfig(max_steps=8, lr=5e-3, batch_tokens=64, eval_every=4, log_every=1, patience=None)
    summary = F.finetune("corefs", [str(data)], str(out), model=str(base_dir), train_config=config, lora_rank=4,
                         ids=str(tmp_path / "train.ids"), validation_ids=str(tmp_path / "dev.ids"))
    assert summary["updates"] == 8 and summary["validation_ids"] == ["d2"] and summary["train_documents"] == 2
    evals = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if '"eval"' in line]
    assert len(evals) == 2 and all("conll_f1_no_singletons" in e for e in evals)
    adapter = json.loads((out / ADAPTER_CONFIG).read_text())
    # coreference never uses global attention: those LoRA layers stay zero and are left out
    assert not any("global" in t for t in adapter["target_modules"]) and "query" in adapter["target_modules"]
    from safetensors.torch import load_file

    keys = load_file(str(out / ADAPTER_WEIGHTS))
    assert not any("global" in k for k in keys) and "base_model.model.mention_s2e_classifier.weight" in keys
    config_json = json.loads((out / "config.json").read_text())
    assert config_json["coref"]["ffnn_size"] == 128 and config_json["architectures"] == ["LongformerForCoreference"]
    pipe = Pipeline("corefs", str(out), device="cpu")
    pipe.task.singletons = True
    (row,) = pipe.run([Document("x", TEXT)])
    assert all(TEXT[m["start"]:m["end"]] == m["text"] for c in row["chains"] for m in c["mentions"])


# -- paragraphs, GAP as a training signal, the combined criterion ---------------------------------
def test_no_mention_crosses_a_paragraph_break(coref_dir):
    """A span whose first and last tokens lie in different paragraphs is never a candidate:
    its mention score is -inf, so neither training nor decoding can pick it."""
    from lfcli.pipelines.infer.tokenize import paragraph_ids

    text = "The Lamplighter\n\nOld Teodor lit the lamps .\n \nHe slept ."
    tok = DocumentTokenizer.from_folder(coref_dir, 128)
    task = CorefTask(tok, "none")
    prepared = task.prepare(0, Document("d", text))
    offsets = prepared.encoded.offsets
    paragraphs = paragraph_ids(text, offsets)
    paragraph_at = {a: p for (a, z), p in zip(offsets, paragraphs) if z > a}  # a token's first character
    assert [paragraph_at[text.index(w)] for w in ("Lamplighter", "Old", "lamps", "He")] == [0, 1, 1, 2]
    item = prepared.items[0]
    model = tiny_model(coref_dir, max_span_width=12)
    from lfcli.pipelines.infer.tasks import batch_tensors

    batch = batch_tensors([item], model.config.pad_token_id)
    masks = task.mention_masks([item], batch["input_ids"].shape[1])
    with torch.no_grad():
        hidden = model.encode(batch["input_ids"], batch["attention_mask"])
        free = model.mention_scores(hidden, masks["start_mask"], masks["end_mask"])
        ruled = model.mention_scores(hidden, masks["start_mask"], masks["end_mask"], masks["segment_ids"])
    seg = masks["segment_ids"][0]
    n, W = ruled.shape[1:]
    crossing = torch.zeros(n, W, dtype=torch.bool)
    for i in range(n):
        for w in range(min(W, n - i)):
            crossing[i, w] = bool(seg[i] != seg[i + w])
    assert crossing.any() and torch.isfinite(free[0][crossing]).any()  # without the rule such spans are candidates
    assert not torch.isfinite(ruled[0][crossing]).any()
    assert torch.equal(ruled[0][~crossing], free[0][~crossing])


GAP_HEADER = "ID\tText\tPronoun\tPronoun-offset\tA\tA-offset\tA-coref\tB\tB-offset\tB-coref\tURL\n"


def gap_file(path: Path, rows: list[tuple[str, str, str, str, str, str]]) -> Path:
    """A GAP TSV from (id, text, pronoun, A, B, label) rows; label 'A', 'B' or '-' (neither)."""
    lines = [GAP_HEADER]
    for rid, text, pronoun, a, b, label in rows:
        lines.append("\t".join([rid, text, pronoun, str(text.index(pronoun)), a, str(text.index(a)), str(label == "A"),
                                b, str(text.index(b)), str(label == "B"), ""]) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


GAP_ROWS = [
    ("g1", "Mary met Anne at the station . She was late .", "She", "Mary", "Anne", "A"),
    ("g2", "Tom thanked Bill because he had helped .", "he", "Tom", "Bill", "B"),
    ("g3", "Carl saw Dan at the fair , and her mother waved .", "her", "Carl", "Dan", "-"),
]


def test_gap_rows_become_partially_annotated_documents(tmp_path):
    from lfcli.pipelines.tasks.corefs.train import gap_documents

    docs, problems = gap_documents(str(gap_file(tmp_path / "gap.tsv", GAP_ROWS)))
    assert problems == [] and [d.id for d in docs] == ["gap:g1", "gap:g2", "gap:g3"] and all(d.partial for d in docs)
    text = GAP_ROWS[0][1]
    as_words = [sorted(text[a:z] for a, z in c) for c in docs[0].clusters]
    assert sorted(as_words) == [["Anne"], ["Mary", "She"]]
    assert sorted(sorted(GAP_ROWS[1][1][a:z] for a, z in c) for c in docs[1].clusters) == [["Bill", "he"], ["Tom"]]
    assert len(docs[2].clusters) == 3  # neither name: three entities, the pronoun's antecedent is the dummy


def test_partial_windows_have_no_mention_loss_and_their_weight():
    """A partially annotated window (GAP) trains only the links among its listed mentions:
    its mention loss is dropped, and its loss counts with its weight."""
    class Out:
        mention_scores = torch.tensor([[[2.0, float("-inf")], [1.0, float("-inf")]]] * 2)  # (2, n=2, W=2)
        spans = torch.tensor([[[0, 0], [1, 1]]] * 2)
        valid = torch.tensor([[True, True]] * 2)
        antecedent_scores = torch.tensor([[[float("-inf"), float("-inf")], [4.0, float("-inf")]]] * 2)

    gold = torch.tensor([[[1, 0], [1, 0]]] * 2)
    mask = torch.ones(2, 2, dtype=torch.bool)
    full = coref_loss(Out, gold, mask, partial=torch.tensor([False, False]))
    import math

    antecedent = (math.log(1 + math.exp(4)) - 4) / 2
    mixed = coref_loss(Out, gold, mask, partial=torch.tensor([False, True]), weight=torch.tensor([1.0, 0.25]))
    assert float(mixed) == pytest.approx(float(full) / 2 + 0.25 * antecedent, rel=1e-5)


def test_finetune_corefs_with_gap_signal_and_combined_selection(base_dir, tmp_path):
    from lfcli.pipelines.train import finetune as F
    from lfcli.pipelines.train.loop import TrainConfig

    data = conll_split(tmp_path, train=["d0"], dev=["d1"])
    gap_train = gap_file(tmp_path / "gap-train.tsv", GAP_ROWS)
    gap_val = gap_file(tmp_path / "gap-val.tsv", GAP_ROWS[:2])
    out = tmp_path / "out"
    config = TrainConfig(max_steps=4, lr=5e-3, batch_tokens=64, eval_every=2, log_every=1, patience=None)
    summary = F.finetune("corefs", [str(data)], str(out), model=str(base_dir), train_config=config, lora_rank=4,
                         ids=str(tmp_path / "train.ids"), validation_ids=str(tmp_path / "dev.ids"),
                         gap=[str(gap_train)], gap_validation=str(gap_val), ffnn_size=16)
    assert summary["gap_training_rows"] == 3 and summary["gap_validation_rows"] == 2
    evals = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if '"eval"' in line]
    assert evals and all(e["score"] == pytest.approx((e["conll_f1"] + e["gap_f1"]) / 2) for e in evals)
    assert json.loads((out / "config.json").read_text())["coref"]["ffnn_size"] == 16


def test_gap_weight_sets_what_a_gap_window_weighs(base_dir, tmp_path):
    from lfcli.pipelines.errors import UsageError
    from lfcli.pipelines.tasks.corefs.train import setup_corefs

    data = conll_split(tmp_path, train=["d0"], dev=["d1"])
    gap_train = gap_file(tmp_path / "gap-train.tsv", GAP_ROWS)
    common = dict(folder=base_dir, data=[str(data)], validation=None, validation_split=0.1, max_length=None,
                  global_policy=None, seed=0, say=lambda _: None, ids=str(tmp_path / "train.ids"),
                  validation_ids=str(tmp_path / "dev.ids"), gap=[str(gap_train)])
    default, heavier = setup_corefs(**common), setup_corefs(**common, gap_weight=0.7)
    for setup, weight in ((default, 0.2), (heavier, 0.7)):
        examples = setup.task.examples
        batch = setup.task.collate(examples, list(range(len(examples))))
        assert sorted(set(batch["weight"].tolist())) == pytest.approx(sorted({1.0, weight}))
    assert default.fingerprint != heavier.fingerprint  # --resume with another weight is refused
    with pytest.raises(UsageError, match="--gap-weight"):
        setup_corefs(**common, gap_weight=0.0)


# -- config.json's "coref" block: a setting of the wrong kind is refused in one line ----------------
def _coref_checkpoint_with(coref_dir, tmp_path, **settings) -> Path:
    import shutil

    folder = tmp_path / "coref-set"
    shutil.copytree(coref_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config["coref"] = {**config.get("coref", {}), **settings}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_a_quoted_pronoun_agreement_is_refused_in_one_line(coref_dir, tmp_path):
    """"pronoun_agreement": "false" (a string) read as on before; now the model refuses it,
    and `lfcli corefs` exits 1 with one line naming the setting and the value."""
    from typer.testing import CliRunner

    from lfcli.cli import app
    from lfcli.models import ConfigError

    folder = _coref_checkpoint_with(coref_dir, tmp_path, pronoun_agreement="false")
    with pytest.raises(ConfigError, match=r'config\.json: "pronoun_agreement" in the "coref" block must be true or false.*got "false" \(a string\)'):
        LongformerForCoreference.from_pretrained(folder)
    doc = tmp_path / "doc.txt"
    doc.write_text(TEXT)
    result = CliRunner().invoke(app, ["corefs", str(doc), "-m", str(folder), "--quiet"])
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and '"pronoun_agreement"' in lines[0] and '"false"' in lines[0], lines
    assert result.stdout == ""
    (folder / "config.json").write_text((folder / "config.json").read_text().replace('"false"', "false"))
    assert LongformerForCoreference.from_pretrained(folder).pronoun_agreement is False  # the boolean is read


@pytest.mark.parametrize("setting", [{"link_threshold": "0.5"}, {"mention_threshold": None}, {"max_span_width": "30"},
                                     {"max_span_width": 2.5}, {"ffnn_size": True}, {"top_lambda": [0.4]}])
def test_coref_settings_of_the_wrong_kind_are_refused(coref_dir, tmp_path, setting):
    import re

    from lfcli.models import ConfigError

    folder = _coref_checkpoint_with(coref_dir, tmp_path, **setting)
    (key, value), = setting.items()
    with pytest.raises(ConfigError, match=rf'"{key}" in the "coref" block must be .*, got {re.escape(json.dumps(value))}'):
        LongformerForCoreference.from_pretrained(folder)


def test_a_row_gives_each_quote_its_speaker_and_the_quotes_i_to_the_speakers_chain(coref_dir):
    """With the windows' chains given: "said Anna" makes Anna the speaker of the quote before
    it; the quote's "I" (a chain of its own in the windows) joins Anna's chain, whose index the
    quote carries; the second quote has nobody beside it and no dialogue: no speaker."""
    text = "Anna came in . \u201c I am cold , \u201d said Anna .\n\nThe fire was low .\n\n\u201c Wood ! \u201d"
    tok = DocumentTokenizer.from_folder(coref_dir, 64)
    task = CorefTask(tok, "none")
    prepared = task.prepare(0, Document("d", text))
    offsets = prepared.encoded.offsets

    def at(words: str, k: int = 0) -> tuple[int, int]:  # the k-th span of tokens that reads `words`
        a = [m.start() for m in re.finditer(re.escape(words), text)][k]
        return ([t for t, (s, _) in enumerate(offsets) if s == a][0],
                [t for t, (_, e) in enumerate(offsets) if e == a + len(words)][0])
    results = [[[at("Anna"), at("Anna", 1)], [at("I")], [at("The fire")]]]
    row = task.finish(Document("d", text), prepared, results)
    quotes = [(q["start"], q["end"]) for q in row["quotes"]]
    assert [text[a:z] for a, z in quotes] == ["\u201c I am cold , \u201d", "\u201c Wood ! \u201d"]
    anna = row["chains"][row["quotes"][0]["speaker"]]
    assert [m["text"] for m in anna["mentions"]] == ["Anna", "I", "Anna"] and anna["name"] == "Anna"
    assert row["quotes"][1]["speaker"] is None
