"""The files destination without Spark: its config, its check, what abort removes, and
JSON Lines and CSV values written by the tasks' writer and read back exactly."""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.destinations import build_destination
from headwater.destinations._uncommitted import run_file_tag, run_started
from headwater.destinations.files import FilesDestination
from headwater.destinations.files._manifests import ListedFile, Manifest, staged_name
from headwater.destinations.files._read import read_file
from headwater.destinations.files._text import TextFiles
from headwater.destinations.testing._conformance import ALL_MODES
from headwater.errors import DestinationError, SpecValidationError
from headwater.plan import CheckpointPlan, ConfiguredStream, StreamPlan
from headwater.sync_modes import DestinationSyncMode, SyncMode

RUN = "20261128T190000Z-abcdef"

PLAN = StreamPlan(
    stream=ConfiguredStream(name="orders", sync_mode=SyncMode.INCREMENTAL,
                            destination_sync_mode=DestinationSyncMode.APPEND,
                            cursor_field="updated_at", primary_key=()),
    state_before=None, lanes=1, checkpoints=(),
    json_schema={"properties": {"id": {"type": "integer"}}})


# ------------------------------------------------------------------ config


def test_a_codec_the_format_does_not_take_is_named_with_those_it_does() -> None:
    with pytest.raises(SpecValidationError) as raised:
        build_destination("files", {"path": "out", "format": "jsonl", "compression": "snappy"})
    assert "destination.config.compression" in str(raised.value)
    assert "'none', 'gzip', 'zstd'" in str(raised.value)


def test_the_defaults_are_parquet_with_snappy_and_text_uncompressed() -> None:
    parquet = build_destination("files", {"path": "out"})
    assert isinstance(parquet, FilesDestination)
    assert (parquet.settings.format, parquet.settings.compression) == ("parquet", "snappy")
    jsonl = build_destination("files", {"path": "out", "format": "jsonl"})
    assert isinstance(jsonl, FilesDestination)
    assert (jsonl.settings.compression, jsonl.settings.extension) == ("none", ".jsonl")
    csv = FilesDestination({"path": "out", "format": "csv", "compression": "zstd"})
    assert csv.settings.extension == ".csv.zst"


def test_append_dedup_is_not_declared() -> None:
    assert "append_dedup" in ALL_MODES
    assert FilesDestination.capabilities.sync_modes == ("overwrite", "append")


def test_lineage_names_the_folder_without_credentials(tmp_path: Path) -> None:
    assert FilesDestination({"path": str(tmp_path)}).dataset_namespace() == tmp_path.as_uri()
    on_s3 = FilesDestination({"path": "s3://key:secret@bucket/exports/"})
    assert on_s3.dataset_namespace() == "s3://bucket/exports"


# ------------------------------------------------------------------ check


def test_check_creates_and_removes_a_scratch_file(tmp_path: Path) -> None:
    FilesDestination({"path": str(tmp_path / "not" / "yet")}).check()
    assert os.listdir(tmp_path) == []


def test_check_names_the_path_when_a_file_is_in_the_way(tmp_path: Path) -> None:
    (tmp_path / "exports").write_text("not a folder")
    with pytest.raises(DestinationError, match=f"path {tmp_path}/exports/out is not a folder"):
        FilesDestination({"path": str(tmp_path / "exports" / "out")}).check()


# ------------------------------------------------------------------ abort


def _file(folder: Path, name: str, *, at: float) -> str:
    (folder / name).write_bytes(b"x")
    os.utime(folder / name, (at, at))
    return name


def _manifest(*names: str) -> str:
    return Manifest(files=tuple(ListedFile(n, 1, 1) for n in names),
                    marker={"app_id": "a", "version": 1, "run_id": RUN}, tag="{}",
                    format="jsonl", compression="none", schema=pa.schema([])).to_json()


