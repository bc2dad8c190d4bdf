"""The connection files of the page's folder, and the metadata stores they name.

Files are the ``*.yaml`` / ``*.yml`` directly in the folder (as ``serve`` reads
it), each loaded and checked as ``headwater validate`` does; a file is read
again only when its size or modification time changed, so listing the page's
connections costs one ``stat`` per file.  A file that does not validate is
kept, with its problems, under its file name: the page lists it rather than
hiding it.

Each connection's store is the one ``headwater sync`` of that file uses (its
``metadata_store``, else the environment's, else the embedded default), unless
the page was given one URL for all; stores are opened once and shared, to be
read (:func:`~headwater.operations.open_store` with ``create=False``): the page
never creates a store, so a wrong path reads as an error, not as an empty store.
A file that does not validate has no store at all: what it names (or the
default it would fall back to) is not what any sync of it wrote.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from headwater.config import ConnectionConfig
from headwater.metadata_store import MetadataStore
from headwater.operations import open_store, store_url, validated_file
from headwater.serve import scan_folder


@dataclass(frozen=True)
class ConnectionFile:
    """One file of the folder: its connection (``None`` if it does not load) and problems."""

    path: Path
    name: str
    config: ConnectionConfig | None
    problems: list[str] = field(default_factory=list)
    #: When the file last changed: a connection that never ran is late from its first
    #: firing after this.
    modified_at: datetime | None = None

    @property
    def valid(self) -> bool:
        return self.config is not None and not self.problems


def problem_text(problem: dict[str, object]) -> str:
    """A problem as ``headwater validate`` prints it: ``FILE:LINE: FIELD: message``."""
    where = ":".join(str(x) for x in (problem.get("file"), problem.get("line")) if x)
    field_name = f" {problem['field']}:" if problem.get("field") else ""
    return f"{where}:{field_name} {problem['message']}"


class ConnectionFolder:
    """The connections of ``folder`` and their stores; thread-safe."""

    def __init__(self, folder: Path, explicit_store: str | None = None) -> None:
        self.folder = folder
        self.explicit_store = explicit_store
        self._lock = threading.Lock()  # guards the two caches below
        self._files: dict[Path, tuple[tuple[int, int], ConnectionFile]] = {}
        self._stores: dict[str, MetadataStore] = {}

    def connections(self) -> list[ConnectionFile]:
        """Every connection file of the folder, by name (re-read when changed)."""
        found = scan_folder(self.folder)
        result = []
        for path, signature in sorted(found.items()):
            with self._lock:
                known = self._files.get(path)
            if known is None or known[0] != signature:
                loaded = replace(_load(path), modified_at=datetime.fromtimestamp(
                    signature[0] / 1e9, UTC))
                known = (signature, loaded)
                with self._lock:
                    self._files[path] = known
            result.append(known[1])
        with self._lock:
            for gone in set(self._files) - set(found):
                del self._files[gone]
        return sorted(result, key=lambda c: c.name)

    def get(self, name: str) -> ConnectionFile | None:
        return next((c for c in self.connections() if c.name == name), None)

    def store_for(self, connection: ConnectionFile | None) -> MetadataStore:
        """The store ``headwater sync`` of this connection writes (opened once, to read);
        ``None``: the one ``headwater runs`` reads.  An invalid file has none (ValueError)."""
        if connection is not None and not connection.valid:
            raise ValueError(f"connection file {connection.path} does not validate: it has "
                             "no metadata store")
        config = connection.config if connection is not None else None
        url = store_url(config, explicit=self.explicit_store, create=False)
        with self._lock:
            store = self._stores.get(url)
            if store is None:
                store = self._stores[url] = open_store(url, create=False)
            return store

    def all_stores(self) -> list[MetadataStore]:
        """The store of every valid connection of the folder (a run id is looked up in
        each); with none, the one ``headwater runs`` reads."""
        stores: dict[int, MetadataStore] = {}
        found: list[ConnectionFile | None] = [c for c in self.connections() if c.valid]
        for connection in found or [None]:
            store = self.store_for(connection)
            stores[id(store)] = store
        return list(stores.values())

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()


def _load(path: Path) -> ConnectionFile:
    config, found = validated_file(path)
    problems = [problem_text(p) for p in found]
    if config is None:
        return ConnectionFile(path=path, name=path.stem, config=None, problems=problems)
    return ConnectionFile(path=path, name=config.name, config=config, problems=problems)
