"""Airflow's base classes, from where each major version keeps them."""

from __future__ import annotations

try:
    from airflow.exceptions import AirflowException
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the Airflow integration needs Airflow: pip install 'headwater[airflow]'"
                      ) from exc

try:  # Airflow 3
    from airflow.sdk import BaseOperator, BaseSensorOperator
except ImportError:  # Airflow 2
    from airflow.models import BaseOperator
    from airflow.sensors.base import BaseSensorOperator

__all__ = ["AirflowException", "BaseOperator", "BaseSensorOperator"]
