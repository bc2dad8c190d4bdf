"""The summary of a warned sync says so: its status in the table, each warning on stderr."""

from __future__ import annotations

import io

from rich.console import Console

from headwater.cli._render import print_result
from headwater.engine import StreamStats, SyncResult


def test_a_warned_stream_reads_warned_with_its_warnings_on_stderr() -> None:
    warning = "every record read was rejected (8 of 8; why is in the table's _hw_notes)"
    stream = StreamStats(name="people", mode="full_refresh+overwrite", status="warned",
                         records_read=8, records_written=8, records_rejected=8,
                         warnings=[warning])
    result = SyncResult(run_id="r1", connection="c", status="warned", resumed=False,
                        attempt=1, streams=[stream])
    out, err = io.StringIO(), io.StringIO()
    print_result(result, Console(file=out, width=200), Console(file=err, width=200))
    table = out.getvalue()
    assert "run r1 · warned" in table
    row = next(line for line in table.splitlines() if "people" in line)
    assert row.split("│")[3].strip() == "warned"
    assert err.getvalue().strip() == f"people: {warning}"
