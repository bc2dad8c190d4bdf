"""Reading a stream's table back, following its manifests: pyarrow and nothing else.

What ``read_table`` does is what any reader must do (``docs/destinations/files.md``
shows the same in a few lines of plain pyarrow): list ``_manifests``, keep the
current ones (``_manifests.current``: from the last ``replace`` on), read each
named file with its manifest's Arrow schema and concatenate.  Files no manifest
names are never read.  JSON Lines is read with pyarrow's JSON reader given the
schema (dates and bytes read as text first, then cast and base64-decoded: the
reader takes neither from a JSON string); CSV with pyarrow's CSV reader, the
schema's types given, a null being an empty unquoted field.  CSV has no nested
values: a struct or list column comes back as the JSON text the file holds.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.json as pjson
import pyarrow.parquet as pq

from headwater.destinations.files._manifests import MANIFESTS, Log, Manifest, current

if TYPE_CHECKING:
    import pyarrow.fs as pafs

#: pyarrow's JSON reader reads a block at a time and a line must fit in one: 64 MiB.
_JSON_BLOCK = 64 * 2**20


def read_table(path: str, stream: str, *, filesystem: pafs.FileSystem | None = None) -> pa.Table:
    """The stream's table under ``path`` as a reader following its manifests sees it now.

    ``path`` is the destination's ``path`` (a local folder, or an object-store URI
    pyarrow resolves, with credentials from the environment); ``filesystem``
    reaches it instead when given (``path`` then in that filesystem's terms).
    Empty (no columns) when nothing was committed yet.
    """
    from pyarrow import fs as pafs

    if filesystem is None:
        filesystem, path = pafs.FileSystem.from_uri(path) if "://" in path else (
            pafs.LocalFileSystem(), path)
    folder = f"{path.rstrip('/')}/{stream}"
    manifests = current(stream_log(filesystem, folder).manifests())
    tables = [read_file(filesystem, f"{folder}/{listed.path}", manifest)
              for manifest in manifests for listed in manifest.files]
    if not tables:
        return manifests[-1].schema.empty_table() if manifests else pa.table({})
    return pa.concat_tables(tables, promote_options="permissive")


def stream_log(filesystem: pafs.FileSystem, folder: str) -> Log:
    """The log of the stream in ``folder``, for reading."""
    from pyarrow import fs as pafs

    def names() -> list[str]:
        selector = pafs.FileSelector(f"{folder}/{MANIFESTS}", allow_not_found=True)
        return [info.base_name for info in filesystem.get_file_info(selector)
                if info.type == pafs.FileType.File]

    def read(relative: str) -> str | None:
        try:
            with filesystem.open_input_stream(f"{folder}/{relative}") as found:
                return bytes(found.read()).decode("utf-8")
        except FileNotFoundError:
            return None

    def refuse(relative: str, text: str) -> bool:
        raise PermissionError("a reader does not write manifests")

    return Log(names, read, refuse)


def read_file(filesystem: pafs.FileSystem, path: str, manifest: Manifest) -> pa.Table:
    """One data file ``manifest`` names, typed by its schema."""
    schema = manifest.schema
    if manifest.format == "parquet":
        return pq.read_table(path, filesystem=filesystem, schema=schema)
    codec = None if manifest.compression == "none" else manifest.compression
    with filesystem.open_input_stream(path, compression=codec) as stream:
        if manifest.format == "csv":
            return _from_text(pcsv.read_csv(stream, convert_options=pcsv.ConvertOptions(
                column_types=_csv_types(schema), null_values=[""], strings_can_be_null=True,
                quoted_strings_can_be_null=False)), schema, nested_as_text=True)
        return _from_text(pjson.read_json(
            stream, read_options=pjson.ReadOptions(block_size=_JSON_BLOCK),
            parse_options=pjson.ParseOptions(explicit_schema=_json_types(schema))), schema,
            nested_as_text=False)


def read_schema(manifest: Manifest) -> pa.Schema:
    """The schema :func:`read_file` returns a file of ``manifest`` in: the manifest's,
    but a nested column of CSV as its JSON text, bytes inside JSON's nested values as
    base64 text."""
    if manifest.format == "parquet":
        return manifest.schema
    nested_as_text = manifest.format == "csv"
    return pa.schema([pa.field(f.name, _target(f.type, nested_as_text=nested_as_text))
                      for f in manifest.schema])


def _nested(kind: pa.DataType) -> bool:
    return pa.types.is_struct(kind) or pa.types.is_list(kind) or pa.types.is_large_list(kind) \
        or pa.types.is_map(kind) or pa.types.is_fixed_size_list(kind)


def _binary(kind: pa.DataType) -> bool:
    return pa.types.is_binary(kind) or pa.types.is_large_binary(kind)


def _as_read(kind: pa.DataType) -> pa.DataType:
    """``kind`` as pyarrow's JSON reader can take it from the file: dates and bytes as text."""
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _as_read(f.type)) for f in kind])
    if pa.types.is_list(kind):
        return pa.list_(_as_read(kind.value_type))
    if pa.types.is_date(kind) or _binary(kind):
        return pa.string()
    return kind


def _json_types(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, _as_read(f.type)) for f in schema])


def _csv_types(schema: pa.Schema) -> dict[str, pa.DataType]:
    return {f.name: pa.string() if _nested(f.type) or _binary(f.type) else f.type
            for f in schema}


def _target(kind: pa.DataType, *, nested_as_text: bool) -> pa.DataType:
    """What a column of ``kind`` is returned as: itself, but JSON text for a nested CSV
    column, and base64 text for bytes inside a struct or list (decoded at the top only)."""
    if _nested(kind):
        return pa.string() if nested_as_text else _as_read_bytes(kind)
    return kind


def _as_read_bytes(kind: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _as_read_bytes(f.type)) for f in kind])
    if pa.types.is_list(kind):
        return pa.list_(_as_read_bytes(kind.value_type))
    return pa.string() if _binary(kind) else kind


def _from_text(table: pa.Table, schema: pa.Schema, *, nested_as_text: bool) -> pa.Table:
    columns = []
    for field in schema:
        column = table.column(field.name)
        if _binary(field.type):
            column = pa.chunked_array(
                [pa.array([None if v is None else base64.b64decode(v)
                           for v in column.to_pylist()], field.type)], field.type)
        columns.append(column.cast(_target(field.type, nested_as_text=nested_as_text)))
    return pa.table(columns, names=schema.names)


__all__ = ["read_file", "read_schema", "read_table", "stream_log"]
