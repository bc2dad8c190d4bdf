"""The built-in ``sample`` source: a deterministic world of users and orders, no server needed."""

from headwater.connectors.sample._source import (
    OrdersStream,
    SampleConfig,
    SampleSource,
    SampleStream,
    UsersStream,
)

__all__ = ["OrdersStream", "SampleConfig", "SampleSource", "SampleStream", "UsersStream"]
