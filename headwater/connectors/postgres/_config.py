"""The PostgreSQL source's config: one pydantic model gives both the spec and the parsing."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, SecretStr, WithJsonSchema

from headwater._libpq import connect_kwargs

__all__ = ["CdcSettings", "PostgresConfig"]


class CdcSettings(BaseModel):
    """Where change data capture reads from: a publication and a logical replication slot."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    publication: str = Field("headwater", description="Publication listing the tables to capture "
                             "(created FOR the selected tables when missing).")
    slot: str = Field("headwater", description="Logical replication slot (pgoutput), created "
                      "when missing; advanced only after the data it covers is committed.")


class PostgresConfig(BaseModel):
    """Config of the ``postgres`` source; ``password`` is a secret and never prints."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, title="PostgreSQL source",
        json_schema_extra={"description": "Tables and views of one PostgreSQL database, read "
                           "in parallel key ranges, incrementally on a cursor column, or by "
                           "change data capture (logical replication, pgoutput)."})

    host: str = Field("127.0.0.1", description="Server host name or address.")
    port: Annotated[int, Field(ge=1, le=65535)] = 5432
    database: str = Field(..., description="Database name.")
    username: str = Field(..., description="Role to connect as.")
    password: Annotated[
        SecretStr | None,
        WithJsonSchema({"type": "string", "airbyte_secret": True,
                        "description": "Password of the role."}),
    ] = None
    sslmode: Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] = \
        "prefer"
    schemas: list[str] = Field(["public"], description="Schemas whose tables and views are "
                               "streams.")
    cursor_fields: dict[str, str] = Field(
        {}, description="Cursor column per stream for incremental reads, e.g. "
        "{events: register_time}; the column must be an integer, timestamp or timestamptz.")
    partition_columns: dict[str, str] = Field(
        {}, description="Column to split a stream's full refresh by (default: its single "
        "integer primary key column).")
    rows_per_partition: Annotated[int, Field(ge=1)] = Field(
        500_000, description="About how many rows one partition reads.")
    max_partitions: Annotated[int, Field(ge=1)] = Field(
        64, description="Upper bound of partitions per stream and sync.")
    boundary_keys_limit: Annotated[int, Field(ge=0)] = Field(
        10_000, description="Most primary keys an incremental stream keeps in its state for "
        "the rows at the top cursor value, so the next sync reads only the rows new at that "
        "value (exactly once under append). More rows than this at the top value: an append "
        "leaves that value to a later sync.")
    json_as: Literal["text", "variant"] = Field(
        "text", description="How json and jsonb columns land: text (their JSON text, the "
        "default, which every reader of the table can read) or variant (typed JSON: a VARIANT "
        "column, queried with variant_get or col:path; needs Spark 4 / Delta 4 to read).")
    replication_method: Literal["standard", "cdc"] = Field(
        "standard", description="standard: full refresh or a cursor column; cdc: logical "
        "replication (pgoutput), every table with a primary key.")
    cdc: CdcSettings = Field(default_factory=lambda: CdcSettings.model_validate({}))

    def conninfo(self) -> str:
        """A libpq URI for psycopg and ADBC (the password is percent-encoded, never logged)."""
        auth = quote(self.username, safe="")
        if self.password is not None:
            auth += ":" + quote(self.password.get_secret_value(), safe="")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return (f"postgresql://{auth}@{host}:{self.port}/{quote(self.database, safe='')}"
                f"?sslmode={self.sslmode}&application_name=headwater")

    def kwargs(self) -> dict[str, Any]:
        """psycopg ``connect`` keywords (no URI parsing, so nothing is mis-quoted)."""
        return connect_kwargs(host=self.host, port=self.port, database=self.database,
                              username=self.username, sslmode=self.sslmode,
                              password=None if self.password is None
                              else self.password.get_secret_value())
