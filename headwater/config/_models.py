"""The connection file's models: one YAML file, meant to live in git, describing one
connection (loaded by :func:`~headwater.config.load_connection`)::

    name: quickstart                  # optional, default: the file name without suffix
    source:
      type: sample
      config: {users: 1000, api_key: "${SAMPLE_API_KEY}"}
    destination:                      # optional, default: delta with its defaults
      type: delta
      config: {path: ./lakehouse}
    streams:                          # optional, default: every stream, full_refresh + overwrite
      - name: users
        sync_mode: incremental
        destination_sync_mode: append_dedup
        cursor_field: updated_at      # optional: the source's default
        primary_key: [id]             # optional: the source's default
        partition_by: [country]       # optional: the table's layout, or cluster_by: [...]
        table_properties: {delta.appendOnly: "false"}   # optional
    spark: {master: "local[*]", conf: {spark.sql.shuffle.partitions: "8"}}
    metadata_store: sqlite:///.headwater/headwater.db
    checkpoint: {partitions_per_checkpoint: 8, concurrent_checkpoints: 2}
    lineage: {url: http://marquez:5000, namespace: prod}   # optional: OpenLineage events

Every model forbids unknown fields, so a typo is an error rather than a
setting silently ignored.  Relative paths inside the file (a Delta folder, a
SQLite URL) are *not* rewritten: like any command-line path they resolve
against the current working directory of the process that runs the sync,
which is what spark-submit and cluster deployments expect.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from headwater.config._lineage import LineageConfig
from headwater.config._paths import line_of
from headwater.config._schema_contract import EVOLVE, SchemaContract
from headwater.config._secrets import register_spark_conf_secrets
from headwater.errors import ConfigError
from headwater.expectations._config import ExpectationConfig, expectations_problem
from headwater.partition_terms import parse_term
from headwater.sync_modes import DestinationSyncMode, SyncMode

_NAME = re.compile(r"[A-Za-z0-9_.-]+")


class ConnectorRef(BaseModel):
    """A connector by name plus its config; the config is checked later against its spec.

    The config may hold secrets, so it is left out of ``repr``.
    """

    model_config = ConfigDict(extra="forbid")

    type: str = Field(min_length=1)
    config: dict[str, Any] = Field(default_factory=dict, repr=False)

    @field_validator("config", mode="before")
    @classmethod
    def _empty_config(cls, value: Any) -> Any:
        # ``config:`` with nothing under it is YAML null: read it as "no settings".
        return {} if value is None else value


#: What a stream that committed everything but looks wrong does to its sync
#: (:func:`headwater.engine._results.stream_warnings`): ``warn``: the stream and the run are
#: ``warned`` (exit code 4); ``fail``: the stream is ``failed`` and so the run (exit code 1).
OnWarning = Literal["warn", "fail"]


#: The destination sync modes that keep rows by primary key (and so need one).
_KEYED = (DestinationSyncMode.APPEND_DEDUP, DestinationSyncMode.HISTORY)


class StreamConfig(BaseModel):
    """One configured stream: which sync mode, and what the file overrides of the source.

    ``destination_sync_mode`` defaults from ``sync_mode``: ``overwrite`` for
    full refresh, ``append`` for incremental.  ``cursor_field`` and
    ``primary_key`` left as ``None`` mean "the source's default"; call
    :meth:`resolve` once the source's catalog is known.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    sync_mode: SyncMode = SyncMode.FULL_REFRESH
    destination_sync_mode: DestinationSyncMode = DestinationSyncMode.OVERWRITE
    cursor_field: str | None = Field(default=None, min_length=1)
    primary_key: list[str] | None = None
    #: Columns stored as JSON text, exactly as the source wrote each value where the
    #: reader has its bytes, instead of VARIANT (open values) or structs (objects
    #: with properties).  Checked against the stream's schema once it is known.
    json_columns: list[str] = Field(default_factory=list)
    #: The table's layout, applied when the destination creates it: Hive-style
    #: partitions, or (not both) Delta's liquid clustering, on these columns.
    #: ``partition_by`` also takes Iceberg transforms (``days(ts)``, ``bucket(16, id)``:
    #: :mod:`headwater.partition_terms`) for the Iceberg destination.
    partition_by: list[str] = Field(default_factory=list)
    cluster_by: list[str] = Field(default_factory=list)
    #: Table properties (``TBLPROPERTIES``): set at creation, and on an existing
    #: table where it lacks one or holds another value.  Values are strings as the
    #: table keeps them; numbers and booleans in the file become ``"8"`` / ``"true"``.
    table_properties: dict[str, str] = Field(default_factory=dict)
    #: This stream's :attr:`ConnectionConfig.on_warning` (``None``: the connection's).
    on_warning: OnWarning | None = None
    #: What a sync does when this stream's schema changed (``None``: the connection's);
    #: ``docs/schema-contracts.md``.
    schema_contract: SchemaContract | None = None
    #: Named checks of each row and what a failing row does (:mod:`headwater.expectations`).
    expectations: list[ExpectationConfig] = Field(default_factory=list)
    #: What an ``append_dedup`` stream's CDC deletes (rows whose ``_hw_deleted`` or
    #: ``_pg_deleted`` is true) do to its key's row: ``soft`` keeps it, flagged (the
    #: default); ``hard`` deletes it in the checkpoint's commit (``docs/history.md``).
    #: A destination that can do one only says which (Kafka: ``hard``, a tombstone), and
    #: the other is refused when the sync starts.
    deletes: Literal["soft", "hard"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_destination_sync_mode(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "destination_sync_mode" not in data:
            incremental = data.get("sync_mode") == SyncMode.INCREMENTAL.value
            default = DestinationSyncMode.APPEND if incremental else DestinationSyncMode.OVERWRITE
            return {**data, "destination_sync_mode": default.value}
        return data

    @field_validator("primary_key", mode="before")
    @classmethod
    def _single_column_key(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("json_columns", "partition_by", "cluster_by", mode="before")
    @classmethod
    def _single_column(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("json_columns", "partition_by", "cluster_by")
    @classmethod
    def _distinct_columns(cls, value: list[str], info: ValidationInfo) -> list[str]:
        repeated = sorted({name for name in value if value.count(name) > 1})
        if repeated:
            raise ValueError(f"{info.field_name} lists {', '.join(repeated)} more than once")
        if any(not name for name in value):
            raise ValueError(f"{info.field_name} holds an empty column name")
        return value

    @field_validator("partition_by")
    @classmethod
    def _partition_terms(cls, value: list[str]) -> list[str]:
        # A column, or an Iceberg transform of one (days(ts)); which destination takes
        # transforms is checked when the sync starts, the columns once the schema is known.
        for entry in value:
            parse_term(entry)  # ValueError: says the entry and the expected shape
        return value

    @field_validator("expectations")
    @classmethod
    def _parsed_expectations(cls, value: list[ExpectationConfig],
                             info: ValidationInfo) -> list[ExpectationConfig]:
        problem = expectations_problem(str(info.data.get("name", "?")), value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("table_properties", mode="before")
    @classmethod
    def _properties_as_strings(cls, value: Any) -> Any:
        # A table keeps its properties as text; YAML reads `true` and `8` as other types.
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            return value
        return {key: ("true" if item else "false") if isinstance(item, bool)
                else str(item) if isinstance(item, int | float) else item
                for key, item in value.items()}

    @field_validator("table_properties")
    @classmethod
    def _named_properties(cls, value: dict[str, str]) -> dict[str, str]:
        if any(not key.strip() for key in value):
            raise ValueError("table_properties holds an empty property name")
        return value

    @model_validator(mode="after")
    def _valid_sync_mode(self) -> StreamConfig:
        mode, destination = self.sync_mode, self.destination_sync_mode
        if mode is SyncMode.FULL_REFRESH and destination is DestinationSyncMode.APPEND_DEDUP:
            raise ValueError(
                "full_refresh + append_dedup is not a sync mode: keeping the latest record per "
                "primary key needs a cursor; use incremental + append_dedup, or full_refresh "
                "with overwrite or append"
            )
        if mode is SyncMode.INCREMENTAL and destination is DestinationSyncMode.OVERWRITE:
            raise ValueError(
                "incremental + overwrite is not a sync mode: overwriting with only the changed "
                "records would drop the rest; use incremental + append or append_dedup, or "
                "full_refresh + overwrite"
            )
        if mode is SyncMode.FULL_REFRESH and destination is DestinationSyncMode.HISTORY:
            raise ValueError(
                "full_refresh + history is not a sync mode: a key's versions are opened and "
                "closed in the order of the cursor; use incremental + history"
            )
        if destination in _KEYED and self.primary_key == []:
            raise ValueError(f"{destination} needs a primary key, and primary_key is empty")
        if self.deletes is not None and destination is not DestinationSyncMode.APPEND_DEDUP:
            raise ValueError(
                f"deletes applies to append_dedup streams, and this one is {destination}: "
                "a history stream's deletes close the key's current version (leave deletes out)"
            )
        if self.partition_by and self.cluster_by:
            raise ValueError(
                "partition_by and cluster_by are mutually exclusive: a Delta table is either "
                "partitioned or liquid-clustered; choose one"
            )
        return self

    def resolve(
        self, *, cursor_field: str | None = None, primary_key: Sequence[str] | None = None
    ) -> StreamConfig:
        """This stream with the source's defaults filled in, checked that it can run.

        What the file says wins; ``cursor_field`` and ``primary_key`` are the
        source stream's own (``None`` / empty when it has none).

        Raises:
            ConfigError: incremental without any cursor field, or
                append_dedup without any primary key.
        """
        key = self.primary_key if self.primary_key is not None else primary_key
        resolved = self.model_copy(
            update={
                "cursor_field": self.cursor_field or cursor_field,
                "primary_key": list(key) if key is not None else None,
            }
        )
        if resolved.sync_mode is SyncMode.INCREMENTAL and not resolved.cursor_field:
            raise ConfigError(
                "incremental sync needs a cursor field, and the source gives this stream none: "
                "set cursor_field for the stream in the connection file",
                stream=self.name,
            )
        if resolved.destination_sync_mode in _KEYED and not resolved.primary_key:
            raise ConfigError(
                f"{resolved.destination_sync_mode} needs a primary key, and the source gives "
                "this stream none: "
                "set primary_key for the stream in the connection file",
                stream=self.name,
            )
        return resolved


class SparkConfig(BaseModel):
    """Where syncs run: a master URL (``local[*]``, ``spark://host:7077``) or Spark Connect.

    Both left unset lets the engine (or spark-submit) decide.  ``conf``
    values are strings as Spark wants them; numbers and booleans in the file
    are turned into ``"8"`` and ``"true"``.  ``conf`` may hold credentials
    (``spark.hadoop.fs.s3a.secret.key``), so it is left out of ``repr``.
    """

    model_config = ConfigDict(extra="forbid")

    master: str | None = Field(default=None, min_length=1)
    remote: str | None = Field(default=None, min_length=1)
    conf: dict[str, str] = Field(default_factory=dict, repr=False)
    #: On a local master, when the sync's reads start before Spark (an Airbyte head
    #: start, a REST source's early calls): how much lower Spark's JVM's CPU priority
    #: is (Unix nice, 0-19), so the reads keep the cores; 0: the same priority.
    early_reads_jvm_nice: int = Field(default=5, ge=0, le=19)

    @field_validator("conf", mode="before")
    @classmethod
    def _conf_as_strings(cls, value: Any) -> Any:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            return value
        converted: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(item, bool):
                converted[key] = "true" if item else "false"
            elif isinstance(item, int | float):
                converted[key] = str(item)
            else:
                converted[key] = item
        return converted

    @field_validator("remote")
    @classmethod
    def _spark_connect_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("sc://"):
            raise ValueError("must be a Spark Connect URL like sc://host:15002")
        return value

    @model_validator(mode="after")
    def _one_way_to_connect(self) -> SparkConfig:
        register_spark_conf_secrets(self.conf)
        if self.master and self.remote:
            raise ValueError(
                "master and remote are mutually exclusive: set master to run Spark here or on "
                "a cluster, or remote to use a Spark Connect server"
            )
        elsewhere = self.remote or (self.master and not self.master.startswith("local"))
        if elsewhere and "early_reads_jvm_nice" in self.model_fields_set:
            # The URL is not quoted: a Spark Connect URL may carry a token.
            raise ValueError(
                "early_reads_jvm_nice lowers the priority of a JVM started on this machine for "
                f"a local master, and {'remote' if self.remote else 'master'} runs Spark "
                "elsewhere, so it would never act; remove it")
        return self


class CheckpointConfig(BaseModel):
    """How partitions are grouped into checkpoints (the unit of commit and of state).

    ``partitions_per_checkpoint`` left unset lets the engine choose;
    ``concurrent_checkpoints`` bounds how many batches are written at once.
    """

    model_config = ConfigDict(extra="forbid")

    partitions_per_checkpoint: int | None = Field(default=None, ge=1)
    concurrent_checkpoints: int = Field(default=2, ge=1)


class HookConfig(BaseModel):
    """A command run after each run of the connection (see ``headwater.engine._hooks``).

    ``command`` is a shell string (run by ``/bin/sh -c``) or an argument list;
    ``when`` says after which runs: ``success`` (default), ``failure`` or ``always``;
    or on which change of the connection's health (``headwater serve`` watches it):
    ``late`` (its schedule fired and no run started) or ``stale`` (a stream's data is
    older than ``stale_after_s``), once per change, not after runs; those two need the
    connection's ``schedule`` (serve watches the connections it schedules only).
    In the file a plain string is short for ``{command: <string>}``.
    """

    model_config = ConfigDict(extra="forbid")

    command: str | list[str] = Field(min_length=1)
    when: Literal["success", "failure", "always", "late", "stale"] = "success"
    timeout_s: float = Field(default=3600.0, gt=0)


class RetryConfig(BaseModel):
    """How ``headwater serve`` retries a failed scheduled run: at most ``max_retries``
    times, waiting ``backoff_s`` and doubling the wait each time up to ``max_backoff_s``.
    Given in a file without a ``schedule`` it is refused: nothing would retry."""

    model_config = ConfigDict(extra="forbid")

    max_retries: int = Field(default=3, ge=0)
    backoff_s: float = Field(default=60.0, ge=0)
    max_backoff_s: float = Field(default=3600.0, ge=0)


class ConnectionConfig(BaseModel):
    """A whole connection file, validated.

    ``path`` is the file it was loaded from (``None`` when built in code) and
    is never dumped.  ``streams`` of ``None`` means every stream of the
    source, full_refresh + overwrite.  ``metadata_store`` is a SQLAlchemy URL
    (``None``: the engine's embedded default); it may carry a password, so
    it is left out of ``repr``.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    source: ConnectorRef
    destination: ConnectorRef = Field(default_factory=lambda: ConnectorRef(type="delta"))
    streams: list[StreamConfig] | None = None
    spark: SparkConfig = Field(default_factory=SparkConfig)
    metadata_store: str | None = Field(default=None, repr=False)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    #: Cron expression ``headwater serve`` runs the connection on (5 fields, or 6 with seconds).
    schedule: str | None = None
    retry: RetryConfig = Field(default_factory=RetryConfig)
    #: A stream whose newest committed time cursor is older than this is *stale* (the
    #: page, ``headwater_stream_stale``, ``when: stale`` hooks); ``None``: twice the
    #: schedule's period, and never without a schedule.
    stale_after_s: float | None = Field(default=None, gt=0)
    after_sync: list[HookConfig] = Field(default_factory=list)
    #: What a stream whose every record was rejected, or whose table has columns its
    #: schema no longer has, does to the sync (:data:`OnWarning`); a stream may say
    #: otherwise.  Its records are committed and its state moved either way.
    on_warning: OnWarning = "warn"
    #: What a sync does when a stream's schema changed; a stream may say otherwise
    #: (``docs/schema-contracts.md``).  Default: every change evolves, as before.
    schema_contract: SchemaContract = EVOLVE
    #: Where OpenLineage run events go (:mod:`headwater.config._lineage`); None: the
    #: OpenLineage client's environment decides, or no events.
    lineage: LineageConfig | None = None
    path: Path | None = Field(default=None, exclude=True)

    _field_lines: dict[str, int] = PrivateAttr(default_factory=dict)

    def on_warning_of(self, stream: str) -> OnWarning:
        """``stream``'s own ``on_warning``, else the connection's."""
        for configured in self.streams or ():
            if configured.name == stream and configured.on_warning is not None:
                return configured.on_warning
        return self.on_warning

    def schema_contract_of(self, stream: str) -> SchemaContract:
        """``stream``'s own ``schema_contract``, else the connection's (as a whole)."""
        for configured in self.streams or ():
            if configured.name == stream and configured.schema_contract is not None:
                return configured.schema_contract
        return self.schema_contract

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError(
                "must be letters, digits, '_', '.' or '-' only (it names state, runs and tables)"
            )
        return value

    @field_validator("destination", mode="before")
    @classmethod
    def _delta_by_default(cls, value: Any) -> Any:
        if value is None:
            return {"type": "delta"}
        if isinstance(value, Mapping) and "type" not in value:
            return {"type": "delta", **value}
        return value

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from croniter import croniter  # imported here: only files with a schedule pay

        if not croniter.is_valid(value):
            raise ValueError(
                "is not a cron expression (minute hour day-of-month month day-of-week, "
                "e.g. '0 * * * *' for hourly; a 6th field counts seconds)"
            )
        return value

    @field_validator("after_sync", mode="before")
    @classmethod
    def _hook_shorthand(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, list):
            return [{"command": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("retry")
    @classmethod
    def _retries_need_a_schedule(cls, value: RetryConfig, info: ValidationInfo) -> RetryConfig:
        # Only when the file gives it (a default is not validated): serve retries the runs
        # it schedules, and runs nothing else, so without a schedule it would never act.
        if "schedule" in info.data and info.data["schedule"] is None:
            raise ValueError("is headwater serve's retrying of a failed scheduled run, and "
                             "this connection has no schedule, so it would never act; add "
                             "schedule, or remove retry")
        return value

    @field_validator("after_sync")
    @classmethod
    def _health_hooks_can_fire(cls, value: list[HookConfig],
                               info: ValidationInfo) -> list[HookConfig]:
        # ``headwater serve`` judges late and stale for the connections it schedules only:
        # without a schedule these hooks would be accepted and never run.
        if info.data.get("schedule") is not None or "schedule" not in info.data:
            return value  # scheduled, or a schedule that is wrong (reported on its own)
        for position, hook in enumerate(value):
            if hook.when in ("late", "stale"):
                raise ValueError(
                    f"[{position}].when: {hook.when} needs a schedule: headwater serve watches "
                    "the connections it runs on a schedule for lateness and staleness, so "
                    "without one this hook would never run; add schedule, or use when: "
                    "success, failure or always")
        return value

    @field_validator("spark", "checkpoint", "retry", mode="before")
    @classmethod
    def _null_section(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("streams")
    @classmethod
    def _unique_streams(cls, value: list[StreamConfig] | None) -> list[StreamConfig] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("is empty: leave streams out to sync every stream of the source")
        seen: set[str] = set()
        for stream in value:
            if stream.name in seen:
                raise ValueError(f"stream {stream.name!r} is listed more than once")
            seen.add(stream.name)
        return value

    @field_validator("metadata_store")
    @classmethod
    def _sqlalchemy_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from sqlalchemy.engine import make_url  # imported here: only files that set it pay
        from sqlalchemy.exc import ArgumentError

        try:
            make_url(value)
        except ArgumentError:
            # Not chained into the message: sqlalchemy's repeats the URL and its password.
            raise ValueError(
                "is not a SQLAlchemy URL (for example sqlite:///.headwater/headwater.db or "
                "postgresql+psycopg://user@host/headwater)"
            ) from None
        return value

    @property
    def field_lines(self) -> Mapping[str, int]:
        """File line of every field path in the file (``source.config.users`` -> 5).

        Empty for a connection built in code.  Pass it as ``source_lines`` to
        :func:`validate_config` so spec problems name their line.
        """
        return dict(self._field_lines)

    def field_line(self, field: str) -> int | None:
        """The line of ``field``, or of its nearest ancestor written in the file."""
        return line_of(self._field_lines, field)
