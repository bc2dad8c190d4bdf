"""What an installed connector's ``spec`` and ``discover`` said, kept next to its venv.

Each is a fresh process of the connector, and a Python connector imports
slowly: ``airbyte-source-faker`` spends 2.5 CPU seconds on either before its
first line, on a machine whose cores its own ``read`` keeps busy.  So a sync
asks neither when the answer is known:

* ``spec`` is a pure function of the installed connector: kept under a digest
  of the installation (:func:`installation_digest`: the package's dist-info
  ``RECORD``, which lists every installed file with its hash), so a reinstall
  or a different build asks again.  A ``command`` connector has no installation
  Headwater can see (a script, ``docker run``): it is asked every time.
* ``discover`` also depends on the config and on the source's data (a new
  column, a new table): kept per installation and config, with the moment it
  ran.  A sync plans with the kept catalog while it is younger than the
  source's ``catalog_max_age_minutes`` (Airbyte's own rule: it re-discovers
  before a sync at most every 15 minutes in its cloud, 24 hours self-managed),
  else discovers before planning as always; ``headwater discover`` always
  discovers, and what it finds is kept.  A discover whose catalog differs from
  the kept one says what changed (:func:`catalog_changes`) in a warning.

The files live in the venv folder (``.headwater-spec-<digest>.json``,
``.headwater-catalog-<digest>.json``), so removing the venv forgets them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headwater.connectors.airbyte._env import ConnectorEnv
from headwater.protocol import AirbyteCatalog, AirbyteStream, ConnectorSpecification

#: How long a sync plans with a kept catalog unless the source says otherwise.
DEFAULT_CATALOG_MAX_AGE_MINUTES = 15


def installation_digest(env: ConnectorEnv) -> str | None:
    """A digest of the installed package (its dist-info ``RECORD``); ``None`` for a
    command connector or a venv where the package's dist-info cannot be found."""
    if env.command_line or not env.package:
        return None
    wanted = _normalized(env.package)
    for record in sorted(env.venv.glob("lib/python*/site-packages/*.dist-info/RECORD")):
        name, _, version = record.parent.name.removesuffix(".dist-info").partition("-")
        if _normalized(name) == wanted and version == env.version:
            with contextlib.suppress(OSError):
                return hashlib.sha256(record.read_bytes()).hexdigest()[:32]
    return None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def spec_file(env: ConnectorEnv, installed: str) -> Path:
    return env.venv / f".headwater-spec-{installed[:16]}.json"


def catalog_file(env: ConnectorEnv, installed: str, config: dict[str, Any]) -> Path:
    """Per installation and config (a digest: the config holds secrets)."""
    text = json.dumps({"installed": installed, "config": config}, sort_keys=True, default=str)
    return env.venv / f".headwater-catalog-{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"


def load_spec(path: Path) -> ConnectorSpecification | None:
    try:
        return ConnectorSpecification.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None


def keep_spec(path: Path, spec: ConnectorSpecification) -> None:
    _write(path, spec.model_dump_json(exclude_none=True))


@dataclass(frozen=True)
class KeptCatalog:
    catalog: AirbyteCatalog
    #: When ``discover`` gave it (seconds since the epoch).
    discovered_at: float

    def age_minutes(self, now: float | None = None) -> float:
        return max(0.0, ((now if now is not None else time.time()) - self.discovered_at) / 60)


def load_catalog(path: Path) -> KeptCatalog | None:
    try:
        document = json.loads(path.read_text())
        return KeptCatalog(AirbyteCatalog.model_validate(document["catalog"]),
                           float(document["discovered_at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def keep_catalog(path: Path, catalog: AirbyteCatalog, discovered_at: float) -> None:
    _write(path, json.dumps({"discovered_at": discovered_at,
                             "catalog": catalog.model_dump(mode="json", exclude_none=True)}))


def _write(path: Path, text: str) -> None:
    """Atomically (readers see the old file or the new), and never fatal: it is a cache."""
    with contextlib.suppress(OSError):
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(text)
        partial.replace(path)


def catalog_changes(old: AirbyteCatalog, new: AirbyteCatalog) -> list[str]:
    """What differs between two catalogs, stream by stream, in words (empty: nothing)."""
    before = {(s.namespace, s.name): s for s in old.streams}
    after = {(s.namespace, s.name): s for s in new.streams}
    changes = [f"stream {key[1]!r} added" for key in after if key not in before]
    changes += [f"stream {key[1]!r} removed" for key in before if key not in after]
    for key in before.keys() & after.keys():
        changes += [f"stream {key[1]!r}: {change}"
                    for change in _stream_changes(before[key], after[key])]
    return sorted(changes)


def _stream_changes(old: AirbyteStream, new: AirbyteStream) -> list[str]:
    columns_before = old.json_schema.get("properties") or {}
    columns_after = new.json_schema.get("properties") or {}
    changes = [f"column {c!r} added" for c in columns_after if c not in columns_before]
    changes += [f"column {c!r} removed" for c in columns_before if c not in columns_after]
    changes += [f"column {c!r} changed type" for c in columns_before.keys() & columns_after.keys()
                if columns_before[c] != columns_after[c]]
    if not changes and old.json_schema != new.json_schema:
        changes.append("schema changed")
    for field, label in (("source_defined_primary_key", "primary key"),
                         ("default_cursor_field", "cursor"),
                         ("supported_sync_modes", "sync modes")):
        if getattr(old, field) != getattr(new, field):
            changes.append(f"{label} changed")
    return changes
