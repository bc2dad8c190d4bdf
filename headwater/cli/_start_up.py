"""No full garbage collection while a command starts up beside early reads.

``headwater sync`` starts its early reads (``Source.prepare``) and then, on
the main thread, imports the engine and PySpark and starts Spark: hundreds of
thousands of long-lived objects (modules, classes, functions) that Python's
cyclic collector walks at every full collection.  One took 60-130 ms of
holding the GIL, on the early reads' own thread as often as not (a collection
runs on whichever thread allocates), with no call going out meanwhile.  On the
substream benchmark (``bench/substream_api_vs_cdk.py``, 32 in flight) full
collections held it 250-375 ms in all before Spark was ready, 19-28 ms with
this module.

So while the command starts up, full collections wait (young objects are
still collected as usual), and once it has started, every object it made so
far is frozen (:func:`gc.freeze`): later full collections walk only what the
sync itself makes.  Frozen objects are still freed by reference counting; only
a reference cycle among them, never collected, would stay until the process
ends: the start-up's objects live that long anyway.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: The oldest generation's threshold while starting up: no full collection.
_NO_FULL_COLLECTION = 1 << 30


@contextmanager
def full_collections_after() -> Iterator[None]:
    """Start up inside: no full collection meanwhile; on leaving, what it made is frozen
    and the collector's thresholds are the ones found."""
    found = gc.get_threshold()
    gc.freeze()  # what is already there (the command's imports, the config) for a start
    gc.set_threshold(found[0], found[1], _NO_FULL_COLLECTION)
    try:
        yield
    finally:
        gc.freeze()
        gc.set_threshold(*found)
