"""A checkpoint's commit marker inside an Iceberg table: snapshot summary and table property.

Why: Iceberg has no idempotent-write pair like Delta's ``txnAppId``/``txnVersion``,
so the destination keeps the same facts itself, in the one metadata commit that
adds the checkpoint's files:

* the snapshot's summary carries ``headwater.app_id``, ``headwater.version`` and
  ``headwater.tag`` (the marker's tag with the commit's counts, so the partition
  states it released travel with it): a resumed attempt finds the snapshot of a
  checkpoint whose commit landed, with its figures;
* a table property ``headwater.txn.<app id>`` holds the lane's latest version, as
  Delta's ``txn`` action does.  Snapshots expire (``expire_snapshots``); the
  property stays, so a landed checkpoint is still recognised (without figures),
  and a metadata store that went back in time is still caught.

Pure functions over ``(snapshot id, summary)`` pairs: tested without a table.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from headwater.destinations._base import CommitMarker

APP_ID_KEY = "headwater.app_id"
VERSION_KEY = "headwater.version"
TAG_KEY = "headwater.tag"
#: Table property prefix: ``headwater.txn.<app id>`` = the lane's latest committed version.
TXN_PROPERTY_PREFIX = "headwater.txn."


def summary_properties(marker: CommitMarker, tag: str) -> dict[str, str]:
    """What the checkpoint's snapshot summary carries (``tag``: the marker's, with counts)."""
    return {APP_ID_KEY: marker.app_id, VERSION_KEY: str(marker.version), TAG_KEY: tag}


def txn_property(app_id: str) -> str:
    """The table property holding ``app_id``'s latest committed version."""
    return f"{TXN_PROPERTY_PREFIX}{app_id}"


@dataclass(frozen=True)
class TaggedSnapshot:
    """A snapshot that carries a Headwater tag."""

    snapshot_id: int
    tag: str


def find_tagged(snapshots: Iterable[tuple[int, Mapping[str, Any]]], marker: CommitMarker,
                *, any_run: bool = False) -> TaggedSnapshot | None:
    """The snapshot of ``marker``'s checkpoint among ``(id, summary)`` pairs, newest first.

    Matched on the tag's run, stream and checkpoint rather than the whole text (a
    tag also carries counts and partition states).  With ``any_run``, the
    snapshot of that stream's checkpoint by whichever run.
    """
    for snapshot_id, summary in snapshots:
        tag = summary.get(TAG_KEY)
        if not isinstance(tag, str):
            continue
        ours = _headwater(tag)
        if (ours is not None
                and (any_run or ours.get("run_id") == marker.run_id)
                and ours.get("stream") == marker.stream
                and str(ours.get("checkpoint")) == str(marker.checkpoint_index)):
            return TaggedSnapshot(snapshot_id=snapshot_id, tag=tag)
    return None


def run_of(tag: str) -> str | None:
    """The run a tag names (None: not a Headwater tag)."""
    ours = _headwater(tag)
    return None if ours is None or ours.get("run_id") is None else str(ours["run_id"])


def held_version(properties: Mapping[str, str], app_id: str) -> int | None:
    """The lane's latest committed version the table's properties hold (None: none)."""
    value = properties.get(txn_property(app_id))
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def lane_versions(properties: Mapping[str, str], app_id_prefix: str) -> dict[str, int]:
    """Each lane (app id starting with ``app_id_prefix``) and its latest committed version."""
    found = {}
    for key, value in properties.items():
        if key.startswith(TXN_PROPERTY_PREFIX + app_id_prefix):
            try:
                found[key[len(TXN_PROPERTY_PREFIX):]] = int(value)
            except ValueError:
                continue
    return found


def _headwater(tag: str) -> dict[str, Any] | None:
    try:
        document = json.loads(tag)
    except ValueError:
        return None
    ours = document.get("headwater") if isinstance(document, dict) else None
    return ours if isinstance(ours, dict) else None


__all__ = ["APP_ID_KEY", "TAG_KEY", "TXN_PROPERTY_PREFIX", "VERSION_KEY", "TaggedSnapshot",
           "find_tagged", "held_version", "lane_versions", "run_of", "summary_properties",
           "txn_property"]
