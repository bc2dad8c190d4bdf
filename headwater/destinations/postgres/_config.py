"""The PostgreSQL destination's config: the source's connection fields, or one URL, and a schema.

Why pydantic, as the source: one model gives the spec (secrets marked) and the
parsing; a URL is taken apart here so every message can name host, port,
database and role without ever carrying the password.  The model pickles to the
executors, whose COPY tasks connect with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    WithJsonSchema,
)

from headwater._libpq import connect_kwargs
from headwater.errors import SpecValidationError

#: PostgreSQL's longest identifier, in bytes (``NAMEDATALEN - 1``).
MAX_IDENTIFIER = 63

_SSL_MODES = Literal["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]


class PostgresDestinationConfig(BaseModel):
    """Config of the ``postgres`` destination; ``password`` and ``url`` never print."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, title="PostgreSQL destination",
        json_schema_extra={"description": "One table per stream in a schema of a PostgreSQL "
                           "database, each checkpoint landed exactly once: rows COPYed "
                           "(binary) by the executors into staging, moved into the table in "
                           "the transaction that records the checkpoint's marker."})

    url: Annotated[
        SecretStr | None,
        WithJsonSchema({"type": "string", "airbyte_secret": True,
                        "description": "postgresql://user:password@host:port/database"
                        "[?sslmode=...] instead of the separate fields."}),
    ] = None
    host: str = Field("127.0.0.1", description="Server host name or address.")
    port: Annotated[int, Field(ge=1, le=65535)] = 5432
    database: Annotated[str | None, WithJsonSchema(
        {"type": "string", "minLength": 1, "description": "Database name (required without url)."}
    )] = None
    username: Annotated[str | None, WithJsonSchema(
        {"type": "string", "minLength": 1, "description": "Role to connect as (required without "
         "url)."})] = None
    password: Annotated[
        SecretStr | None,
        WithJsonSchema({"type": "string", "airbyte_secret": True,
                        "description": "Password of the role."}),
    ] = None
    sslmode: _SSL_MODES = "prefer"
    schema_: str = Field("public", alias="schema", min_length=1, max_length=MAX_IDENTIFIER,
                         description="Schema of the streams' tables (created when missing).")

    @property
    def schema_name(self) -> str:
        return self.schema_

    def resolved(self) -> PostgresDestinationConfig:
        """The config with ``url`` taken apart into the separate fields (and dropped)."""
        if self.url is None:
            return self
        parts = urlsplit(self.url.get_secret_value())
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        fields: dict[str, Any] = {
            "host": parts.hostname or self.host, "port": parts.port or self.port,
            "database": unquote(parts.path.lstrip("/")) or self.database,
            "username": unquote(parts.username) if parts.username else self.username,
            "password": unquote(parts.password) if parts.password else self.password,
            "sslmode": query.get("sslmode", self.sslmode), "schema": self.schema_}
        return PostgresDestinationConfig.model_validate(fields)

    def kwargs(self) -> dict[str, Any]:
        """psycopg ``connect`` keywords (no URI, so nothing is mis-quoted)."""
        return connect_kwargs(host=self.host, port=self.port, database=self.database,
                              username=self.username, sslmode=self.sslmode,
                              password=None if self.password is None
                              else self.password.get_secret_value())

    def where(self) -> str:
        """Server, database and role in words, for messages (never the password)."""
        return (f"PostgreSQL at {self.host}:{self.port} (database {self.database!r}, "
                f"role {self.username!r})")


def spec() -> dict[str, Any]:
    schema = PostgresDestinationConfig.model_json_schema(mode="validation", by_alias=True)
    for optional in ("password", "url", "database", "username"):
        schema["properties"][optional].pop("default", None)
    schema.pop("required", None)
    return {"$schema": "http://json-schema.org/draft-07/schema#", **schema}


def parse(config: Mapping[str, Any]) -> PostgresDestinationConfig:
    """The config, URL resolved; a problem names its field (``destination.config.port``)."""
    try:
        parsed = PostgresDestinationConfig.model_validate(dict(config)).resolved()
    except ValidationError as exc:
        problems = [(".".join(["destination.config", *(str(p) for p in e["loc"])]), e["msg"])
                    for e in exc.errors(include_input=False)]
        raise SpecValidationError("the postgres destination config does not match its spec",
                                  problems) from exc
    missing = [(f"destination.config.{name}", "required (or give url)")
               for name in ("database", "username") if not getattr(parsed, name)]
    if missing:
        raise SpecValidationError("the postgres destination config does not match its spec",
                                  missing)
    return parsed


__all__ = ["MAX_IDENTIFIER", "PostgresDestinationConfig", "parse", "spec"]
