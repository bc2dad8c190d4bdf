"""A schema contract applied to rows, on the executors, as the tasks type them.

Runs before :func:`~headwater.table_schema.conform_batch` (or
:func:`~headwater.table_schema.batch_from_records`) in the same pass, on the
same batch: no extra read.  What it does to a batch, by the contract's action:

* fields outside the written columns (new columns the contract keeps out of the
  table, and fields only records carry): ``discard_value`` nulls them with a
  note, ``discard_row`` keeps the row out, ``rescue`` moves them into
  ``_hw_rescued`` as one JSON object, ``freeze`` fails the task (so its
  checkpoint never commits), ``evolve`` leaves them as today (a note each);
* a column whose type changed: ``discard_value`` nulls its values with a note,
  ``discard_row`` keeps out the rows that hold a value in it.

Notes ride in the batch's ``_hw_notes`` (the reader-notes column the typing
merges), so a row a contract touched counts as rejected, as any misfit does.
Rows kept out are counted, by reason, in a :class:`Tally` that the task hands to
the run's figures.  Everything here is pickled to the executors: plain values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater import json_numbers
from headwater.config._problems import kind_of
from headwater.config._schema_contract import SchemaContract
from headwater.errors import SchemaContractError
from headwater.schema_contracts._changes import RESCUED, SchemaChange
from headwater.schema_contracts._rescue import rescued_column
from headwater.table_schema import MAX_NOTE_VALUE, NOTES_TYPE, READER_NOTES, Note, note_text


@dataclass
class Tally:
    """Rows a contract kept out of one partition, by reason."""

    rows: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def add(self, reason: str, count: int) -> None:
        if count:
            self.rows += count
            self.reasons[reason] += count


@dataclass(frozen=True)
class ChangedColumn:
    """A column whose type changed, and what the contract does with its values."""

    action: str
    stream_type: str
    table_type: str


@dataclass(frozen=True)
class RowContract:
    """What the tasks do to rows under a stream's contract (see the module docstring)."""

    stream: str
    #: The action for fields outside ``columns`` (the contract's ``new_columns``).
    unknown_fields: str
    #: The data columns the rows are typed into (the written schema's names).
    columns: frozenset[str]
    #: Columns whose type changed and whose values the contract discards.
    changed: Mapping[str, ChangedColumn] = field(default_factory=dict)

    @classmethod
    def of(cls, stream: str, contract: SchemaContract, written: pa.Schema,
           changes: Sequence[SchemaChange]) -> RowContract | None:
        """The rows' contract, or None when it leaves every row as today's typing does."""
        changed = {c.top_column: ChangedColumn(c.action, c.stream_type or "", c.table_type or "")
                   for c in changes if c.kind == "type_change" and c.top_column
                   and c.action in ("discard_row", "discard_value")}
        if contract.new_columns == "evolve" and not changed:
            return None
        return cls(stream, contract.new_columns, frozenset(written.names) - {RESCUED},
                   {k: v for k, v in changed.items() if k is not None})

    # ------------------------------------------------------------------ reasons

    def _unknown_reason(self, name: str) -> str:
        return (f"new column {name}, not in the table: "
                f"{'row kept out' if self.unknown_fields == 'discard_row' else 'value discarded'}"
                f" by schema_contract new_columns: {self.unknown_fields}")

    def _changed_reason(self, name: str, change: ChangedColumn) -> str:
        what = "row kept out" if change.action == "discard_row" else "value discarded"
        return (f"column {name} changed type (the stream's {change.stream_type}, the table's "
                f"{change.table_type}): {what} by schema_contract type_changes: {change.action}")

    def _frozen(self, name: str, value: Any) -> SchemaContractError:
        return SchemaContractError(
            f"schema contract broken: stream {self.stream}: new column {name} "
            f"({_json_type(value)}), not in the table; the contract freezes new_columns. "
            "The checkpoint was not committed and no state moved",
            stream=self.stream, column=name, stream_type=_json_type(value),
            table_type="(no such column)")

    # ------------------------------------------------------------------ Arrow batches

    def apply_to_batch(self, batch: pa.RecordBatch, tally: Tally) -> pa.RecordBatch:
        """``batch`` under the contract (rows kept out are counted in ``tally``)."""
        names = batch.schema.names
        extras = [n for n in names if n not in self.columns and n != READER_NOTES
                  and n != RESCUED] if self.unknown_fields != "evolve" else []
        changed = [n for n in names if n in self.changed]
        if not extras and not changed:
            return batch
        rows = batch.num_rows
        notes: dict[int, list[Note]] = {}
        out = np.zeros(rows, dtype=bool)
        drop: set[str] = set()
        for name in changed:
            column = batch.column(name)
            valid = _valid(column)
            if not valid.any():
                continue
            change = self.changed[name]
            reason = self._changed_reason(name, change)
            if change.action == "discard_row":
                tally.add(reason, int((valid & ~out).sum()))
                out |= valid
            else:
                _note_values(notes, name, reason, column, valid)
                drop.add(name)
        rescued: dict[str, pa.Array] = {}
        for name in extras:
            column = batch.column(name)
            valid = _valid(column)
            drop.add(name)
            if not valid.any():
                continue
            if self.unknown_fields == "freeze":
                raise self._frozen(name, column[int(np.argmax(valid))].as_py())
            if self.unknown_fields == "rescue":
                rescued[name] = column
            elif self.unknown_fields == "discard_row":
                tally.add(self._unknown_reason(name), int((valid & ~out).sum()))
                out |= valid
            else:  # discard_value
                _note_values(notes, name, self._unknown_reason(name), column, valid)
        kept = [n for n in names if n not in drop and n != READER_NOTES]
        arrays = [batch.column(n) for n in kept]
        fields = [batch.schema.field(n) for n in kept]
        if self.unknown_fields == "rescue" and rows:
            arrays.append(rescued_column(rescued) if rescued else pa.nulls(rows, pa.string()))
            fields.append(pa.field(RESCUED, pa.string()))
        given = batch.column(READER_NOTES).to_pylist() if READER_NOTES in names else None
        if notes or given is not None:
            merged = [([*(given[row] or [])] if given else []) + notes.get(row, [])
                      for row in range(rows)]
            arrays.append(pa.array([m or None for m in merged], NOTES_TYPE))
            fields.append(pa.field(READER_NOTES, NOTES_TYPE))
        result = pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))
        return result.filter(pa.array(~out)) if out.any() else result

    # ------------------------------------------------------------------ dict records

    def apply_to_records(self, records: Sequence[Any], tally: Tally) -> list[Any]:
        """``records`` under the contract (rows kept out are counted in ``tally``)."""
        keys: set[str] = set()
        for record in records:
            if isinstance(record, Mapping):
                keys.update(record.keys())
        # Under ``evolve`` the typing notes unknown fields as it always did.
        extras = (keys - self.columns - {READER_NOTES, RESCUED}
                  if self.unknown_fields != "evolve" else set())
        changed = keys & self.changed.keys()
        if not extras and not changed:
            return list(records)
        kept: list[Any] = []
        for record in records:
            if not isinstance(record, Mapping):
                kept.append(record)
                continue
            result = self._record(record, extras, changed, tally)
            if result is not None:
                kept.append(result)
        return kept

    def _record(self, record: Mapping[str, Any], extras: set[str], changed: set[str],
                tally: Tally) -> dict[str, Any] | None:
        here = [n for n in record if n in extras and record[n] is not None]
        hit = [n for n in record if n in changed and record[n] is not None]
        if not here and not hit:
            return {k: v for k, v in record.items() if k not in extras}
        for name in hit:
            change = self.changed[name]
            if change.action == "discard_row":
                tally.add(self._changed_reason(name, change), 1)
                return None
        if here and self.unknown_fields == "freeze":
            raise self._frozen(here[0], record[here[0]])
        if here and self.unknown_fields == "discard_row":
            tally.add(self._unknown_reason(here[0]), 1)
            return None
        notes: list[Note] = list(record.get(READER_NOTES) or [])
        for name in hit:
            notes.append(_note(name, self._changed_reason(name, self.changed[name]),
                               record[name]))
        out = {k: v for k, v in record.items()
               if k not in extras and k not in hit and k != READER_NOTES}
        if self.unknown_fields == "rescue":
            out[RESCUED] = _rescued_text({n: record[n] for n in here})
        else:
            notes += [_note(n, self._unknown_reason(n), record[n]) for n in here]
        if notes:
            out[READER_NOTES] = notes
        return out


