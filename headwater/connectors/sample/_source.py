"""The built-in ``sample`` source: a whole data world with no server behind it.

It serves the quickstart, the integration tests ("the table equals the
source", even after a crash) and the benchmark, so it is deterministic (a
pure function of its config), exact (:meth:`SampleSource.expected_rows` is
what a correct sync must land), and fast (rows come from vectorised numpy and
Arrow, see :mod:`._world`).

Example connection snippet::

    source:
      type: sample
      config: {users: 1000, orders: 5000, generation: 0}

Raise ``generation`` between two syncs to simulate a day passing: some rows are
updated and new ones appear, and an incremental sync reads exactly those.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
import pyarrow as pa
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    WithJsonSchema,
)

from headwater.connectors.sample._world import DEFAULT_START, STREAMS, World
from headwater.errors import (
    AuthenticationError,
    ConfigError,
    ConnectorError,
    SpecValidationError,
    StateError,
)
from headwater.key_checksum import key_checksum
from headwater.sdk import (
    ConcurrentCursor,
    IsoDateTimeStateConverter,
    Partition,
    Source,
    Stream,
    WindowCount,
)

__all__ = ["OrdersStream", "SampleConfig", "SampleSource", "SampleStream", "UsersStream"]

#: The ``api_key`` value ``check()`` refuses, to demonstrate authentication failures.
REFUSED_API_KEY = "invalid"

_Count = Annotated[int, Field(ge=0, strict=True)]


class SampleConfig(BaseModel):
    """The sample source's config; its JSON Schema is the source's ``spec()``.

    One model gives both the spec and the parsing (defaults filled in), so the
    two never disagree.  ``api_key`` is a :class:`SecretStr`: it never prints.
    """

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        title="Sample source",
        json_schema_extra={
            "description": (
                "A deterministic world of users and orders that needs no server. Raise "
                "generation between syncs to simulate a day of updates and new rows."
            )
        },
    )

    seed: _Count = Field(42, description="Seed of the world: the same seed gives the same rows.")
    users: _Count = Field(1000, description="Rows of the users stream before generation 1.")
    orders: _Count = Field(5000, description="Rows of the orders stream before generation 1.")
    generation: _Count = Field(
        0, description="Which simulated day to read; each generation updates and adds rows."
    )
    updates_per_generation: _Count = Field(
        10, description="Existing rows each generation updates (per stream)."
    )
    new_per_generation: _Count = Field(
        10, description="New rows each generation adds (per stream)."
    )
    days_per_generation: Annotated[int, Field(ge=1, strict=True)] = Field(
        1, description=(
            "Simulated days each generation spans; its events come one per second, so "
            "updates_per_generation + new_per_generation must stay below 86400 per day."
        ),
    )
    rows_per_partition: Annotated[int, Field(ge=1, strict=True)] = Field(
        100_000, description="Most rows one partition holds."
    )
    start: AwareDatetime = Field(
        DEFAULT_START, description="updated_at of the first row; the cursor starts here."
    )
    bad_value_every: _Count = Field(
        0,
        description=(
            'When N > 0, every N-th user row has age "unknown", which does not fit the '
            "declared integer type (to see how values that do not fit are recorded)."
        ),
    )
    schema_version: Literal[1, 2] = Field(
        1, description="2 adds a loyalty_tier column to users (to see schema growth)."
    )
    api_key: Annotated[
        SecretStr | None,
        WithJsonSchema(
            {
                "type": "string",
                "airbyte_secret": True,
                "description": (
                    f'Optional. check() refuses the value "{REFUSED_API_KEY}" to show an '
                    "authentication failure; any other value passes."
                ),
            }
        ),
    ] = None

    def world(self) -> World:
        return World(
            seed=self.seed,
            users=self.users,
            orders=self.orders,
            generation=self.generation,
            updates_per_generation=self.updates_per_generation,
            new_per_generation=self.new_per_generation,
            start=self.start,
            bad_value_every=self.bad_value_every,
            schema_version=self.schema_version,
            days_per_generation=self.days_per_generation,
        )


class SampleStream(Stream):
    """A stream of the sample world; holds only the world's config, so it pickles small.

    Beyond the :class:`~headwater.sdk.Stream` contract it tells tests what a
    correct sync must see: :meth:`now` and :meth:`expected_rows`.
    """

    primary_key = ("id",)
    cursor_field = "updated_at"
    state_converter: ClassVar[IsoDateTimeStateConverter] = IsoDateTimeStateConverter()

    def __init__(self, world: World, rows_per_partition: int) -> None:
        self._world = world
        self._rows_per_partition = rows_per_partition

    def json_schema(self) -> dict[str, Any]:
        return self._world.json_schema(self.name)

    def cursor_start(self) -> str:
        return self.state_converter.serialize(self._world.start)

    def now(self) -> str:
        """Exclusive end of the latest change in the world (stored form).

        Everything the world holds has ``updated_at < now()``; ``now()`` equals
        :meth:`cursor_start` for an empty world.
        """
        return self._serialize(self._world.now_offset(self.name))

    def partitions(self, state: Mapping[str, Any] | None) -> list[Partition]:
        """Windows that cover exactly the cursor's gaps up to :meth:`now`.

        Windows are cut where the data is (every ``rows_per_partition`` seconds
        of the initial rows and of each generation's events, and at the end of
        each), never through quiet time, so no window is empty unless a gap
        itself holds no data.  ``state=None`` plans the whole world.
        """
        cursor = self.cursor(state, incremental=True)
        if not isinstance(cursor, ConcurrentCursor):  # pragma: no cover - the SDK's promise
            raise TypeError(f"stream {self.name!r} expected a concurrent cursor")
        cuts = self._world.cut_offsets(self.name, self._rows_per_partition)
        cuts_us = cuts * 1_000_000
        plan: list[Partition] = []
        for low, high in cursor.gaps(self.now()):
            # Cuts strictly inside the gap; the gap's own ends stay as the cursor wrote them.
            first = np.searchsorted(cuts_us, self._micros_after_start(low), side="right")
            stop = np.searchsorted(cuts_us, self._micros_after_start(high), side="left")
            bounds = [low, *(self._serialize(cut) for cut in cuts[first:stop].tolist()), high]
            plan += [self._window(a, b) for a, b in itertools.pairwise(bounds)]
        return plan

    def read(self, partition: Partition) -> Iterator[pa.RecordBatch]:
        """Record batches (at most 100,000 rows each) of the rows whose current
        ``updated_at`` lies in the partition's ``[start, end)``."""
        yield from self._world.batches(self.name, *self._offsets(partition))

    def _offsets(self, partition: Partition) -> tuple[int, int]:
        """The world's offsets of the partition's window ``[start, end)``."""
        try:
            low = self.state_converter.parse(partition.params["start"])
            high = self.state_converter.parse(partition.params["end"])
        except (KeyError, StateError) as exc:
            raise ConnectorError(
                f"partition is not a window of the sample source: {exc}",
                stream=self.name,
                partition=partition.id,
            ) from exc
        world = self._world
        return world.offset_ceil(low), world.offset_ceil(high)

    def estimate_rows(self, partition: Partition) -> int | None:
        """Exact: the world knows how many rows each window holds without making them."""
        try:
            low = self.state_converter.parse(partition.params["start"])
            high = self.state_converter.parse(partition.params["end"])
        except (KeyError, StateError):
            return None
        world = self._world
        return world.count(self.name, world.offset_ceil(low), world.offset_ceil(high))

    def count_window(self, partition: Partition) -> WindowCount:
        """The rows whose current ``updated_at`` lies in the window, and their ids' checksum
        (the world makes the window's ids, in Python: a window is at most a partition)."""
        low, high = self._offsets(partition)
        ids = (batch.column("id").to_pylist()
               for batch in self._world.batches(self.name, low, high))
        checksum = key_checksum((value,) for chunk in ids for value in chunk)
        return WindowCount(self._world.count(self.name, low, high), checksum)

    def expected_rows(self) -> pa.Table:
        """The whole current world of the stream, sorted by id (same types as ``read``)."""
        return self._world.table(self.name)

    def _window(self, low: str, high: str) -> Partition:
        return Partition(self.name, f"{self.name}:{low}/{high}", {"start": low, "end": high})

    def _serialize(self, offset: int) -> str:
        return self.state_converter.serialize(self._world.at(offset))

    def _micros_after_start(self, stored: str) -> int:
        return self._world.micros_after_start(self.state_converter.parse(stored))


