"""The engine's side of schema contracts: each stream checked before a run is recorded.

Why at plan time: a ``freeze`` the stream's schema already shows must fail the
sync before any stream commits anything (streams run side by side), and a new
table the contract keeps out must not be read at all, its state left where it
is, so that relaxing the contract later syncs it from the start.  The rows'
part runs in the tasks (:mod:`headwater.schema_contracts._rows`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from headwater.errors import HeadwaterError
from headwater.metadata_store import SUCCEEDED_STATUSES
from headwater.schema_contracts import ContractCheck, check_stream, refuse_frozen
from headwater.table_schema import arrow_schema_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.engine._sync import SyncEngine
    from headwater.plan import ConfiguredStream

log = logging.getLogger("headwater.engine._sync")

#: How many of a connection's latest runs are looked at for one that succeeded.
_RUNS_LOOKED_AT = 100


def connection_synced(engine: SyncEngine) -> bool:
    """Whether the connection has synced before (a run of it succeeded): only then is a
    stream without a table a *new* table (a first sync creates them all, as in dlt)."""
    runs = engine.store.list_runs(engine.connection.name, limit=_RUNS_LOOKED_AT)
    return any(run.status in SUCCEEDED_STATUSES for run in runs)


def stream_contract(engine: SyncEngine, configured: ConfiguredStream, *,
                    spark: SparkSession | None, synced: bool | None = None) -> ContractCheck:
    """``configured``'s contract against its table as it is now."""
    contract = engine.connection.schema_contract_of(configured.name)
    schema = arrow_schema_for(engine.source.stream(configured.name).json_schema(),
                              configured.json_columns)
    if contract.evolves:
        return ContractCheck(schema)
    return check_stream(engine.destination, configured.name, schema, contract,
                        connection_synced=connection_synced(engine) if synced is None
                        else synced, spark=spark)


def describe_changes(engine: SyncEngine, configured: ConfiguredStream) -> dict[str, Any]:
    """``schema_changes`` (each change with its action) for ``headwater plan``, read
    without Spark; ``None`` and ``schema_changes_unknown`` where that cannot be read."""
    try:
        check = stream_contract(engine, configured, spark=None)
    except HeadwaterError as exc:
        return {"schema_changes": None, "schema_changes_unknown": str(exc)}
    except Exception as exc:  # a table the plan could not read: the sync will say more
        return {"schema_changes": None,
                "schema_changes_unknown": f"{type(exc).__name__}: {exc}"}
    return {"schema_changes": [change.to_dict() for change in check.changes]}


def held_to_contracts(engine: SyncEngine, streams: Sequence[ConfiguredStream],
                      spark: SparkSession) -> list[ConfiguredStream]:
    """``streams`` less those whose new table the contract keeps out; raises
    :class:`~headwater.errors.SchemaContractError` for a change a contract freezes,
    naming every one, before anything of the run is recorded or committed."""
    if all(engine.connection.schema_contract_of(s.name).evolves for s in streams):
        return list(streams)
    synced = connection_synced(engine)
    checks = {s.name: stream_contract(engine, s, spark=spark, synced=synced) for s in streams}
    refuse_frozen([change for check in checks.values() for change in check.changes])
    kept = []
    for configured in streams:
        skipped = checks[configured.name].skipped
        if skipped is not None:
            log.warning("stream %s: its table does not exist and the connection has synced "
                        "before: a new table, kept out of this run by schema_contract "
                        "new_tables: %s (not read; its state does not move)",
                        configured.name, skipped.action)
            continue
        kept.append(configured)
    return kept


__all__ = ["connection_synced", "describe_changes", "held_to_contracts", "stream_contract"]
