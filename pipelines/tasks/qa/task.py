"""qa's inference: a question over a document's windows, and the document's answers.

Rows: id, question, answer, start, end, score, and `answers` (the top k) when top_k > 1;
`question_id` with several questions (questions.py), `page` for a PDF. Over a document of
more windows than retrieval reads, a question reads only the windows around its best passages
(retrieve.py; read="all": every window).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import replace

import pyarrow as pa

from ...errors import InputError
from ...io.outputs import KEY_SEPARATOR
from ...io.readers import Document
from .answers import (DEFAULT_TEMPERATURE, QA_ANSWER_POOL, QA_CANDIDATES, QACalibration, QACandidates, answer_text,
                      asks_for_heading, best_spans, distinct_answers, qa_calibration, span_rules)
from ...infer.tasks import Task, document_windows
from .retrieve import Retriever, encoder_of, reader_fingerprint

KEPT_ENCODINGS = 4  # texts whose tokens and span rules are kept for their next question (many questions of one book)


class QATask(Task):
    """Extractive answers. Rows: id, question, answer, start, end, score (character offsets
    into the document, end exclusive), and `answers` (the top-k) when top_k > 1.

    Each window proposes spans by their margin over its no-answer score (`best_spans`), so
    windows of a long document compete on one scale; answers start and end on words, keep
    quotes and brackets balanced and are never in a heading unless the question asks for one
    (`span_rules`). `score` is the model's calibrated probability that the answer is right
    (see QACandidates and the notes above it); the answers are distinct, best score first
    (`distinct_answers`)."""

    name = "qa"

    def __init__(self, tokenizer, policy, question: str | None = None, top_k: int = 1, max_answer_tokens: int = 30,
                 temperature: float = DEFAULT_TEMPERATURE, questions: tuple[tuple[str, str], ...] | None = None,
                 read: str = "all", cache: str | None = None, retriever: str | None = None):
        super().__init__(tokenizer, policy)
        self.question, self.top_k, self.max_answer_tokens = question, top_k, max_answer_tokens
        self.questions, self.read, self.cache, self.retriever_model = questions, read, cache, retriever
        if questions:
            self.row_unit = "question"  # a row per document and question: progress counts questions
        self.calibration = QACalibration(temperature)
        self.retriever: Retriever | None = None  # set up with the model when read == "retrieve"
        self.encodings: OrderedDict[str, dict] = OrderedDict()  # text -> its tokens and span rules (`known`)

    @property
    def temperature(self) -> float:
        """The scores' temperature on one window (the calibration's; its window terms apart)."""
        return self.calibration.temperature

    @temperature.setter
    def temperature(self, t: float) -> None:
        self.calibration = replace(self.calibration, temperature=t)

    def setup(self, model, run_batch):
        self.calibration = qa_calibration(model.config)
        if self.read == "retrieve":
            weights = next(model.parameters())
            self.retriever = Retriever(self.retriever_model or encoder_of(model.config), self.tok, device=weights.device,
                                       dtype=weights.dtype, cache_dir=self.cache,
                                       reader_fingerprint=reader_fingerprint(self.tok))

    def begin(self, documents, run_batch):
        """With several questions, each document once per question, in order (module
        questions.py): the same text object, so its tokens and passages are found once."""
        if not self.questions:
            return documents
        return (Document(doc.id, doc.text, doc.error, {**doc.fields, "question": q, "question_id": qid}, doc.pages)
                for doc in documents for qid, q in self.questions)

    def key(self, doc) -> str:
        qid = doc.fields.get("question_id")
        return doc.id if qid is None else f"{doc.id}{KEY_SEPARATOR}{qid}"

    def error_row(self, doc, message: str) -> dict:
        row = super().error_row(doc, message)
        if "question_id" in doc.fields:
            row.update(question_id=doc.fields["question_id"], question=doc.fields.get("question"))
        return row

    def known(self, text: str) -> dict:
        """What a text's questions share, kept for the next few questions of the same text:
        its tokens ("encoded") and its span rules, with and without headings ("rules"); a
        book's span rules take seconds to find, its tokens about one."""
        if text in self.encodings:
            self.encodings.move_to_end(text)
            return self.encodings[text]
        self.encodings[text] = {"encoded": self.tok.encode(text), "rules": {}}
        while len(self.encodings) > KEPT_ENCODINGS:
            self.encodings.popitem(last=False)
        return self.encodings[text]

    def encode(self, text: str):
        """The text's tokens (kept: `known`)."""
        return self.known(text)["encoded"]

    def rules_of(self, text: str, headings: bool):
        """The text's span rules (answers.span_rules; kept: `known`)."""
        kept = self.known(text)
        if headings not in kept["rules"]:
            kept["rules"][headings] = span_rules(text, kept["encoded"].offsets, headings=headings)
        return kept["rules"][headings]

    def prepare(self, doc_index, doc):
        question = self.question or doc.fields.get("question")
        if not isinstance(question, str) or not question.strip():
            raise InputError("no question: pass --question or give each record a 'question' field")
        q_ids = self.tok.encode(question).ids
        limit = self.tok.max_length // 2
        if len(q_ids) > limit:
            raise InputError(f"the question has {len(q_ids)} tokens; at most {limit} fit with the document: shorten it")
        whole = []  # the whole read's windows, however many are read
        ranks: dict = {}  # window read -> its retrieval rank

        def choose(encoded, spans, size):  # with a retriever: the windows this question reads
            whole.append(len(spans))
            ranks.update(self.retriever.ranked_windows(doc.text, encoded, question, spans))
            return sorted(ranks)
        prepared = document_windows(self.tok, doc_index, doc.text, self.policy, self.overlap, q_ids,
                                    encoded=self.encode(doc.text), choose=None if self.retriever is None else choose)
        if whole:
            prepared.extra["windows"] = whole[0]
        prepared.extra["question"] = question
        prepared.extra["text"] = doc.text
        rules = self.rules_of(doc.text, asks_for_heading(question))
        for item in prepared.items:
            item.extra["span_rules"] = rules.window(*item.window.span)
            item.extra["rank"] = ranks.get(item.window.span)
        return prepared

    def forward(self, model, batch, items):
        start_logits, end_logits = model(**batch)
        start_logits, end_logits = start_logits.float().cpu(), end_logits.float().cpu()
        out = []
        for b, item in enumerate(items):
            c0 = item.window.content_start
            s0, s1 = item.window.span
            null = float(start_logits[b, 0]) + float(end_logits[b, 0])
            spans = best_spans(start_logits[b, c0: c0 + s1 - s0], end_logits[b, c0: c0 + s1 - s0], null,
                               self.max_answer_tokens, QA_ANSWER_POOL, item.extra.get("span_rules"))
            # a retrieved window's candidates count less the lower its passage ranked (rank_weight)
            prior = self.calibration.rank_prior(item.extra.get("rank"))
            out.append([(margin + prior, s0 + i, s0 + j) for margin, i, j in spans])
        return out

    @staticmethod
    def candidates(results, prepared=None) -> QACandidates:
        """The softmax's candidates: each window's QA_CANDIDATES best spans. Their window count
        is the document's (its whole read's, `prepared.extra["windows"]`), not the windows read:
        retrieval reads a few of them for the whole document, whose answer the scores weigh."""
        best: dict[tuple[int, int], float] = {}
        for window in results:
            for margin, ts, te in window[:QA_CANDIDATES]:
                if margin > best.get((ts, te), -math.inf):
                    best[(ts, te)] = margin
        spans = sorted(best, key=lambda s: -best[s])
        windows = (prepared.extra.get("windows") if prepared is not None else None) or len(results)
        return QACandidates(spans, [best[s] for s in spans], windows)

    def scored(self, prepared, results) -> list[tuple[tuple[int, int, float], float]]:
        """The top_k distinct answers ((first token, last token, margin), score), best score
        first, among the spans all windows propose (`distinct_answers`)."""
        offsets, text = prepared.encoded.offsets, prepared.extra["text"]
        spans = [(ts, te, margin) for window in results for margin, ts, te in window]
        return distinct_answers(spans, self.candidates(results, prepared), self.calibration,
                                lambda s: text[offsets[s[0]][0]:offsets[s[1]][1]], self.top_k)

    def ranked(self, prepared, results) -> list[tuple[int, int, float]]:
        """The top_k distinct answers (first token, last token, margin), best score first."""
        return [span for span, _ in self.scored(prepared, results)]

    def answers(self, doc, prepared, results) -> list[dict]:
        """The top_k distinct answers, best score first, each with its score."""
        offsets = prepared.encoded.offsets
        return [{"answer": answer_text(doc.text, offsets[ts][0], offsets[te][1]), "start": offsets[ts][0],
                 "end": offsets[te][1], "score": score} for (ts, te, _), score in self.scored(prepared, results)]

    def finish(self, doc, prepared, results):
        answers = self.answers(doc, prepared, results)
        row = {"id": doc.id, "question": prepared.extra["question"], **answers[0]}
        if self.questions:
            row = {"id": doc.id, "question_id": doc.fields.get("question_id"), **row}
        if self.top_k > 1:
            row["answers"] = answers
        return row

    def schema(self):
        fields = [
            ("id", pa.string()), ("question", pa.string()), ("answer", pa.string()),
            ("start", pa.int64()), ("end", pa.int64()), ("score", pa.float64()),
            ("page", pa.int64()),  # a PDF's page of `start` (null for other inputs)
        ]
        if self.top_k > 1:
            fields.append(("answers", pa.list_(pa.struct(fields[2:]))))
        if self.questions:
            fields.insert(1, ("question_id", pa.string()))
        return pa.schema([*fields, ("error", pa.string())])


def runner(tokenizer, policy, config, options: dict) -> QATask:
    return QATask(tokenizer, policy, question=options.get("question"), top_k=options.get("top_k", 1),
                  questions=options.get("questions"), read=options.get("read") or "retrieve", cache=options.get("cache"),
                  retriever=options.get("retriever"))
