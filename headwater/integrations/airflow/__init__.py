"""Airflow operator and sensor for Headwater (``pip install 'headwater[airflow]'``).

Airflow users drive Airbyte with an operator that triggers a sync and a
sensor that waits for one; these are the same for Headwater:

* :class:`HeadwaterSyncOperator` runs ``headwater sync CONNECTION --json`` (or
  ``backfill`` / ``replay`` with ``command=``) in a subprocess and returns the
  run summary (pushed to XCom; ``run_id`` is in it).  A subprocess keeps Spark's
  JVM out of the Airflow worker's process, and lets ``headwater`` live in
  another virtual environment (``headwater_bin=``).
* :class:`HeadwaterRunSensor` waits until a run (by ``run_id``, or the newest
  run of a ``connection``) has finished, reading the metadata store; a failed
  run fails the sensor.

A run stopped on request (SIGTERM/SIGINT to ``headwater``) is neither: it
committed what was in flight and the next ``headwater sync`` resumes it under
the same run id.  The operator raises :class:`HeadwaterRunStopped` (an
``AirflowException``: the attempt fails, a retry of a ``sync`` task resumes
the run); the sensor keeps waiting for the resumed run.

Example::

    sync = HeadwaterSyncOperator(task_id="sync_orders",
                                 connection_file="/repo/connections/orders.yaml")
    wait = HeadwaterRunSensor(task_id="wait_orders",
                              metadata_store="postgresql+psycopg://airflow@db/headwater",
                              run_id="{{ ti.xcom_pull('sync_orders')['run_id'] }}")
"""

from headwater.integrations.airflow._operator import HeadwaterRunStopped, HeadwaterSyncOperator
from headwater.integrations.airflow._sensor import HeadwaterRunSensor

__all__ = ["HeadwaterRunSensor", "HeadwaterRunStopped", "HeadwaterSyncOperator"]
