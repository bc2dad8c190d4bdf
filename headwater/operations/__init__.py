"""What the CLI and the web page (``headwater ui``) both do, outside either of them.

The commands in :mod:`headwater.cli` and the page's server in
:mod:`headwater.ui` call these, so an action taken on the page is the CLI's
action through the same code: where the metadata store is, Spark settings,
a sync as ``headwater sync`` runs it (:func:`start_engine`, the one place a
run's engine is built, and :func:`run_sync`), validation problems as ``headwater
validate`` words them, a run's per-stream and per-partition figures as
``headwater runs show`` reads them.
"""

from headwater.operations._run_detail import commit_id_key, partition_rows, stream_rows
from headwater.operations._settings import (
    HOME_ENV,
    STORE_ENV,
    check_store_url,
    home,
    open_store,
    open_store_to_change,
    open_store_to_read,
    shared_session_settings,
    spark_conf,
    spark_settings,
    store_url,
)
from headwater.operations._sync_runner import run_sync, start_engine, store_last_started
from headwater.operations._validation import (
    connection_files,
    validate_file,
    validated_file,
)

__all__ = [
    "HOME_ENV",
    "STORE_ENV",
    "check_store_url",
    "commit_id_key",
    "connection_files",
    "home",
    "open_store",
    "open_store_to_change",
    "open_store_to_read",
    "partition_rows",
    "run_sync",
    "shared_session_settings",
    "spark_conf",
    "spark_settings",
    "start_engine",
    "store_last_started",
    "store_url",
    "stream_rows",
    "validate_file",
    "validated_file",
]