def test_abort_removes_only_the_runs_files_no_manifest_names(tmp_path: Path) -> None:
    table = tmp_path / "orders"
    (table / "_manifests").mkdir(parents=True)
    (table / "_staging" / RUN).mkdir(parents=True)
    began = run_started(RUN)
    tag = run_file_tag(RUN)
    listed = _file(table, f"part-listed-c000.{tag}.jsonl", at=began + 5)
    staged = _file(table, f"part-staged-c000.{tag}.jsonl", at=began + 5)
    failed = _file(table, f"part-failed-c000.{tag}.jsonl", at=began + 5)
    (table / "_manifests" / "00000000000000000000.json").write_text(_manifest(listed))
    (table / staged_name(RUN, 4)).write_text(_manifest(staged))
    # Not the run's: another run's tag, another writer's file without a tag, an older file.
    other = _file(table, f"part-other-c000.{run_file_tag('20261128T190500Z-123456')}.jsonl",
                  at=began + 5)
    foreign = _file(table, "part-foreign-c000.jsonl", at=began + 5)
    older = _file(table, f"part-older-c000.{tag}.jsonl", at=began - 60)

    destination = FilesDestination({"path": str(tmp_path), "format": "jsonl"})
    checkpoint = CheckpointPlan(index=5, checkpoint_id="c5", lane=0, partitions=())
    from headwater.destinations import CommitMarker

    destination.abort(None, PLAN, checkpoint,  # type: ignore[arg-type]  # no Spark for a folder
                      CommitMarker("a", 5, RUN, "orders", 5))
    left = sorted(p.name for p in table.iterdir() if p.is_file())
    assert failed not in left
    assert left == sorted([listed, staged, other, foreign, older])


# ------------------------------------------------------------------ values


ROWS = pa.table({
    "amount": pa.array([decimal.Decimal("12.50"), decimal.Decimal("-0.01"), None],
                       pa.decimal128(12, 2)),
    "at": pa.array([dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.UTC), None,
                    dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)],
                   pa.timestamp("us", tz="UTC")),
    "local": pa.array([dt.datetime(2026, 1, 2, 3, 4, 5), None, None], pa.timestamp("us")),
    "day": pa.array([dt.date(2026, 1, 2), None, dt.date(1970, 1, 1)]),
    "ratio": pa.array([0.1, math.nan, -math.inf]),
    "name": pa.array(["a, \"quoted\"\nline", "", None]),
    "raw": pa.array([b"\x00\xff", None, b""], pa.binary()),
    "address": pa.array([{"city": "Zürich", "since": dt.date(2020, 5, 1),
                          "tags": ["x", "y"]}, None, {"city": None, "since": None,
                                                     "tags": []}],
                        pa.struct([("city", pa.string()), ("since", pa.date32()),
                                   ("tags", pa.list_(pa.string()))])),
    "extra": pa.array(['{"a":1.000000000000000000001}', None, "[]"], pa.string()),
})


def _round_trip(tmp_path: Path, fmt: str, compression: str) -> pa.Table:
    suffix = {"none": "", "gzip": ".gz", "zstd": ".zst"}[compression]
    writer = TextFiles(str(tmp_path), fmt, compression, f".{fmt}{suffix}", name_tag="hw-x")
    described = list(writer.write(iter(ROWS.to_batches(max_chunksize=2))))
    assert [b.num_rows for b in described] == [1]
    [row] = pa.Table.from_batches(described).to_pylist()
    assert row["rows"] == 3 and row["path"].endswith(f".hw-x.{fmt}{suffix}")
    manifest = Manifest(files=(ListedFile(row["path"], 3, row["size"]),), marker={}, tag="{}",
                        format=fmt, compression=compression, schema=ROWS.schema)
    from pyarrow import fs as pafs

    return read_file(pafs.LocalFileSystem(), str(tmp_path / row["path"]), manifest)


@pytest.mark.parametrize("compression", ["none", "gzip", "zstd"])
def test_json_lines_values_come_back_exactly(tmp_path: Path, compression: str) -> None:
    back = _round_trip(tmp_path, "jsonl", compression)
    assert back.schema.equals(ROWS.schema)
    _same(back.to_pylist(), ROWS.to_pylist())


def test_csv_values_come_back_exactly_nested_ones_as_json_text(tmp_path: Path) -> None:
    import json

    back = _round_trip(tmp_path, "csv", "gzip")
    expected = ROWS.to_pylist()
    rows = back.to_pylist()
    assert [json.loads(r["address"]) if r["address"] else None for r in rows] == [
        {"city": "Zürich", "since": "2020-05-01", "tags": ["x", "y"]}, None,
        {"city": None, "since": None, "tags": []}]
    for row in (*rows, *expected):
        row.pop("address")
    _same(rows, expected)


