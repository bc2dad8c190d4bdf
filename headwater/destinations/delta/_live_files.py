"""The ``add`` actions live at one version of a Delta table, as its log wrote them.

Why a replay of our own: Headwater's history commit (``_history_commit.py``) must
name, in its ``remove`` actions, each file it puts a deletion vector on exactly
as the log holds it: the path *and* its current vector (the protocol identifies
a logical file by both; a ``remove`` without the vector would leave the old
``add`` live beside the new one, and every row of that file would be read
twice), and it carries the file's statistics and tags over.  delta-rs 1.6.6
replays the log but does not expose an ``add``'s deletion vector or its raw
statistics (``get_add_actions`` gives parsed columns only).

What is replayed: the newest classic checkpoint at or before the version (one
Parquet file or its parts; ``_last_checkpoint`` first, else a listing), then
each JSON commit after it, in order, reconciled by (path, vector) as the
protocol says.  A table with v2 checkpoints never reaches here: its writer
feature is off the task path's allowlist (``_table_features.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.delta._deletion_vectors import Descriptor
from headwater.destinations.delta._delta_rs import commit_file
from headwater.errors import DestinationError

_LOG = "_delta_log"
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10}))?\.parquet$")


@dataclass
class LiveFiles:
    """The table's live files at ``version`` (raw ``add`` actions by path) and its ``txn``s."""

    version: int
    adds: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``appId`` -> the latest ``txn`` version the table holds for it.
    transactions: dict[str, int] = field(default_factory=dict)

    def by_location(self, location: str) -> dict[str, Any]:
        """The ``add`` of the file Spark names ``location`` (``_metadata.file_path``: a URI
        of the file, its path percent-encoded as in the log or not)."""
        wanted = unquote(location)
        name = wanted.rsplit("/", 1)[-1]
        matches = [add for path, add in self._by_name().get(name, ())
                   if wanted.endswith("/" + path)]
        if len(matches) != 1:
            raise DestinationError(f"the file {location} is {'not' if not matches else 'twice'} "
                                   f"among the table's files at version {self.version}")
        return matches[0]

    def _by_name(self) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        named: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for path, add in self.adds.items():
            decoded = unquote(path)
            named.setdefault(decoded.rsplit("/", 1)[-1], []).append((decoded, add))
        return named


def live_files(folder: TableFolder, version: int) -> LiveFiles:
    """Replay the log of the table in ``folder`` up to ``version`` (raises when a commit
    up to it is missing: the log was cleaned past it, or the table is elsewhere)."""
    start = _checkpoint_before(folder, version)
    by_key: dict[tuple[str, str | None], dict[str, Any]] = {}
    found = LiveFiles(version=version)
    if start is not None:
        at, parts = start
        for action in _checkpoint_actions(folder, parts):
            _apply(action, by_key, found)
        first = at + 1
    else:
        first = 0
    for commit in range(first, version + 1):
        text = folder.read_text(commit_file(commit))
        if text is None:
            raise DestinationError(f"the Delta log of {folder.uri} has no commit {commit} "
                                   f"(reading up to {version})")
        for line in text.splitlines():
            if line.strip():
                _apply(json.loads(line), by_key, found)
    for (path, _), add in by_key.items():
        if path in found.adds:
            raise DestinationError(f"the Delta table at {folder.uri} holds {path} twice at "
                                   f"version {version} (two deletion vectors)")
        found.adds[path] = add
    return found


def _apply(action: Mapping[str, Any], by_key: dict[tuple[str, str | None], dict[str, Any]],
           found: LiveFiles) -> None:
    """One log action replayed onto ``by_key`` (live adds) and ``found``'s transactions."""
    if action.get("add"):
        add = dict(action["add"])
        by_key[(add["path"], _vector_id(add))] = add
    elif action.get("remove"):
        removed = action["remove"]
        by_key.pop((removed["path"], _vector_id(removed)), None)
    elif action.get("txn"):
        txn = action["txn"]
        found.transactions[txn["appId"]] = int(txn["version"])


def _vector_id(action: Mapping[str, Any]) -> str | None:
    vector = action.get("deletionVector")
    return Descriptor.of(vector).unique_id if vector else None


def _checkpoint_before(folder: TableFolder, version: int) -> tuple[int, list[str]] | None:
    """The newest complete classic checkpoint at or before ``version``: its version and
    its files (relative to the table's folder); None when there is none."""
    pointer = folder.read_text(f"{_LOG}/_last_checkpoint")
    if pointer:
        described = json.loads(pointer)
        at, parts = int(described["version"]), described.get("parts")
        if at <= version and "v2Checkpoint" not in described:
            names = ([f"{at:020d}.checkpoint.parquet"] if not parts else
                     [f"{at:020d}.checkpoint.{i:010d}.{int(parts):010d}.parquet"
                      for i in range(1, int(parts) + 1)])
            if all(folder.exists(f"{_LOG}/{n}") for n in names):
                return at, [f"{_LOG}/{n}" for n in names]
    complete: dict[tuple[int, int], set[int]] = {}
    for name, _, _ in folder.list_files(_LOG):
        matched = _CHECKPOINT.match(name)
        if matched is None or int(matched.group(1)) > version:
            continue
        at = int(matched.group(1))
        total = int(matched.group(3) or 1)
        complete.setdefault((at, total), set()).add(int(matched.group(2) or 1))
    for (at, total), seen in sorted(complete.items(), reverse=True):
        if len(seen) == total:
            names = ([f"{at:020d}.checkpoint.parquet"] if total == 1 and not seen - {1}
                     and folder.exists(f"{_LOG}/{at:020d}.checkpoint.parquet") else
                     [f"{at:020d}.checkpoint.{i:010d}.{total:010d}.parquet"
                      for i in range(1, total + 1)])
            return at, [f"{_LOG}/{n}" for n in names]
    return None


def _checkpoint_actions(folder: TableFolder, parts: list[str]) -> Iterator[dict[str, Any]]:
    """The ``add`` and ``txn`` actions of a checkpoint's files, as a JSON commit holds them
    (a checkpoint's ``remove``s are tombstones of files no longer live: not needed)."""
    import pyarrow.parquet as pq

    filesystem, base = folder.filesystem()
    for part in parts:
        table = pq.read_table(f"{base}/{part}", filesystem=filesystem)
        columns = [c for c in ("add", "txn") if c in table.column_names]
        for row in table.select(columns).to_pylist():
            if row.get("add"):
                yield {"add": _json_form(row["add"])}
            elif row.get("txn"):
                yield {"txn": row["txn"]}


def _json_form(add: Mapping[str, Any]) -> dict[str, Any]:
    """An ``add`` read from a checkpoint as the log's JSON writes it: maps as objects, no
    absent (null) fields."""
    found: dict[str, Any] = {}
    for key, value in add.items():
        if value is None or key.endswith("_parsed"):  # a checkpoint's typed copies
            continue
        if key in ("partitionValues", "tags"):
            value = dict(value)
        elif key == "deletionVector":
            value = {k: v for k, v in value.items() if v is not None}
        found[key] = value
    found.setdefault("partitionValues", {})
    return found


__all__ = ["LiveFiles", "live_files"]
