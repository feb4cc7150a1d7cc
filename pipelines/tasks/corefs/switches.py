"""Switches for the name and narrator passes of whole-document coreference.

Every pass is on. `LFCLI_COREF_OFF=pass,pass` turns the named ones off, for a before/after
figure of one pass on the same build (benchmarks/coref_books.py and coref_narrators_many.py
pass the environment to the lfcli they run):

  stray_names, narrated_kin, same_name, short_names, full_names, married_names, pet_names, addressed_titles, aliases,
  book_evidence
                    the name passes, in the order they run (name_passes.py)
  headed_sections   narrators by headed section (narrators.py, speakers.by_writer)
  signed_letters    a letter copied into the prose is its signer's part (letters.py)
  narrator_through_scenes  a narrator goes on through the scenes that say "I" seldom, to
                    the next story break (speakers._narrations); off: a scene of 2,000 tokens
                    told otherwise ends the narrator
  narrator_voices   a narrator called by a man's names in some chapters and a woman's in
                    others is two narrators (voices.py)
  narrator_names    every name others call the narrator by joins the narrator
                    (narrator_names._narrator_other_names), not only the most frequent
  narrator_vocatives  a narrator no chain names takes the name others say to them in a
                    two-person exchange ("Oh, don't croak, Van!"), wherever the windows put
                    those names (narrator_names.said_to_narrator)
  narrator_not_she  a "he" or "she" the windows put in the chain of the scene's first-person
                    narrator never says who speaks a quote (speakers._not_the_narrator)
  sentence_ends     no mention runs over a sentence end (entities.crosses_sentence_end)
  taken_names       a name a speaker or narrator says is theirs joins their chain ("My name
                    is Umbopa", "I shall be Lady Lowborough"; taken_names.py)
  mention_words, nested_mentions, defined_terms, addressed_reader
                    no mention without a word, no mention nested in another of its chain, no
                    defined term in quotes read as speech, one "you" where nobody speaks
                    (cleanup.py: non-fiction's noise)
  rare_names        a name said once or twice never titles a chain its noun phrase names five
                    times as often (document.name_of: a licence's "GNU" beside "this License")
"""

from __future__ import annotations

import os

NAME_PASSES = ("stray_names", "narrated_kin", "same_name", "short_names", "full_names", "married_names", "pet_names", "addressed_titles", "aliases", "book_evidence")
PASSES = NAME_PASSES + ("headed_sections", "sentence_ends", "narrator_names", "narrator_vocatives", "narrator_through_scenes", "narrator_voices", "narrator_not_she", "taken_names", "signed_letters",
                        "mention_words", "nested_mentions", "defined_terms", "addressed_reader", "rare_names")
ENV_VAR = "LFCLI_COREF_OFF"


def on(name: str) -> bool:
    """Whether the pass `name` (one of PASSES) runs."""
    assert name in PASSES, name
    return name not in {p.strip() for p in os.environ.get(ENV_VAR, "").split(",")}
