"""Iceberg ``write.*`` table properties: honoured by the tasks' writer, or refused up front."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.iceberg._layout import files_writer
from headwater.destinations.iceberg._properties import FileSettings, file_settings, refusal
from headwater.errors import DestinationError


@pytest.mark.parametrize("properties", [
    {},
    {"write.format.default": "parquet", "write.parquet.compression-codec": "zstd",
     "write.parquet.compression-level": "3", "write.target-file-size-bytes": "134217728"},
    {"write.metadata.previous-versions-max": "20", "owner": "growth",
     "write.metadata.metrics.column.id": "full", "write.delete.mode": "copy-on-write"},
])
def test_properties_the_writer_honours_pass(properties: dict[str, str]) -> None:
    assert refusal(properties) is None


@pytest.mark.parametrize(("properties", "said"), [
    ({"write.format.default": "orc"}, "write Parquet files only"),
    ({"write.parquet.compression-codec": "lzo"}, "knows the codecs"),
    ({"write.parquet.compression-codec": "zstd", "write.parquet.compression-level": "40"},
     "zstd takes levels"),
    ({"write.target-file-size-bytes": "big"}, "positive number of bytes"),
    ({"write.merge.mode": "merge-on-read"}, "copy-on-write"),
    ({"write.data.path": "s3://elsewhere/data"}, "does not honour this property"),
    ({"write.parquet.bloom-filter-enabled.column.id": "true"}, "does not honour"),
])
def test_a_property_the_writer_would_ignore_is_refused_by_name(properties: dict[str, str],
                                                               said: str) -> None:
    refused = refusal(properties)
    assert refused is not None and said in refused
    assert refused.startswith(f"table_properties: {list(properties)[-1]}: ")


def test_file_settings_come_from_the_table_s_properties() -> None:
    assert file_settings({}) == FileSettings("snappy", None, None)
    assert file_settings({"write.parquet.compression-codec": "ZSTD",
                          "write.parquet.compression-level": "7",
                          "write.target-file-size-bytes": "1000"}) == FileSettings("zstd", 7, 1000)
    # snappy has no level; uncompressed is pyarrow's "none"; another format's files are
    # still Parquet here (the table's property is another writer's business, not refused).
    assert file_settings({"write.parquet.compression-codec": "snappy",
                          "write.parquet.compression-level": "3",
                          "write.format.default": "orc"}) == FileSettings("snappy", None, None)
    assert file_settings({"write.parquet.compression-codec": "uncompressed"}).compression == "none"
    with pytest.raises(DestinationError, match=r"write\.parquet\.compression-codec is 'lzo'"):
        file_settings({"write.parquet.compression-codec": "lzo"})


@pytest.mark.parametrize("codec", ["zstd", "gzip", "uncompressed"])
def test_the_tasks_files_carry_the_codec_and_target_size_asked(tmp_path: Path,
                                                               codec: str) -> None:
    settings = file_settings({"write.parquet.compression-codec": codec,
                              "write.target-file-size-bytes": str(8 * 10_000)})
    writer = files_writer(settings, TableFolder(str(tmp_path)))
    batches = [pa.record_batch({"id": pa.array(range(i, i + 10_000), pa.int64())})
               for i in range(0, 50_000, 10_000)]
    written = [row for out in writer.write(iter(batches)) for row in out.to_pylist()]
    assert [w["rows"] for w in written] == [10_000] * 5  # each file reached the target
    for file in written:
        metadata = pq.read_metadata(tmp_path / file["path"])
        assert metadata.row_group(0).column(0).compression == codec.upper()
