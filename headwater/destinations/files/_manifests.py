"""Manifests: what makes a checkpoint's files visible, all at once or not at all.

A stream's folder holds its data files and two folders of small JSON documents
(``docs/destinations/files.md`` is the reader's description)::

    <path>/<stream>/part-<uuid>-c000.hw-<run id>.jsonl.gz     data files
    <path>/<stream>/_manifests/00000000000000000007.json       the log
    <path>/<stream>/_staging/<run id>/0000000004.json          an overwrite's staging

The log is the table.  Manifest ``N`` names the files (path, rows, bytes) one
commit added, and its marker (the ``CommitMarker``'s app id, version, run,
checkpoint and partition states).  It is created under its number only if that
number is free (``_table_files._create.create_text``: ``os.link`` locally, a put with
``If-None-Match: *`` on S3 and Azure), so of two committers of one number one
wins and the other takes the next, and a committer looks its marker up in the
whole log before it takes a number: a checkpoint is listed once.  A reader that
lists ``_manifests`` sees a manifest whole or not at all, and with it every file
of the commit; files no manifest names (a killed task's, an unpublished
staging's) are never part of the table.

**The reading rule.**  Take the manifests in order of their number; the last one
with ``"replace": true`` (an overwrite's publish, or a one-checkpoint overwrite)
says "from now on the table is exactly my files"; the table is its files plus
those of every manifest after it (all manifests' files when none replaces).

Why numbered, not named after the marker: the reading rule needs an order
(which files came after the last overwrite), and a number a writer can only
take when it is free gives one, as Delta's ``_delta_log`` does, with no clock.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

#: The folder of the log, inside a stream's folder.
MANIFESTS = "_manifests"
#: The folder of overwrite runs' staged checkpoints, one folder per run.
STAGING = "_staging"
#: The document's first key and its version: what a reader checks before trusting it.
FORMAT_KEY = "headwater_files_manifest"
FORMAT_VERSION = 1
_NAME = re.compile(r"^(\d{20})\.json$")
#: Numbers tried by one commit before it gives up (each lost race means another commit
#: landed meanwhile: with a few lanes per stream, a handful at most).
MAX_TRIES = 1000


def manifest_name(sequence: int) -> str:
    """The log entry of number ``sequence``, relative to the stream's folder."""
    return f"{MANIFESTS}/{sequence:020d}.json"


def staged_name(run_id: str, checkpoint: int) -> str:
    """Where run ``run_id`` stages checkpoint ``checkpoint`` of an overwrite."""
    return f"{STAGING}/{run_id}/{checkpoint:010d}.json"


def sequence_of(name: str) -> int | None:
    """The number of a log entry's file name, or None for anything else (temporary files)."""
    found = _NAME.match(name)
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class ListedFile:
    """One data file a manifest names, relative to the stream's folder."""

    path: str
    rows: int
    bytes: int


