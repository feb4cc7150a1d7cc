"""The coreference task: windows of a document, each decoded into chains (decode.py),
then joined into the document's entities (document.DocumentEntities), whose quotes are given
their speakers and whose first person goes with the person it is (speakers.give_quotes). How
windows join, and where no chain goes on (scene and story breaks), is document.py's to say.
"""

from __future__ import annotations

import bisect

import pyarrow as pa
import torch

from ...infer.tasks import Item, Prepared, Task
from ...infer.tokenize import paragraph_ids
from .cleanup import SPEECH_QUOTES, cut_names, in_any, is_word_mention, one_reader, url_spans
from .decode import decode_clusters, words_of
from .document import DocumentEntities
from .speakers import give_quotes
from .taken_names import join_taken_names
from .entities import Mention, MentionReader, Name, Profile, crosses_sentence_end, names_compatible, proper_name
from .scenes import scene_breaks
from .stories import story_breaks
from .switches import on
from ...view.chain_titles import chain_name

Span = tuple[int, int]  # a mention's first and last token (document positions)
# Scene breaks: the tokens looked at on each side of a paragraph start, and the fewest
# different people's names each side must hold (entities.scene_breaks). Chosen on the
# LitBank dev excerpts joined five to a document (8 joins of two excerpts, ~2,600 tokens
# each) and on three whole novels: at 2,000 tokens and one name every join was found, with
# no break inside an excerpt, none in Alice or Pride and Prejudice and 11 in Treasure Island.
# Narrow spans break novels at every change of speaker (400 tokens: 117 in Treasure Island);
# two names each side missed joins next to an excerpt with few people named.
SCENE_WIDTH = 2000  # tokens each side of a paragraph start whose people are compared
SCENE_NAMES = 1  # different names each side must hold
# A story break (stories.py: the words on the two sides are unlike) holds for the whole document
# only where the people change there too, and for good: a scene break at the same paragraph,
# and at most STORY_SHARED of the people's names of the text before it (since the last story
# break) named again after it. Words alone also flag places inside novels (16 in Jane Eyre, 35
# in David Copperfield), where chains must still join by name; one of Jane Eyre's is a scene
# break too, but Bessie and Mrs. Reed come back after it. Two LitBank excerpts may share a
# name ("Emma").
STORY_SHARED = 1


def confirmed_stories(stories: list[int], scenes: list[int], named: list[tuple[int, Name]],
                      shared: int = STORY_SHARED) -> list[int]:
    """The story breaks that are scene breaks, past which at most `shared` of the people's
    names before them come back (`named`: (position, name) of people's names, in order)."""
    scenes = set(scenes)
    confirmed: list[int] = []
    positions = [p for p, _ in named]
    for b in stories:
        if b not in scenes:
            continue
        lo = bisect.bisect_left(positions, confirmed[-1] if confirmed else 0)
        at = bisect.bisect_left(positions, b)
        before = {n.words for _, n in named[lo:at]}
        after = {n.words for _, n in named[at:]}
        if len(before & after) <= shared:
            confirmed.append(b)
    return confirmed


def writer_title(title: str | None, heading: str | None) -> str | None:
    """A headed writer's chain keeps its commonest name where that can be the writer's, else
    takes the heading's ("Lady Belmont", whose one letter's chain a window filled with her
    daughter's "Miss Belmont"): a narrator is known by the name their part is headed with."""
    if heading is None:
        return title
    named, said = proper_name(title) if title else None, proper_name(heading)
    if said is None or (named is not None and names_compatible(named, said)):
        return title
    return " ".join(w.capitalize() if w.isupper() else w for w in heading.split())  # "LADY BELMONT": "Lady Belmont"


