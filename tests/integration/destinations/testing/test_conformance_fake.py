"""The destination kit's conformance run against the shipped fake destination, and
against broken fakes: each broken promise is reported under its own check."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from headwater.destinations import CommitMarker, CommitResult
from headwater.destinations.testing import FakeDestination, assert_conformant, run_conformance

pytestmark = pytest.mark.spark


def test_the_fake_destination_keeps_the_whole_contract(spark: Any, tmp_path: Path) -> None:
    report = assert_conformant(lambda folder: FakeDestination({"path": str(folder)}), spark,
                               tmp_path)
    names = {c.name for c in report.checks}
    assert {"mode:overwrite", "mode:append", "mode:append_dedup",
            "capability:stages_overwrites", "capability:task_written_files",
            "retried checkpoint lands once", "kill after commit, before state release",
            "restored metadata store: the markers decide"} <= names


class ForgetsItsCommits(FakeDestination):
    """Commits again what it already holds: no idempotency, no markers."""

    def find_commit(self, spark: Any, plan: Any, marker: CommitMarker) -> CommitResult | None:
        return None

    def _landed(self, stream: str, app_id: str, version: int) -> CommitResult | None:
        return None


class DedupUndeclared(FakeDestination):
    """Says nothing of append_dedup, though it lands it."""

    capabilities = FakeDestination.capabilities.__class__(
        **{**FakeDestination.capabilities.__dict__, "sync_modes": ("overwrite", "append")})


def _failed(destination: type[FakeDestination], spark: Any, folder: Path) -> set[str]:
    def make(where: Path, config: Mapping[str, Any] | None = None) -> FakeDestination:
        return destination({"path": str(where)})

    return {c.name for c in run_conformance(make, spark, folder).failures}


def test_a_destination_without_markers_fails_the_retry_kill_and_restore_checks(
        spark: Any, tmp_path: Path) -> None:
    failed = _failed(ForgetsItsCommits, spark, tmp_path)
    assert {"retried checkpoint lands once", "kill after commit, before state release",
            "restored metadata store: the markers decide"} <= failed


def test_an_undeclared_mode_that_lands_is_reported(spark: Any, tmp_path: Path) -> None:
    assert _failed(DedupUndeclared, spark, tmp_path) == {"mode:append_dedup"}