@dataclass(frozen=True)
class Manifest:
    """One commit (or one staged checkpoint): its files, its marker, how to read them."""

    files: tuple[ListedFile, ...]
    #: The commit's marker: app_id, version, run_id, stream, and checkpoint (a
    #: checkpoint's commit) or published (the checkpoints an overwrite published).
    marker: Mapping[str, Any]
    #: ``CommitMarker.tag`` (or ``PublishMarker.tag``) with the commit's figures.
    tag: str
    format: str
    compression: str
    schema: pa.Schema
    #: Whether the table is exactly this manifest's files from now on (an overwrite).
    replace: bool = False
    rejected: int = 0
    #: Its number in the log (None: a staged checkpoint, in no log yet).
    sequence: int | None = None
    committed_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(
        timespec="milliseconds").replace("+00:00", "Z"))

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    def is_of(self, app_id: str, version: int) -> bool:
        """Whether this is the commit of ``app_id``/``version``."""
        return self.marker.get("app_id") == app_id and self.marker.get("version") == version

    def to_json(self) -> str:
        document = {
            FORMAT_KEY: FORMAT_VERSION,
            "sequence": self.sequence,
            "replace": self.replace,
            "format": self.format,
            "compression": self.compression,
            "files": [{"path": f.path, "rows": f.rows, "bytes": f.bytes} for f in self.files],
            "rows": self.rows,
            "rejected": self.rejected,
            "bytes": self.bytes,
            "marker": dict(self.marker),
            "tag": self.tag,
            "committed_at": self.committed_at,
            "columns": [{"name": f.name, "type": str(f.type)} for f in self.schema],
            "arrow_schema": encode_schema(self.schema),
        }
        return json.dumps(document, indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        document = json.loads(text)
        if not isinstance(document, dict) or document.get(FORMAT_KEY) != FORMAT_VERSION:
            raise ValueError(f"not a version-{FORMAT_VERSION} files manifest")
        return cls(files=tuple(ListedFile(str(f["path"]), int(f["rows"]), int(f["bytes"]))
                               for f in document["files"]),
                   marker=dict(document["marker"]), tag=str(document["tag"]),
                   format=str(document["format"]), compression=str(document["compression"]),
                   schema=decode_schema(str(document["arrow_schema"])),
                   replace=bool(document["replace"]), rejected=int(document.get("rejected", 0)),
                   sequence=document.get("sequence"),
                   committed_at=str(document.get("committed_at", "")))


def encode_schema(schema: pa.Schema) -> str:
    """The Arrow schema as base64 of its IPC form (``pa.ipc.read_schema`` reads it back)."""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def decode_schema(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def current(manifests: Sequence[Manifest]) -> list[Manifest]:
    """The reading rule: of ``manifests`` in log order, the last that replaces and every
    one after it (all of them when none replaces)."""
    start = 0
    for position, manifest in enumerate(manifests):
        if manifest.replace:
            start = position
    return list(manifests[start:])


def reads_as(older: Manifest, newer: Manifest) -> bool:
    """Whether ``older``'s files read right as ``newer``'s: the same format and compression,
    and each of ``older``'s columns in ``newer`` with its type.  ``newer`` may have more
    (a column the stream gained), which Parquet and JSON Lines files without it read as
    null; CSV needs the same columns."""
    if (older.format, older.compression) != (newer.format, newer.compression):
        return False
    if older.format == "csv":
        return older.schema.equals(newer.schema)
    return all(newer.schema.get_field_index(f.name) >= 0
               and newer.schema.field(f.name).type.equals(f.type) for f in older.schema)


def without_checkpoints(manifests: Sequence[Manifest], run_id: str,
                        checkpoints: set[int]) -> tuple[Manifest, int] | None:
    """A manifest replacing the table (``manifests``, the whole log in order) with its
    files but those the commits of ``run_id``'s ``checkpoints`` listed, and the rows it
    leaves out; None when no such commit is in the table.

    Files are read with their manifest's schema and format, so each kept one must read
    right with the newest kept manifest's (:func:`reads_as`); else (a column's type or the
    format changed since) they cannot be left out without rewriting the others: refused
    with a ValueError."""
    shown = current(manifests)

    def dropped(manifest: Manifest) -> bool:
        marker = manifest.marker
        return marker.get("run_id") == run_id and marker.get("checkpoint") in checkpoints

    gone = [m for m in shown if dropped(m)]
    if not gone:
        return None
    kept = [m for m in shown if not dropped(m)]
    model = kept[-1] if kept else shown[-1]
    if not all(reads_as(m, model) for m in kept):
        raise ValueError("the table's files have more than one schema or format, so files "
                         "cannot be left out without rewriting the others")
    # Keyed by the log it was computed from: valid only as the entry right after it.
    marker = {"app_id": f"remove/{run_id}", "version": len(manifests), "run_id": run_id,
              "stream": model.marker.get("stream"), "removed_checkpoints": sorted(checkpoints)}
    manifest = Manifest(files=tuple(f for m in kept for f in m.files), marker=marker,
                        tag=json.dumps({"headwater": marker}, sort_keys=True),
                        format=model.format, compression=model.compression,
                        schema=model.schema, replace=True,
                        rejected=sum(m.rejected for m in kept))
    return manifest, sum(m.rows for m in gone)


class Log:
    """A stream's log of manifests, read through ``read`` and ``names`` (the folder's
    files), appended through ``create`` (a create that refuses a taken name).

    Manifests never change once written, so each is read once per process.
    """

    def __init__(self, names: Callable[[], list[str]], read: Callable[[str], str | None],
                 create: Callable[[str, str], bool]) -> None:
        self._names, self._read, self._create = names, read, create
        self._cache: dict[int, Manifest] = {}

    def sequences(self) -> list[int]:
        """The numbers taken, in order."""
        return sorted(n for n in map(sequence_of, self._names()) if n is not None)

    def manifests(self) -> list[Manifest]:
        """Every manifest, in log order."""
        return [self.get(n) for n in self.sequences()]

    def get(self, sequence: int) -> Manifest:
        found = self._cache.get(sequence)
        if found is None:
            text = self._read(manifest_name(sequence))
            if text is None:
                raise FileNotFoundError(f"manifest {manifest_name(sequence)} vanished")
            found = self._cache[sequence] = Manifest.from_json(text)
        return found

    def find(self, app_id: str, version: int) -> Manifest | None:
        """The commit of ``app_id``/``version``, newest first, if the log holds it."""
        for sequence in reversed(self.sequences()):
            manifest = self.get(sequence)
            if manifest.is_of(app_id, version):
                return manifest
        return None

    def append(self, manifest: Manifest) -> tuple[Manifest, bool]:
        """Add ``manifest`` under the next free number, unless its marker is in the log:
        ``(the logged manifest, True)`` when this call logged it, ``(the earlier one,
        False)`` when the log held the marker already."""
        app_id, version = manifest.marker["app_id"], manifest.marker["version"]
        earlier: list[Manifest] = []

        def unless_logged(log: list[Manifest]) -> Manifest | None:
            for logged in reversed(log):
                if logged.is_of(app_id, version):
                    earlier.append(logged)
                    return None
            return manifest

        numbered = self.append_from(unless_logged)
        return (earlier[-1], False) if numbered is None else (numbered, True)

    def append_from(self, compute: Callable[[list[Manifest]], Manifest | None]
                    ) -> Manifest | None:
        """Add the manifest ``compute`` makes of the log as it stands (every manifest, in
        order) under the next free number, and return it; None when ``compute`` gives
        none.  When the number was taken meanwhile (another lane, another writer, or
        this put's own first try whose answer was lost), the log is read and the
        manifest computed again: one computed from an older log is never added."""
        for _ in range(MAX_TRIES):
            taken = self.sequences()
            manifest = compute([self.get(n) for n in taken])
            if manifest is None:
                return None
            sequence = (taken[-1] + 1) if taken else 0
            numbered = replace(manifest, sequence=sequence)
            if self._create(manifest_name(sequence), numbered.to_json()):
                self._cache[sequence] = numbered
                return numbered
        raise RuntimeError(f"no free manifest number after {MAX_TRIES} tries")


__all__ = ["MANIFESTS", "STAGING", "ListedFile", "Log", "Manifest", "current",
           "decode_schema", "encode_schema", "manifest_name", "reads_as", "sequence_of",
           "staged_name", "without_checkpoints"]
