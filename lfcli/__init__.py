"""lfcli: Longformer over long documents from the shell and from Python.

Importing lfcli is cheap: torch loads when a task runs. See lfcli.api for the functions.
"""

__version__ = "0.1.0"

from .api import Pipeline, classify, corefs, embed, qa, read_documents  # noqa: E402


def __getattr__(name):
    if name == "Document":
        from lfcli.pipelines.document import Document

        return Document
    raise AttributeError(name)


__all__ = ["Document", "Pipeline", "classify", "corefs", "embed", "qa", "read_documents", "__version__"]
