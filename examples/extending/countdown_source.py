"""A source in 40 lines: ``count`` numbered rows, ten to a partition.

The worked example of docs/extending.md.  Register it from your package's
``pyproject.toml``::

    [project.entry-points."headwater.sources"]
    countdown = "my_package.countdown_source:CountdownSource"
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from headwater.sdk import Partition, Source, Stream


class Numbers(Stream):
    name = "numbers"
    primary_key = ("n",)

    def __init__(self, count: int) -> None:
        self.count = count

    def json_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"n": {"type": "integer"},
                                                 "square": {"type": "integer"}}}

    def partitions(self, state: Any) -> list[Partition]:
        return [Partition(self.name, f"from-{low}", {"low": low, "high": min(low + 10, self.count)})
                for low in range(0, self.count, 10)]

    def read(self, partition: Partition) -> Iterator[pa.RecordBatch]:
        numbers = list(range(partition.params["low"], partition.params["high"]))
        yield pa.record_batch({"n": numbers, "square": [n * n for n in numbers]})


class CountdownSource(Source):
    @classmethod
    def spec(cls) -> dict[str, Any]:
        return {"type": "object", "required": ["count"],
                "properties": {"count": {"type": "integer", "minimum": 0}}}

    def check(self) -> None:
        return None

    def streams(self) -> list[Stream]:
        return [Numbers(int(self.config["count"]))]
