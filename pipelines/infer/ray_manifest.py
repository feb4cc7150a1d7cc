"""--engine ray's output folder and its manifest: what makes a Ray job resumable.

Each group's Parquet files are written by Ray; once they are, a line naming the group's row
groups and its files is appended to OUT/_lfcli_manifest.jsonl. `--resume` skips the row
groups listed there and deletes Parquet files that no line lists (a killed group's), so every
id ends up in OUT/ exactly once."""

from __future__ import annotations

import json
import os

from ..errors import InputError, UsageError
from ..io.jobs import check_same_job
from ..progress import note
from ..wording import plural


MANIFEST = "_lfcli_manifest.jsonl"


class Manifest:
    """OUT/_lfcli_manifest.jsonl: a header line (with the job's record, pipelines/io/jobs.py: a
    resumed job must be the same job), then one line per finished group."""

    def __init__(self, folder: str, header: dict):
        self.folder, self.path, self.header = folder, os.path.join(folder, MANIFEST), header
        self.done: set[str] = set()
        self.outputs: set[str] = set()
        self.rows = 0

    @staticmethod
    def check(out: str | None) -> str:
        """The output folder's path, refused (one line) when it cannot be one."""
        if not out or out == "-":
            raise UsageError("--engine ray writes a folder of Parquet files: give -o FOLDER/")
        out = out.rstrip("/" + os.sep) or out
        if out.lower().endswith((".jsonl", ".ndjson", ".json")):
            raise UsageError(f"--engine ray writes a folder of Parquet files: -o {out} names a JSON file; use -o FOLDER/")
        parent = os.path.dirname(out)
        if parent and not os.path.isdir(parent):
            raise InputError(f"output folder {parent} does not exist")
        if os.path.exists(out) and not os.path.isdir(out):
            raise UsageError(f"{out} is a file; --engine ray writes a folder of Parquet files (-o FOLDER/)")
        return out

    @classmethod
    def open(cls, out: str, header: dict, resume: bool, force: bool) -> "Manifest":
        self = cls(cls.check(out), header)
        out = self.folder
        ours = self._our_files()
        if ours and not (resume or force):
            raise UsageError(f"{out} holds output; pass --force to overwrite or --resume to continue")
        if force:
            for name in ours:
                os.remove(os.path.join(out, name))
        elif resume and ours:
            self._load()
        os.makedirs(out, exist_ok=True)
        if not os.path.exists(self.path):
            self._append(header)
        return self

    def _our_files(self) -> list[str]:
        if not os.path.isdir(self.folder):
            return []
        return sorted(n for n in os.listdir(self.folder) if n == MANIFEST or n.endswith(".parquet"))

    def parquet_files(self) -> set[str]:
        return {n for n in self._our_files() if n.endswith(".parquet")}

    def _load(self) -> None:
        if not os.path.exists(self.path):
            raise UsageError(f"{self.folder} has Parquet files but no {MANIFEST}: not an lfcli --engine ray "
                             "output to resume; pass --force to start over")
        with open(self.path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        records = []
        for i, line in enumerate(lines):
            try:
                records.append(json.loads(line))
            except ValueError:
                if i == len(lines) - 1:  # a line torn by a kill: its group is redone
                    break
                raise InputError(f"{self.path}: line {i + 1} is not JSON; cannot resume (pass --force)") from None
        if not records:  # killed while writing the header: no group was done
            records = [self.header]
        check_same_job(self.folder, records[0].get("job"), self.header["job"])
        for record in records[1:]:
            self.done.update(record["units"])
            self.outputs.update(record["outputs"])
            self.rows += record["rows"]
        with open(self.path, "w", encoding="utf-8") as fh:  # drop a torn last line
            fh.write("".join(json.dumps(r) + "\n" for r in records))
        leftovers = self.parquet_files() - self.outputs
        for name in leftovers:  # files of a group that was killed before its manifest line
            os.remove(os.path.join(self.folder, name))
        if leftovers:
            note(f"{self.folder}: removed {plural(len(leftovers), 'file')} of an unfinished group; its rows run again")

    def _append(self, record: dict) -> None:
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def finish_group(self, units: list[str], outputs: list[str], rows: int) -> None:
        self._append({"units": units, "outputs": outputs, "rows": rows})
        self.done.update(units)
        self.outputs.update(outputs)
        self.rows += rows

