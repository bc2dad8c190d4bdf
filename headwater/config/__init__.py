"""Connection files, connector config validation and secret masking.

The one public surface of ``headwater.config``; the modules behind it are
private.  Typical use by the engine::

    connection = load_connection("connections/quickstart.yaml")
    config = validate_config(spec, connection.source.config,
                             where="source.config", source_lines=connection.field_lines)
    register_secrets(secret_values(spec, config))
    install_log_masking()
"""

from headwater.config._connection import load_connection
from headwater.config._database_urls import read_database_url
from headwater.config._interpolation import interpolate
from headwater.config._lineage import LineageConfig
from headwater.config._models import (
    CheckpointConfig,
    ConnectionConfig,
    ConnectorRef,
    DestinationSyncMode,
    HookConfig,
    RetryConfig,
    SparkConfig,
    StreamConfig,
    SyncMode,
)
from headwater.config._secrets import (
    MIN_SECRET_LENGTH,
    REDACTED,
    SecretMaskingFilter,
    install_log_masking,
    mask,
    mask_obj,
    mask_uri_passwords,
    redact,
    register_secrets,
    register_spark_conf_secrets,
    secret_paths,
    secret_values,
    uri_passwords,
)
from headwater.config._spec_validation import validate_config

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "CheckpointConfig",
    "ConnectionConfig",
    "ConnectorRef",
    "DestinationSyncMode",
    "HookConfig",
    "LineageConfig",
    "RetryConfig",
    "SecretMaskingFilter",
    "SparkConfig",
    "StreamConfig",
    "SyncMode",
    "install_log_masking",
    "interpolate",
    "load_connection",
    "mask",
    "mask_obj",
    "mask_uri_passwords",
    "read_database_url",
    "redact",
    "register_secrets",
    "register_spark_conf_secrets",
    "secret_paths",
    "secret_values",
    "uri_passwords",
    "validate_config",
]
