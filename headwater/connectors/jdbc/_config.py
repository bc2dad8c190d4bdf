"""The ``jdbc`` source's config: one pydantic model gives both the spec and the parsing."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, SecretStr, WithJsonSchema, model_validator

__all__ = ["JdbcConfig", "TableSettings", "driver_class_for"]

#: The driver class of the usual URL prefixes, so ``driver_class`` may be left out.
_DRIVER_CLASSES = {
    "jdbc:postgresql:": "org.postgresql.Driver",
    "jdbc:mariadb:": "org.mariadb.jdbc.Driver",
    "jdbc:mysql:": "com.mysql.cj.jdbc.Driver",
    "jdbc:sqlserver:": "com.microsoft.sqlserver.jdbc.SQLServerDriver",
    "jdbc:oracle:": "oracle.jdbc.OracleDriver",
    "jdbc:db2:": "com.ibm.db2.jcc.DB2Driver",
    "jdbc:snowflake:": "net.snowflake.client.jdbc.SnowflakeDriver",
    "jdbc:h2:": "org.h2.Driver",
}


def driver_class_for(url: str) -> str | None:
    """The driver class usual for ``url``'s prefix (None: unknown, name it in the config)."""
    return next((cls for prefix, cls in _DRIVER_CLASSES.items() if url.startswith(prefix)),
                None)


class TableSettings(BaseModel):
    """One stream: a table (or a query) of the database."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(..., description="The stream's name.")
    table: str | None = Field(None, description="The table as the database's SQL names it "
                              "(schema.table); default: the stream's name.")
    query: str | None = Field(None, description="A SELECT read instead of a table (Spark "
                              "reads it as a subquery).")
    primary_key: list[str] | None = Field(None, description="Key columns (default: the "
                                          "table's primary key, from the driver's metadata).")
    cursor_field: str | None = Field(None, description="Integer or timestamp column for "
                                     "incremental reads.")
    partition_column: str | None = Field(None, description="Integer or timestamp column a "
                                         "full refresh is split on (default: the single-"
                                         "column primary key when it is one).")

    @model_validator(mode="after")
    def _table_or_query(self) -> TableSettings:
        if self.table is not None and self.query is not None:
            raise ValueError(f"stream {self.name}: give table or query, not both")
        if self.cursor_field is not None and self.partition_column is not None:
            raise ValueError(f"stream {self.name}: partition_column: the stream is read in "
                             "windows of its cursor_field, so the column would split nothing; "
                             "remove one of them")
        return self


class JdbcConfig(BaseModel):
    """Config of the ``jdbc`` source; ``password`` is a secret and never prints."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, title="JDBC source",
        json_schema_extra={"description": "Tables of any database with a JDBC driver on "
                           "Maven Central, read through Spark's JDBC reader in partitions "
                           "cut at quantiles, incrementally on a cursor column."})

    url: str = Field(..., pattern=r"^jdbc:", description="The JDBC URL (jdbc:...); put no "
                     "password in it: use password.")
    driver: str = Field(..., pattern=r"^[\w.-]+:[\w.-]+:[\w.+-]+$",
                        description="The driver's Maven coordinates group:artifact:version, "
                        "fetched by Ivy like Delta's jars (org.postgresql:postgresql:42.7.4).")
    driver_class: str | None = Field(None, description="The driver's java.sql.Driver class "
                                     "(default: known for postgresql, mariadb, mysql, "
                                     "sqlserver, oracle, db2, snowflake, h2 URLs).")
    username: str | None = Field(None, description="User to connect as.")
    password: Annotated[
        SecretStr | None,
        WithJsonSchema({"type": "string", "airbyte_secret": True,
                        "description": "Password of the user."}),
    ] = None
    tables: list[TableSettings] = Field(..., min_length=1, description="The streams.")
    rows_per_partition: Annotated[int, Field(ge=1)] = Field(
        500_000, description="About how many rows one partition reads.")
    max_partitions: Annotated[int, Field(ge=1)] = Field(
        64, description="Upper bound of partitions per stream and sync.")
    fetchsize: Annotated[int, Field(ge=1)] = Field(
        10_000, description="Rows the driver fetches per round trip (without one, "
        "PostgreSQL's driver buffers a whole partition in memory).")
    boundary_keys_limit: Annotated[int, Field(ge=0)] = Field(
        1_000, description="Most primary keys an incremental stream keeps in its state for "
        "the rows at the top cursor value (the tie rule); they travel as SQL literals.")

    @property
    def resolved_driver_class(self) -> str | None:
        return self.driver_class or driver_class_for(self.url)
