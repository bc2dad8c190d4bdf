"""Deletion vectors as Headwater's history commit writes them, against delta-spark's bytes,
and the log replay that names each file's current vector (``_deletion_vectors.py``,
``_live_files.py``)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from pyroaring import BitMap

from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.delta import _deletion_vectors as dv
from headwater.destinations.delta._live_files import live_files
from headwater.errors import DestinationError

#: The vector delta-spark 4.4 wrote for ``DELETE ... WHERE id % 7 = 0`` on a file of ids
#: 0..499 (rows 0, 7, ..., 497), as found in its ``deletion_vector_<uuid>.bin``.
SPARK_VECTOR = bytes.fromhex(
    "d1d339640100000000000000000000003a300000010000000000470010000000000007000e0015001c00"
    "23002a00310038003f0046004d0054005b0062006900700077007e0085008c0093009a00a100a800af00"
    "b600bd00c400cb00d200d900e000e700ee00f500fc0003010a01110118011f0126012d0134013b014201"
    "4901500157015e0165016c0173017a01810188018f0196019d01a401ab01b201b901c001c701ce01d501"
    "dc01e301ea01f101")


def test_a_vector_is_encoded_as_delta_spark_encodes_it() -> None:
    assert dv.encode(BitMap(range(0, 500, 7))) == SPARK_VECTOR
    assert dv.decode(SPARK_VECTOR) == BitMap(range(0, 500, 7))


def test_a_vector_file_is_named_by_its_uuid_in_z85() -> None:
    # the pair delta-spark wrote: the file's UUID and its descriptor's pathOrInlineDv
    file_id = uuid.UUID("ab15f460-1365-4ce8-814d-835ced5c4ed4")
    assert dv.z85_encode(file_id.bytes) == "S$>nm6j<(3FLy=4)oAAo"
    assert dv.z85_decode("S$>nm6j<(3FLy=4)oAAo") == file_id.bytes
    descriptor = dv.Descriptor("u", "ab" + "S$>nm6j<(3FLy=4)oAAo", 1, 176, 72)
    assert descriptor.relative_file() == f"ab/deletion_vector_{file_id}.bin"
    assert descriptor.unique_id == "uabS$>nm6j<(3FLy=4)oAAo@1"


def test_vectors_written_to_one_file_read_back_and_a_damaged_one_is_refused(
        tmp_path: Path) -> None:
    folder = TableFolder(str(tmp_path))
    vectors = [BitMap([0, 3, 70_000]), BitMap(range(5, 100_000, 3))]
    first, second = dv.write(folder, vectors)
    assert first.offset == 1 and second.offset == 1 + 4 + first.size_in_bytes + 4
    assert [dv.read(folder, d) for d in (first, second)] == vectors
    assert (first.cardinality, second.cardinality) == (3, len(vectors[1]))
    path = tmp_path / first.relative_file()
    damaged = bytearray(path.read_bytes())
    damaged[10] ^= 0xFF
    path.write_bytes(bytes(damaged))
    with pytest.raises(DestinationError, match="checksum"):
        dv.read(folder, first)


def _commit(folder: Path, version: int, *actions: dict[str, object]) -> None:
    log = folder / "_delta_log"
    log.mkdir(exist_ok=True)
    (log / f"{version:020d}.json").write_text(
        "".join(json.dumps(a) + "\n" for a in actions))


def test_the_live_files_name_each_file_with_its_current_vector(tmp_path: Path) -> None:
    vector = {"storageType": "u", "pathOrInlineDv": "S$>nm6j<(3FLy=4)oAAo", "offset": 1,
              "sizeInBytes": 176, "cardinality": 72}
    plain = {"path": "a%20b.parquet", "partitionValues": {}, "size": 10,
             "modificationTime": 1, "dataChange": True}
    _commit(tmp_path, 0, {"protocol": {"minReaderVersion": 3}},
            {"add": plain}, {"add": {**plain, "path": "c.parquet"}})
    _commit(tmp_path, 1, {"remove": {"path": "a%20b.parquet", "dataChange": True}},
            {"add": {**plain, "deletionVector": vector}},
            {"txn": {"appId": "lane", "version": 4}})
    # a remove that names the wrong vector removes nothing
    _commit(tmp_path, 2, {"remove": {"path": "c.parquet", "dataChange": True,
                                     "deletionVector": vector}})
    folder = TableFolder(str(tmp_path))
    at_first = live_files(folder, 0)
    assert set(at_first.adds) == {"a%20b.parquet", "c.parquet"}
    assert "deletionVector" not in at_first.adds["a%20b.parquet"]
    latest = live_files(folder, 2)
    assert latest.adds["a%20b.parquet"]["deletionVector"] == vector
    assert set(latest.adds) == {"a%20b.parquet", "c.parquet"}
    assert latest.transactions == {"lane": 4}
    assert latest.by_location(f"file:{tmp_path}/a b.parquet")["path"] == "a%20b.parquet"
    with pytest.raises(DestinationError, match="not among"):
        latest.by_location(f"file:{tmp_path}/gone.parquet")
