"""Airbyte source connectors (Python packages or commands) as Headwater sources."""

from headwater.connectors.airbyte._env import ConnectorEnv, envs_root
from headwater.connectors.airbyte._source import AirbyteSource, AirbyteSourceStream

__all__ = ["AirbyteSource", "AirbyteSourceStream", "ConnectorEnv", "envs_root"]
