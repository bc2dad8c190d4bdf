"""The engine knows no table format: what it needs of one comes from the destination's
capabilities (``headwater.destinations.DestinationCapabilities``)."""

from __future__ import annotations

import re
from pathlib import Path

import headwater.engine

ENGINE = Path(headwater.engine.__file__).parent
FORMATS = re.compile(r"delta|iceberg|hudi", re.IGNORECASE)


def test_no_engine_module_names_a_table_format() -> None:
    found = [f"{path.relative_to(ENGINE.parent)}:{number}: {line.strip()}"
             for path in sorted(ENGINE.rglob("*")) if path.suffix in (".py", ".xml")
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if FORMATS.search(line)]
    assert not found, "\n".join(found)