class CorefTask(Task):
    """Coreference chains. Rows: id, chains: a list of the document's entities, each
    {name, mentions}: `name` its representative name (DocumentEntities.name_of) and
    `mentions` its {start, end, text} character spans (end exclusive) in text order; the
    chains biggest first, ties by first mention. `singletons`: also report one-mention entities (spans the model scores as
    mentions, linked to nothing), as LitBank annotates them.

    A document that fits the model's positions is one window; a longer one is cut into
    windows overlapping by a quarter, each decoded on its own (`decode_clusters`), then
    joined into entities (DocumentEntities, in `finish`)."""

    name = "corefs"

    def __init__(self, tokenizer, policy, singletons: bool = False):
        super().__init__(tokenizer, policy)
        self.singletons = singletons
        # The constraints (pronoun agreement, names, scene breaks) are the model's to switch off
        # (its config's coref settings), for decoding a window and joining windows alike: read
        # off the model by forward, which runs before finish (here and in training's predict_rows).
        self.rules = True

    def prepare(self, doc_index, doc):
        if not doc.text.strip():  # a blank Document given to the API directly: no windows, no chains
            return Prepared(self.tok.encode(""), [], {"mentions": MentionReader("", [], {})})
        prepared = super().prepare(doc_index, doc)
        starts, ends, pronouns = words_of(self.tok.tokenizer, doc.text, len(prepared.encoded.ids),
                                          self.tok.parts(doc.text))
        paragraphs = paragraph_ids(doc.text, prepared.encoded.offsets)
        for item in prepared.items:
            s0, s1 = item.window.span
            item.extra["word_starts"], item.extra["word_ends"] = starts[s0:s1], ends[s0:s1]
            item.extra["paragraphs"] = paragraphs[s0:s1]
        prepared.extra["mentions"] = MentionReader(doc.text, prepared.encoded.offsets, pronouns)
        starts = [t for t in range(1, len(paragraphs)) if paragraphs[t] != paragraphs[t - 1]]
        prepared.extra["paragraph_starts"] = starts
        stories = self.story_breaks(doc.text, prepared.encoded.offsets, starts)
        prepared.extra["story_breaks"] = stories
        for item in prepared.items:
            item.extra["mentions"] = prepared.extra["mentions"]  # one reader per document, shared
            s0, s1 = item.window.span
            item.extra["story_breaks"] = [b for b in stories if s0 < b < s1]
        return prepared

    @staticmethod
    def story_breaks(text: str, offsets, starts: list[int]) -> list[int]:
        """The paragraph starts (tokens) where one story ends and another begins (stories.py)."""
        at_char = {offsets[t][0]: t for t in starts}
        return [at_char[c] for c in story_breaks(text, sorted(at_char))]

    def mention_masks(self, items: list[Item], n: int) -> dict:
        """mention_mask, start_mask, end_mask (B, n) bool and segment_ids (B, n) for a batch
        of windows: a mention lies within the window's content tokens, starts / ends on word
        boundaries, and does not cross a paragraph break (its start and end tokens share a
        segment id)."""
        masks = {k: torch.zeros((len(items), n), dtype=torch.bool) for k in ("mention_mask", "start_mask", "end_mask")}
        masks["segment_ids"] = torch.zeros((len(items), n), dtype=torch.long)
        for b, item in enumerate(items):
            c0 = item.window.content_start
            c1 = c0 + item.window.span[1] - item.window.span[0]
            masks["mention_mask"][b, c0:c1] = True
            if "word_starts" in item.extra:
                masks["start_mask"][b, c0:c1] = torch.tensor(item.extra["word_starts"], dtype=torch.bool)
                masks["end_mask"][b, c0:c1] = torch.tensor(item.extra["word_ends"], dtype=torch.bool)
            else:
                masks["start_mask"][b, c0:c1] = masks["end_mask"][b, c0:c1] = True
            if "paragraphs" in item.extra:
                masks["segment_ids"][b, c0:c1] = torch.tensor(item.extra["paragraphs"], dtype=torch.long)
        return masks

    def forward(self, model, batch, items):
        device = batch["input_ids"].device
        masks = {k: v.to(device) for k, v in self.mention_masks(items, batch["input_ids"].shape[1]).items()}
        spans, valid, pair, mention_scores = model(**batch, **masks)
        spans, valid, pair, mention_scores = spans.cpu(), valid.cpu(), pair.float().cpu(), mention_scores.float().cpu()
        thresholds = getattr(model, "mention_threshold", 0.0), getattr(model, "link_threshold", 0.0)
        self.rules = bool(getattr(model, "pronoun_agreement", True))
        out = []
        for b, item in enumerate(items):
            shift = item.window.span[0] - item.window.content_start  # window position -> document token
            reader = item.extra.get("mentions") if self.rules else None
            profiles = _Profiles(reader, spans[b].tolist(), shift) if reader else None
            clusters = decode_clusters(spans[b], valid[b], pair[b], mention_scores[b], *thresholds, profiles=profiles)
            breaks = _window_breaks(reader, clusters, item, shift) if reader else []
            if breaks:  # two casts in one window: decode again, each mention's antecedent in its own scene
                profiles = _Profiles(reader, spans[b].tolist(), shift, breaks)
                clusters = decode_clusters(spans[b], valid[b], pair[b], mention_scores[b], *thresholds, profiles=profiles)
            out.append([[(s + shift, e + shift) for s, e in c] for c in clusters])
        return out

    def finish(self, doc, prepared, results):
        reader = prepared.extra.get("mentions") or MentionReader(doc.text, prepared.encoded.offsets, {})
        named = self.people_named(reader, prepared, results) if self.rules else []
        scenes = scene_breaks(named, prepared.extra.get("paragraph_starts", []), width=SCENE_WIDTH, least=SCENE_NAMES)
        stories = confirmed_stories(prepared.extra.get("story_breaks", []), scenes, named) if self.rules else []
        breaks = sorted({*scenes, *stories})
        entities = DocumentEntities(reader, rules=self.rules, breaks=breaks, stories=stories)
        for item, clusters in zip(prepared.items, results):
            if self.rules and on("sentence_ends"):  # no mention runs over a sentence end ("him. I would reconcile him")
                clusters = [[m for m in c if not crosses_sentence_end(reader.text_of(*m))] for c in clusters]
            entities.add_window(clusters, item.owned)
        offsets = prepared.encoded.offsets
        groups = entities.link_names()
        if self.rules and on("addressed_reader") and len(reader.quotes) < SPEECH_QUOTES:  # no speech: one "you"
            groups = one_reader(groups, lambda m: reader.text_of(*m))
        writers: dict[int, str] = {}  # a headed writer's group -> the heading's name
        speakers = give_quotes(reader, groups, breaks, stories, writers) if self.rules else [None] * len(reader.quotes)
        if self.rules and on("taken_names"):  # "My name is Umbopa": now that each quote's "I" is its speaker's
            speakers = join_taken_names(reader, groups, speakers, entities.profile)
        speaking = set(speakers)
        kept = []  # (chain, its group)
        urls = url_spans(doc.text) if self.rules and on("mention_words") else []
        for k, mentions in enumerate(groups):
            if self.rules:
                mentions = real_mentions(doc.text, offsets, mentions, urls)
            spans = sorted({(offsets[s][0], offsets[e][1]) for s, e in mentions})
            if not spans or (len(spans) < 2 and not self.singletons and k not in speaking):
                continue  # a one-mention entity is kept when asked for, or when it speaks a quote
            kept.append(({"name": writer_title(entities.name_of(mentions), writers.get(k)),
                          "mentions": [{"start": a, "end": z, "text": doc.text[a:z]} for a, z in spans]}, k))
        # biggest first, as a reader looks for the cast; ties in text order, so rows are deterministic
        kept.sort(key=lambda ck: (-len(ck[0]["mentions"]), ck[0]["mentions"][0]["start"], ck[0]["mentions"][0]["end"]))
        chain_of = {k: i for i, (_, k) in enumerate(kept)}
        quotes = [{"start": a, "end": z, "speaker": chain_of.get(who)} for (a, z), who in zip(reader.quotes, speakers)]
        chains = [c for c, _ in kept]
        for chain in chains:  # what a reader lists it by: its name, else what its mentions say ("I (narrator)")
            chain["title"] = chain_name(chain, quotes)
        return {"id": doc.id, "chains": chains, "quotes": quotes}

    @staticmethod
    def people_named(reader: MentionReader, prepared, results) -> list[tuple[int, Name]]:
        """(position, name) of the people's names among the mentions each window keeps, in
        order: what scene breaks (entities.scene_breaks) and story breaks are read from."""
        named = {}
        for item, clusters in zip(prepared.items, results):
            named.update(named_people(reader, clusters, item.owned))
        return sorted(named.items())

    def schema(self):
        # page: a PDF's page of `start` (null for other inputs)
        mention = pa.struct([("start", pa.int64()), ("end", pa.int64()), ("text", pa.string()), ("page", pa.int64())])
        chain = pa.struct([("name", pa.string()), ("mentions", pa.list_(mention)), ("title", pa.string())])
        quote = pa.struct([("start", pa.int64()), ("end", pa.int64()), ("speaker", pa.int64()), ("page", pa.int64())])
        return pa.schema([("id", pa.string()), ("chains", pa.list_(chain)), ("quotes", pa.list_(quote)),
                          ("error", pa.string())])


