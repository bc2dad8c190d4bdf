"""``HeadwaterRunSensor``: wait for a Headwater run to finish, from the metadata store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from headwater.integrations._outcome import sensor_verdict
from headwater.integrations.airflow._compat import AirflowException, BaseSensorOperator


class HeadwaterRunSensor(BaseSensorOperator):
    """Succeeds when the run has succeeded; fails the task when it failed.

    A ``stopped`` run (asked to stop before it finished) has not failed: the
    next ``headwater sync`` of its connection resumes it under the same run
    id, so the sensor keeps waiting, as for a ``running`` one; its
    ``timeout`` bounds the wait.

    Give ``run_id`` (for instance pulled from the operator's XCom), or
    ``connection`` to wait for that connection's newest run (a sync started
    by ``headwater serve``, by another DAG or by hand).  ``metadata_store`` is
    the store's SQLAlchemy URL, the one the connection file names.
    """

    template_fields: Sequence[str] = ("run_id", "connection", "metadata_store")

    def __init__(self, *, metadata_store: str, run_id: str | None = None,
                 connection: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if (run_id is None) == (connection is None):
            raise ValueError("give exactly one of run_id and connection")
        self.metadata_store = metadata_store
        self.run_id = run_id
        self.connection = connection

    def poke(self, context: Any) -> bool:
        from headwater.metadata_store import MetadataStore

        with MetadataStore(self.metadata_store) as store:
            if self.run_id:
                run = store.get_run(self.run_id)
            else:
                runs = store.list_runs(self.connection, limit=1)
                run = runs[0] if runs else None
        if run is None:
            self.log.info("no run yet (%s)", self.run_id or self.connection)
            return False
        self.log.info("run %s of %s is %s", run.run_id, run.connection, run.status)
        verdict = sensor_verdict(run.status)
        if verdict == "failed":
            raise AirflowException(f"headwater run {run.run_id} {run.status}: {run.error}")
        if run.status == "stopped":
            self.log.info("it stopped before it finished (%s); waiting for the next sync to "
                          "resume it", run.error)
        return verdict == "succeeded"


__all__ = ["HeadwaterRunSensor"]
