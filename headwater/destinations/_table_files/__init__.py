"""A table's files, shared by every destination that writes Parquet from the executors.

Delta Lake and Iceberg both take the task path: each Spark task writes its
checkpoint's Parquet files itself (pyarrow, :mod:`._parquet`) into the table's
folder, a local one or a prefix of an object store (S3, Azure: :mod:`._store`,
:mod:`._azure`), and the driver commits the files in the table format's own way.
``headwater check`` reaches the same stores first (:mod:`._s3_check`,
:mod:`._azure_check`).  None of this is Delta's or Iceberg's: it lives here so a
destination imports this package and never another destination's modules
(``tests/unit/test_import_graph.py`` holds every destination to that).

Why this name: it says what the code is about (the files of a table and where they
are) for a newcomer looking for "where are Parquet files written" or "how is S3
reached"; ``_files`` would read like the ``files`` destination's own folder, and a
top-level ``headwater/object_store`` would hide that the Parquet writer (with
Delta's per-file statistics) is the destinations' business, not the sources'.

The modules are imported directly (``headwater.destinations._table_files._store``):
this ``__init__`` re-exports nothing, so importing one of them loads no pyarrow
that it does not need.
"""
