"""Delta Lake destination (the default)."""

from headwater.destinations.delta._destination import DeltaDestination

__all__ = ["DeltaDestination"]
