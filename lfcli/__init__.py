"""lfcli: Longformer over long documents from the shell and from Python."""

__version__ = "0.1.0"
