"""Delta Lake destination (the default)."""

from headwater.destinations.delta._destination import DeltaDestination
from headwater.destinations.delta._session import DELTA_JAR_VERSION, DELTA_PACKAGE

__all__ = ["DELTA_JAR_VERSION", "DELTA_PACKAGE", "DeltaDestination"]
