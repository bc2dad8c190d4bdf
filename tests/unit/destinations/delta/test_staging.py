"""Staged overwrite checkpoints: manifests read back whole, publish tags name their run."""

from __future__ import annotations

from pathlib import Path

from headwater.destinations._base import CommitMarker, PublishMarker, tagged_publish
from headwater.destinations._table_files._parquet import WrittenFile
from headwater.destinations.delta import _staging


def test_a_manifest_reads_back_as_written_and_a_missing_one_is_none(tmp_path: Path) -> None:
    files = (WrittenFile("part-1.parquet", 10, 1, 3, 1, "{}"),
             WrittenFile("part-2.parquet", 20, 2, 4, 0, "{}"))
    manifest = _staging.Manifest(run_id="r1", stream="users", checkpoint=7, files=files)
    _staging.write_manifest(str(tmp_path), manifest)
    assert _staging.read_manifest(str(tmp_path), "r1", 7) == manifest
    assert (manifest.rows, manifest.rejected, manifest.size) == (7, 1, 30)
    assert _staging.read_manifest(str(tmp_path), "r1", 8) is None
    staged = tmp_path / "_headwater_staging" / "r1"
    assert sorted(p.name for p in staged.iterdir()) == ["7.json"]  # no temporary left
    (tmp_path / "part-1.parquet").write_bytes(b"x")
    assert _staging.missing_files(str(tmp_path), [manifest]) == ["part-2.parquet"]


def test_a_publish_tag_is_no_checkpoint_s_tag() -> None:
    marker = PublishMarker(app_id="a/publish", version=12, run_id="r1", stream="users",
                           checkpoints=(10, 11, 12))
    assert tagged_publish(marker.tag) == ("r1", "users", [10, 11, 12])
    assert tagged_publish(marker.tag_with_counts(5, 0, 9)) == ("r1", "users", [10, 11, 12])
    checkpoint = CommitMarker(app_id="a/0", version=12, run_id="r1", stream="users",
                              checkpoint_index=12)
    assert tagged_publish(checkpoint.tag) is None
    assert '"checkpoint"' not in marker.tag
