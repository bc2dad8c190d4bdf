"""Headwater: incremental, exactly-once ingestion into lakehouse tables, run as Spark jobs.

The public surface is small: connector authors import from :mod:`headwater.sdk`;
programs that drive syncs import from here.
"""

from headwater.errors import (
    AuthenticationError,
    CommitOutcomeUnknown,
    ConfigError,
    ConnectionLockedError,
    ConnectorError,
    DestinationError,
    ExitCode,
    HeadwaterError,
    SpecValidationError,
    StateError,
)

__version__ = "0.1.0"

__all__ = [
    "AuthenticationError",
    "CommitOutcomeUnknown",
    "ConfigError",
    "ConnectionLockedError",
    "ConnectorError",
    "DestinationError",
    "ExitCode",
    "HeadwaterError",
    "SpecValidationError",
    "StateError",
    "__version__",
]