def named_people(reader: MentionReader, clusters: list[list[Span]], owned=(0, float("inf")), shift: int = 0) -> dict:
    """position -> name of the named mentions in `owned` [lo, hi) (document positions) of the
    chains that are people: those with a gender or a personal "he", "she", "I" or "you" (so
    "England" and "Paris", which two stories may share, never hold a cast together).
    `shift`: from the clusters' positions to the document's."""
    lo, hi = owned
    named = {}
    for cluster in clusters:
        mentions = [(s + shift, reader.mention(s + shift, e + shift)) for s, e in cluster]
        if any(m.is_person for _, m in mentions):
            named.update((s, m.name) for s, m in mentions if m.name is not None and lo <= s < hi)
    return named


def _window_breaks(reader: MentionReader, clusters: list[list[Span]], item: Item, shift: int) -> list[int]:
    """The scene breaks inside one window (document positions), read from the people's names
    among all its decoded mentions (window positions, `shift` to the document's)."""
    paragraphs = item.extra.get("paragraphs")
    if not paragraphs:
        return []
    s0 = item.window.span[0]
    starts = [s0 + k for k in range(1, len(paragraphs)) if paragraphs[k] != paragraphs[k - 1]]
    scenes = scene_breaks(sorted(named_people(reader, clusters, shift=shift).items()), starts, width=SCENE_WIDTH,
                          least=SCENE_NAMES)
    return sorted({*scenes, *item.extra.get("story_breaks", ())})


