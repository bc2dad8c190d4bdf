"""Notes a reader attaches to its own rows are kept, and such rows count as rejected."""

from __future__ import annotations

import pyarrow as pa

from headwater.table_schema import NOTES_TYPE, READER_NOTES, batch_from_records, conform_batch

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
NOTE = {"field": "", "reason": "malformed JSON", "value": "{broken"}


def test_a_notes_column_merges_with_the_engine_notes_and_is_not_an_extra_column() -> None:
    batch = pa.RecordBatch.from_arrays(
        [pa.array([1, None, 3]), pa.array(["a", None, "x"]),
         pa.array([None, [NOTE], None], NOTES_TYPE)],
        names=["id", "name", READER_NOTES])
    columns, row_notes = conform_batch(
        batch.set_column(0, "id", pa.array(["1", None, "three"])), SCHEMA)
    notes = row_notes.to_lists()
    assert columns[0].to_pylist() == [1, None, None]
    assert notes[0] == [] and notes[1] == [NOTE]
    assert [n["field"] for n in notes[2]] == ["id"]  # the engine's own note, no "extra" one


def test_a_notes_key_in_dict_records_is_kept() -> None:
    columns, notes = batch_from_records([{"id": 1}, {READER_NOTES: [NOTE]}], SCHEMA)
    assert columns[0].to_pylist() == [1, None]
    assert notes.to_lists() == [[], [NOTE]]


def test_date_time_text_without_an_offset_is_cast_as_utc_in_one_step() -> None:
    from headwater.table_schema import UTC_TIMESTAMP, RowNotes, coerce_column

    notes = RowNotes(3)
    text = pa.array(["2024-01-01T10:00:00", "2024-01-01 10:00:00.5", None])
    cast = coerce_column("at", text, UTC_TIMESTAMP, notes)
    slow = coerce_column("at", text.cast(pa.large_string()), UTC_TIMESTAMP, RowNotes(3))
    assert cast.type == UTC_TIMESTAMP and cast.to_pylist() == slow.to_pylist()
    assert cast.to_pylist()[0].isoformat() == "2024-01-01T10:00:00+00:00"
    assert notes.to_lists() == [[], [], []]


def test_row_notes_are_null_for_rows_without_notes_even_after_an_empty_lookup() -> None:
    from headwater.table_schema import RowNotes

    notes = RowNotes(4)
    assert notes[0] == []  # looking a row up gives it no note
    notes[2].append(NOTE)
    column = notes.array()
    assert column.type == NOTES_TYPE
    assert column.to_pylist() == [None, None, [NOTE], None]
    assert RowNotes(3).array().null_count == 3


def test_decimal_text_past_the_precision_is_noted_not_wrapped() -> None:
    """Arrow's cast of text with more digits than the precision wraps around (40 ones
    as decimal(38, 0) gave 902640...): such text is noted, the rest lands exact."""
    schema = pa.schema([("d", pa.decimal128(38, 0))])
    batch = pa.RecordBatch.from_arrays([pa.array(["1" * 40, "25", None, "-1"])],
                                       names=["d"])
    columns, notes = conform_batch(batch, schema)
    assert [None if v is None else str(v) for v in columns[0].to_pylist()] == [
        None, "25", None, "-1"]
    assert [[(n["field"], n["value"]) for n in row] for row in notes.to_lists()] == [
        [("d", "1" * 40)], [], [], []]
