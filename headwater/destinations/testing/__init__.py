"""The destination author's kit: a fake destination and a conformance run.

:class:`FakeDestination` keeps tables as Parquet files with a JSON log of
commits: the smallest destination that keeps the whole contract, for tests of
the engine and as a model to read.  :func:`run_conformance` drives any
destination through real syncs on the caller's Spark session and reports what
it does against what its capabilities declare (see :mod:`._conformance`)::

    from headwater.destinations.testing import assert_conformant

    def test_my_destination_keeps_the_contract(spark, tmp_path):
        assert_conformant(lambda folder: MyDestination({"path": str(folder)}),
                          spark, tmp_path)
"""

from headwater.destinations.testing._conformance import (
    DestinationReport,
    assert_conformant,
    run_conformance,
)
from headwater.destinations.testing._fake import FakeDestination
from headwater.destinations.testing._kill import Killed, killed_at
from headwater.sdk.testing import Check

__all__ = ["Check", "DestinationReport", "FakeDestination", "Killed", "assert_conformant",
           "killed_at", "run_conformance"]