class _Profiles:
    """The profiles of a window's kept spans (window positions), read only for the spans the
    decoder asks about: those it keeps as mentions. With scene `breaks` (document positions)
    every span's profile also names its scene, so no chain crosses a break."""

    def __init__(self, reader: MentionReader, spans: list[list[int]], shift: int, breaks: list[int] = ()):
        self.reader, self.spans, self.shift, self.breaks = reader, spans, shift, breaks
        self._read: dict[int, Profile | None] = {}

    def __getitem__(self, k: int) -> Profile | None:
        if k not in self._read:
            s, e = self.spans[k]
            mention: Mention = self.reader.mention(s + self.shift, e + self.shift)
            profile = Profile.of(mention) if mention.says_anything or self.breaks else None
            if self.breaks:
                profile.scenes.add(bisect.bisect_right(self.breaks, s + self.shift))
            self._read[k] = profile
        return self._read[k]


def real_mentions(text: str, offsets, mentions: list[Span], urls: list[tuple[int, int]]) -> list[Span]:
    """A chain's mentions less those that are none (cleanup.py: mention_words, nested_mentions)."""
    if on("mention_words"):
        mentions = [(s, e) for s, e in mentions
                    if is_word_mention(text[offsets[s][0]:offsets[e][1]])
                    and not (urls and in_any((offsets[s][0], offsets[e][1]), urls))]
    if on("nested_mentions") and len(mentions) > 1:
        keep = set(cut_names(text, [(offsets[s][0], offsets[e][1]) for s, e in mentions]))
        mentions = [(s, e) for s, e in mentions if (offsets[s][0], offsets[e][1]) in keep]
    return mentions


def runner(tokenizer, policy, config, options: dict) -> CorefTask:
    return CorefTask(tokenizer, policy, singletons=options.get("singletons", False))
