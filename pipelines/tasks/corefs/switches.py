"""Switches for the name and narrator passes of whole-document coreference.

Every pass is on. `LFCLI_COREF_OFF=pass,pass` turns the named ones off, for a before/after
figure of one pass on the same build (benchmarks/coref_books.py and coref_narrators_many.py
pass the environment to the lfcli they run):

  headed_sections   narrators by headed section (narrators.py, speakers.by_writer)
  pet_names         a diminutive joins its full given name (pet_names.py)
  sentence_ends     no mention runs over a sentence end (entities.crosses_sentence_end)
  addressed_titles  "my lady", "her ladyship" join the book's one Lady (title_nouns.py)
"""

from __future__ import annotations

import os

PASSES = ("headed_sections", "pet_names", "sentence_ends", "addressed_titles")
ENV_VAR = "LFCLI_COREF_OFF"


def on(name: str) -> bool:
    """Whether the pass `name` (one of PASSES) runs."""
    assert name in PASSES, name
    return name not in {p.strip() for p in os.environ.get(ENV_VAR, "").split(",")}
