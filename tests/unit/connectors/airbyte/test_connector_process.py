"""The connector's stdout is read while the consumer works on a block."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from headwater.connectors.airbyte._process import RecordBlock, run_connector

#: Prints RECORD lines (several blocks' worth, megabytes: far more than a pipe holds),
#: then creates the file named by its first argument, then a STATE, then exits.
CONNECTOR = """
import sys
from pathlib import Path
line = '{"type":"RECORD","record":{"stream":"items","data":{"id":%d,"pad":"' + 'x' * 80 + '"}}}'
out = sys.stdout
for number in range(50_000):
    out.write(line % number + "\\n")
out.flush()
Path(sys.argv[1]).write_text("done")
out.write('{"type":"STATE","state":{"type":"STREAM","stream":{"stream_descriptor":'
          '{"name":"items"},"stream_state":{"cursor":1}}}}\\n')
"""


def test_the_connector_writes_on_while_the_consumer_holds_a_block(tmp_path: Path) -> None:
    marker = tmp_path / "all-records-written"
    items = run_connector([sys.executable, "-c", CONNECTOR, str(marker)], "writer")
    first = next(items)
    assert isinstance(first, RecordBlock)
    # The consumer sits on its first block.  Read by the consumer alone, the pipe would
    # fill and the connector would wait for it: the marker would never appear.
    waited = 0.0
    while not marker.exists() and waited < 60:
        time.sleep(0.05)
        waited += 0.05
    assert marker.exists(), "the connector was blocked while the consumer held a block"
    rest = list(items)
    lines = len(first.lines) + sum(len(i.lines) for i in rest if isinstance(i, RecordBlock))
    assert lines == 50_000
    assert not isinstance(rest[-1], RecordBlock)  # the STATE comes after every record


def test_a_consumer_that_stops_early_ends_the_connector(tmp_path: Path) -> None:
    items = run_connector([sys.executable, "-c", CONNECTOR, str(tmp_path / "m")], "writer")
    assert isinstance(next(items), RecordBlock)
    items.close()  # kills the process; the reader thread ends with it