def _same(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    """Equal, NaN equal to NaN."""
    def key(value: Any) -> Any:
        return "NaN" if isinstance(value, float) and math.isnan(value) else value

    assert [{k: key(v) for k, v in r.items()} for r in actual] == \
        [{k: key(v) for k, v in r.items()} for r in expected]


# ------------------------------------------------------------------ refusals and staging


@pytest.mark.parametrize(("mode", "layout", "refused"), [
    (DestinationSyncMode.APPEND_DEDUP, None, "append_dedup needs one row per primary key"),
    (DestinationSyncMode.HISTORY, None, "history closes a key's current version"),
    (DestinationSyncMode.APPEND, ("country",), "partition_by, cluster_by and table_properties"),
])
def test_prepare_refuses_what_plain_files_cannot_do(tmp_path: Path, mode: DestinationSyncMode,
                                                    layout: tuple[str, ...] | None,
                                                    refused: str) -> None:
    from headwater.errors import ConfigError
    from headwater.plan import TableLayout

    stream = ConfiguredStream(name="users", sync_mode=SyncMode.INCREMENTAL,
                              destination_sync_mode=mode, cursor_field="updated_at",
                              primary_key=("id",),
                              table_layout=TableLayout(partition_by=layout or ()))
    plan = StreamPlan(stream=stream, state_before=None, lanes=1, checkpoints=(),
                      json_schema=PLAN.json_schema)
    destination = FilesDestination({"path": str(tmp_path)})
    with pytest.raises(ConfigError, match=refused) as raised:
        destination.prepare(None, plan, pa.schema([("id", pa.int64())]))  # type: ignore[arg-type]
    assert "stream 'users'" in str(raised.value)
    assert not (tmp_path / "users").exists()  # refused before anything was written


def test_clear_staging_drops_other_runs_unpublished_files_only(tmp_path: Path) -> None:
    table = tmp_path / "orders"
    (table / "_manifests").mkdir(parents=True)
    failed, published, kept = "20261128T180000Z-aaaaaa", "20261128T181000Z-bbbbbb", RUN
    for run in (failed, published, kept):
        (table / "_staging" / run).mkdir(parents=True)
    names = {run: _file(table, f"part-{run}-c000.{run_file_tag(run)}.jsonl", at=1e9)
             for run in (failed, published, kept)}
    for run, name in names.items():
        (table / staged_name(run, 1)).write_text(_manifest(name))
    # The publish of ``published`` landed; removing its staging folder did not.
    (table / "_manifests" / "00000000000000000000.json").write_text(_manifest(names[published]))

    FilesDestination({"path": str(tmp_path)}).clear_staging(
        None, PLAN, keep_run_id=kept)  # type: ignore[arg-type]  # no Spark for a folder
    assert sorted(p.name for p in table.glob("part-*")) == sorted([names[published],
                                                                    names[kept]])
    assert sorted(p.name for p in (table / "_staging").iterdir()) == [kept]


def test_lane_versions_are_the_latest_version_of_each_lane_in_the_log(tmp_path: Path) -> None:
    table = tmp_path / "orders" / "_manifests"
    table.mkdir(parents=True)
    for number, (app_id, version) in enumerate([("hw/s/c/orders/0", 3), ("hw/s/c/orders/1", 4),
                                                ("hw/s/c/orders/0", 5), ("other/0", 9)]):
        document = Manifest(files=(), marker={"app_id": app_id, "version": version},
                            tag="{}", format="parquet", compression="snappy",
                            schema=pa.schema([])).to_json()
        (table / f"{number:020d}.json").write_text(document)
    destination = FilesDestination({"path": str(tmp_path)})
    assert destination.lane_versions(None, "orders", "hw/s/c/orders/") == {  # type: ignore[arg-type]
        "hw/s/c/orders/0": 5, "hw/s/c/orders/1": 4}


class _TaskRows:
    """What the engine hands ``commit_files``: the rows the tasks' writer returned (here,
    for one file already written), as a DataFrame's ``collect`` gives them."""

    def __init__(self, *written: Any) -> None:
        self.written = written

    def collect(self) -> list[Any]:
        from dataclasses import asdict

        from pyspark.sql import Row

        return [Row(**asdict(w)) for w in self.written]


def _committer(tmp_path: Path, put: Callable[[Callable[[], bool]], bool],
               ) -> tuple[Path, Callable[[str], Any]]:
    """The ``orders`` table's folder, and a commit of checkpoint 1 of one new file (named
    as given) through a log whose manifest puts go through ``put`` (it gets the real
    create, to call or not)."""
    from headwater.destinations import CommitMarker
    from headwater.destinations._table_files._create import create_text
    from headwater.destinations._table_files._parquet import WrittenFile
    from headwater.destinations._table_files._store import TableFolder
    from headwater.destinations.files._manifests import Log

    destination = FilesDestination({"path": str(tmp_path), "format": "jsonl"})
    table = tmp_path / "orders"
    table.mkdir()
    folder = TableFolder(str(table))

    def create(relative: str, text: str) -> bool:
        return put(lambda: create_text(folder, relative, text))

    def names() -> list[str]:
        return [name for name, _, _ in folder.list_files("_manifests")]

    destination._logs["orders"] = Log(names, folder.read_text, create)
    marker = CommitMarker("hw/s/c/orders/0", 1, RUN, "orders", 1)
    checkpoint = CheckpointPlan(index=1, checkpoint_id="c1", lane=0, partitions=())

    def attempt(name: str) -> Any:
        (table / name).write_text('{"id":1}\n')
        written = WrittenFile(path=name, size=9, modified_ms=0, rows=1, rejected=0, stats="{}")
        return destination.commit_files(None, PLAN, checkpoint,  # type: ignore[arg-type]
                                        _TaskRows(written), marker)  # type: ignore[arg-type]

    return table, attempt


@pytest.mark.parametrize("answer_lost", [False, True])
def test_a_commit_keeps_its_files_unless_an_earlier_attempt_listed_others(
        tmp_path: Path, answer_lost: bool) -> None:
    def put(create: Callable[[], bool]) -> bool:
        # With answer_lost, the put lands and its answer is lost: the retry is refused.
        return create() and not answer_lost

    table, attempt = _committer(tmp_path, put)
    first = attempt("part-first.jsonl")
    assert first.already_committed is answer_lost
    assert (table / "part-first.jsonl").exists()  # listed: it stays, answer lost or not
    again = attempt("part-again.jsonl")  # a retried checkpoint: its new file goes
    assert again.already_committed and not (table / "part-again.jsonl").exists()
    assert [p.name for p in (table / "_manifests").iterdir()] == ["00000000000000000000.json"]


@pytest.mark.parametrize("where", ["the put", "after the put"])
def test_a_commit_that_raises_after_its_manifest_landed_counts_as_committed(
        tmp_path: Path, where: str) -> None:
    """An error after the manifest landed (the put's answer lost; what follows the put,
    here the ``commit-landed`` moment): the log is looked up, the manifest is there, so
    the commit is made.  Failed, the engine would drop its files and read it again."""
    from headwater import _events

    def put(create: Callable[[], bool]) -> bool:
        landed = create()
        if where == "the put":
            raise ConnectionResetError("the put's answer was lost (injected)")
        return landed

    def lost(moment: str) -> None:
        if moment == "commit-landed" and where == "after the put":
            raise ConnectionResetError("lost after the manifest landed (injected)")

    table, attempt = _committer(tmp_path, put)
    _events.listen(lost)
    try:
        result = attempt("part-first.jsonl")
    finally:
        _events.forget(lost)
    assert (result.rows, result.version, result.already_committed) == (1, 0, False)
    assert [p.name for p in (table / "_manifests").iterdir()] == ["00000000000000000000.json"]


@pytest.mark.parametrize("lookup_fails", [False, True])
def test_a_commit_whose_put_raised_before_landing_failed_or_is_unknown(
        tmp_path: Path, lookup_fails: bool) -> None:
    """No manifest landed: the commit failed; a lookup that raises too leaves it unknown."""
    from headwater.errors import CommitOutcomeUnknownError

    def put(create: Callable[[], bool]) -> bool:
        raise ConnectionResetError("the store went away (injected)")

    table, attempt = _committer(tmp_path, put)
    if lookup_fails:
        (table / "_manifests").write_text("a file where the log's folder belongs")
    expected = CommitOutcomeUnknownError if lookup_fails else DestinationError
    with pytest.raises(expected, match="checkpoint 1"):
        attempt("part-first.jsonl")
