"""The MySQL/MariaDB source's config: one pydantic model gives both the spec and the parsing."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, SecretStr, WithJsonSchema

__all__ = ["MySQLConfig"]


class MySQLConfig(BaseModel):
    """Config of the ``mysql`` source; ``password`` is a secret and never prints."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, title="MySQL / MariaDB source",
        json_schema_extra={"description": "Tables and views of one MySQL 8 or MariaDB 10.6+ "
                           "database, read in parallel key ranges cut at the primary key's "
                           "quantiles, incrementally on a cursor column, or by change data "
                           "capture from the binary log."})

    host: str = Field("127.0.0.1", description="Server host name or address.")
    port: Annotated[int, Field(ge=1, le=65535)] = 3306
    database: str = Field(..., description="Database (schema) whose tables are streams.")
    username: str = Field(..., description="User to connect as.")
    password: Annotated[
        SecretStr | None,
        WithJsonSchema({"type": "string", "airbyte_secret": True,
                        "description": "Password of the user."}),
    ] = None
    tables: list[str] = Field([], description="Tables and views to read (default: all the "
                              "user may select).")
    cursor_fields: dict[str, str] = Field(
        {}, description="Cursor column per stream for incremental reads, e.g. "
        "{orders: updated_at}; the column must be an integer, DATETIME or TIMESTAMP.")
    partition_columns: dict[str, str] = Field(
        {}, description="Integer or text column to split a stream's full refresh by "
        "(default: its single integer or text primary key column).")
    rows_per_partition: Annotated[int, Field(ge=1)] = Field(
        500_000, description="About how many rows one partition reads.")
    max_partitions: Annotated[int, Field(ge=1)] = Field(
        64, description="Upper bound of partitions per stream and sync.")
    boundary_keys_limit: Annotated[int, Field(ge=0)] = Field(
        10_000, description="Most primary keys an incremental stream keeps in its state for "
        "the rows at the top cursor value, so the next sync reads only the rows new at that "
        "value (exactly once under append).")
    replication_method: Literal["standard", "cdc"] = Field(
        "standard", description="standard: full refresh or a cursor column; cdc: change data "
        "capture from the binary log (binlog_format=ROW, binlog_row_image=FULL, REPLICATION "
        "SLAVE and REPLICATION CLIENT), every table with a primary key: a snapshot in key "
        "ranges, then the changes.")

    def url(self) -> str:
        """A ``mysql://`` URL for connectorx (user and password percent-encoded, never logged)."""
        auth = quote(self.username, safe="")
        if self.password is not None:
            auth += ":" + quote(self.password.get_secret_value(), safe="")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"mysql://{auth}@{host}:{self.port}/{quote(self.database, safe='')}"
