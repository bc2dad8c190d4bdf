"""``DeltaDestination.check``: a local folder must exist or be creatable, and be writable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from headwater.destinations import build_destination
from headwater.destinations.delta import DeltaDestination
from headwater.errors import DestinationError


def test_a_writable_folder_passes_and_keeps_nothing(tmp_path: Path) -> None:
    DeltaDestination({"path": str(tmp_path)}).check()
    assert list(tmp_path.iterdir()) == []


def test_a_missing_folder_is_created_for_the_check_and_removed_again(tmp_path: Path) -> None:
    destination = DeltaDestination({"path": f"file://{tmp_path}/a/b/lake"})
    assert destination.check_skipped() is None
    destination.check()
    assert list(tmp_path.iterdir()) == []  # what the check made, it removed


def test_a_file_in_the_way_fails_naming_the_path(tmp_path: Path) -> None:
    (tmp_path / "lake").write_text("not a folder")
    with pytest.raises(DestinationError, match=f"{tmp_path}/lake is not a folder"):
        DeltaDestination({"path": str(tmp_path / "lake")}).check()
    with pytest.raises(DestinationError, match=f"{tmp_path}/lake/tables does not exist and "
                       r"cannot be created \(\[Errno 20\] Not a directory"):
        DeltaDestination({"path": str(tmp_path / "lake" / "tables")}).check()


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root writes into read-only folders")
def test_a_folder_under_a_read_only_folder_fails_naming_the_path(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(DestinationError, match=f"{locked}/lake does not exist and cannot "
                           r"be created \(\[Errno 13\] Permission denied"):
            DeltaDestination({"path": str(locked / "lake")}).check()
        with pytest.raises(DestinationError, match=f"{locked} is not writable"):
            DeltaDestination({"path": str(locked)}).check()
    finally:
        locked.chmod(0o755)


def test_a_scratch_file_that_cannot_be_written_fails_with_the_os_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The read-only case, as root too: the scratch file's creation is refused."""
    def refused(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", refused)
    with pytest.raises(DestinationError, match=(
            f"{tmp_path} is not writable \\(creating a scratch file in it failed: "
            r"\[Errno 13\] Permission denied: '.*\.headwater-check-[0-9a-f]{32}'\); "
            "give this user write access")):
        DeltaDestination({"path": str(tmp_path)}).check()


def test_an_s3_path_is_checked_unless_only_s3a_can_get_its_credentials() -> None:
    """The probe itself is tested against an S3 server (integration ``test_s3_check``)."""
    destination = build_destination("delta", {"path": "s3a://bucket/lake"})
    assert destination.check_skipped() is None
    destination.use_spark_conf({"spark.hadoop.fs.s3a.bucket.bucket.aws.credentials.provider":
                                "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"})
    reason = destination.check_skipped()
    assert reason is not None and "AnonymousAWSCredentialsProvider" in reason


@pytest.mark.parametrize(("path", "conf", "named"), [
    ("hdfs://namenode/lake", {}, "not a local folder nor on S3 or Azure"),
    ("gs://bucket/lake", {}, "not a local folder nor on S3 or Azure"),
    ("abfss://c@account.dfs.core.windows.net/x", {}, "no fs.azure.account.key.account.dfs"),
    ("abfss://c@account.dfs.core.windows.net/x",
     {"spark.hadoop.fs.azure.account.auth.type": "Custom"}, "only hadoop-azure follows"),
])
def test_a_store_path_only_spark_reaches_is_not_checked_without_spark(
        path: str, conf: dict[str, str], named: str) -> None:
    destination = build_destination("delta", {"path": path})
    destination.use_spark_conf(conf)
    reason = destination.check_skipped()
    assert reason is not None and path in reason and named in reason
    destination.check()  # nothing to do, nothing started