def _valid(column: pa.Array | pa.ChunkedArray) -> np.ndarray[Any, Any]:
    return np.asarray(pc.is_valid(column).to_numpy(zero_copy_only=False), dtype=bool)


def _note(name: str, reason: str, value: Any) -> Note:
    text = note_text(value)
    if len(text) > MAX_NOTE_VALUE:
        text = text[:MAX_NOTE_VALUE] + "…"
    return {"field": name, "reason": reason, "value": text}


def _note_values(notes: dict[int, list[Note]], name: str, reason: str,
                 column: pa.Array, valid: np.ndarray[Any, Any]) -> None:
    rows = np.flatnonzero(valid)
    for row, value in zip(rows, column.filter(pa.array(valid)).to_pylist(), strict=True):
        notes.setdefault(int(row), []).append(_note(name, reason, value))


def _rescued_text(fields: Mapping[str, Any]) -> str | None:
    """Unknown fields as one JSON object (sorted keys), or None when there are none."""
    if not fields:
        return None
    return json_numbers.dumps(dict(fields), default=str, sort_keys=True)


def _json_type(value: Any) -> str:
    """A value's JSON type, as a stream would declare it (``object``, ``integer``)."""
    kind = kind_of(value)
    return {"mapping": "object", "list": "array"}.get(kind, kind)


__all__ = ["ChangedColumn", "RowContract", "Tally"]