class UsersStream(SampleStream):
    """People: ``id``, ``name``, ``email`` and ``age`` (change with each update), ``country``."""

    name = "users"


class OrdersStream(SampleStream):
    """Orders: ``id``, ``user_id``, ``amount`` (changes), ``currency``, ``status`` (changes)."""

    name = "orders"


class SampleSource(Source):
    """A deterministic, seedable world of ``users`` and ``orders``; see the module docs.

    The config is validated (and defaults filled in) at construction, so a
    wrong config fails before any planning with a
    :class:`~headwater.errors.SpecValidationError` naming the field.
    """

    type_name = "sample"
    offline_catalog = "schemas"  # its world is the config's

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self._settings = _parse(config)
        # World checks what one field's schema cannot (updates + new < days * 86400).
        self._world = self._settings.world()

    @classmethod
    def spec(cls) -> dict[str, Any]:
        schema = SampleConfig.model_json_schema(mode="validation")
        schema["properties"]["api_key"].pop("default", None)  # null does not fit "string"
        return {"$schema": "http://json-schema.org/draft-07/schema#", **schema}

    def check(self) -> None:
        """Passes unless ``api_key`` is the documented refused value (a demo of auth failure)."""
        key = self._settings.api_key
        if key is not None and key.get_secret_value() == REFUSED_API_KEY:
            raise AuthenticationError(
                "the sample source refused api_key: it refuses its documented demo value "
                "to show how an authentication failure looks",
                field="source.config.api_key",
            )

    def streams(self) -> list[Stream]:
        return [self.stream(name) for name in STREAMS]

    def stream(self, name: str) -> SampleStream:
        kinds: dict[str, type[SampleStream]] = {"users": UsersStream, "orders": OrdersStream}
        if name not in kinds:
            raise ConfigError(
                f"the sample source has no stream {name!r}; it has: {', '.join(STREAMS)}",
                stream=name,
            )
        return kinds[name](self._world, self._settings.rows_per_partition)

    def expected_rows(self, stream_name: str) -> pa.Table:
        """The whole current world of ``stream_name``, sorted by id.

        What a correct full refresh (or every incremental sync so far, deduplicated
        by ``id``) must hold; columns and types are those ``read`` yields, so with
        ``bad_value_every`` the ``age`` column is a string column.
        """
        return self.stream(stream_name).expected_rows()


def _parse(config: Mapping[str, Any]) -> SampleConfig:
    try:
        settings = SampleConfig.model_validate(dict(config))
    except ValidationError as exc:
        problems = [
            (
                ".".join(["source.config", *(str(part) for part in error["loc"])]),
                error["msg"],
            )
            for error in exc.errors(include_input=False)
        ]
        raise SpecValidationError(
            "the sample source config does not match its spec", problems
        ) from exc
    return settings
