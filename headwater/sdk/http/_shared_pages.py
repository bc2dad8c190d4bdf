"""One API call's pages, read once for every task of a run that needs them.

A parent stream synced in the same run as its substream would otherwise be
read twice: by its own tasks, for its table, and by the substream's tasks, for
the parent records whose children they fetch.  Each task reading a shared call
goes through a folder every task of the run can reach (``PlanContext.shared_dir``,
set only where all tasks run on one machine):

* the first task to ask *claims* the call (a file created exclusively), reads
  it from the API, handing each page on as it arrives, and leaves the pages
  behind once the last one is in (written under a temporary name, then
  renamed: a reader sees all of them or none);
* a task that finds the call claimed waits (on its event loop: its other calls
  go on) until the pages are there, then reads them from the folder;
* a claim whose reader is gone (its process died, or it left without
  finishing and could not withdraw the claim) is broken, and the call is read
  by whoever asks next.  Breaking a claim wrongly costs a second read of the
  call, never a wrong row: the pages file is only ever complete.

The driver may have a run's calls made early, starting while Spark starts
(:mod:`._early_reads`), by a reader: a process forked from the driver, or a
thread of it.  The folder names the reader's process (:data:`DRIVER_MARK`)
and, once every call the reader started has ended or it stopped, is marked
done (:data:`DRIVER_DONE`).  Until then a task leaves a call nobody has
claimed to the reader and waits for its pages, so the calls in flight stay the
reader's ``concurrency``; a task makes a call itself only once the reader is
done, or its process gone (killed: it never marked the folder), and the call
is still nobody's.

Nothing here is a cache across runs: the engine removes the folder with the
run, and a folder that is gone (a run resumed after a reboot) shares nothing.
Pages are pickled, as the records are (``transform`` may return any Python
value); the folder is the run's own (mode 0700), written only by its tasks.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import pickle
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from headwater._processes import pid_alive

__all__ = ["DRIVER_DONE", "DRIVER_MARK", "SharedPages", "kept_bytes"]

#: The file holding the process id of the reader making the run's early calls (the
#: process forked for them, or the driver's own when they are a thread of it).
DRIVER_MARK = "driver.pid"
#: The file the reader (or the driver, once the reader has ended) makes when the
#: reader starts no further call.
DRIVER_DONE = "driver.done"

Page = list[dict[str, Any]]

#: How often a waiting task looks for the pages (seconds): a fraction of one API call.
POLL_S = 0.01
#: How often a task waiting for the driver's pages looks for them (seconds).  Longer:
#: dozens of calls wait at once in each task for the whole run, and their looks took
#: CPU the driver, making the calls on the same cores, could use; a page found later
#: delays only what the task writes, never a call.
DRIVER_POLL_S = 0.05


class SharedPages:
    """The shared calls of one run (see the module docstring)."""

    def __init__(self, directory: str, *, stale_after_s: float) -> None:
        """``stale_after_s``: a claim untouched this long (no page arrived) is broken;
        longer than one call may take with its retries."""
        self.folder = Path(directory)
        self.stale_after_s = stale_after_s

    @staticmethod
    def key(*parts: Any) -> str:
        """A file name for the call ``parts`` describe (stream, window...)."""
        text = "\x00".join(str(part) for part in parts)
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()

    async def read(self, key: str, fetch: Callable[[], AsyncIterator[Page]], *,
                   keep: bool = True, driver: bool = False) -> AsyncIterator[Page]:
        """The pages of call ``key``: from the folder, or from ``fetch()`` by the
        one reader that claims it.  Without ``keep``, a call nobody has read or is
        reading is fetched and not kept (no other reader will ask for it).
        ``driver``: this is the driver's own early read (it never waits for itself)."""
        if not self.folder.is_dir():
            async for page in fetch():
                yield page
            return
        done = self.folder / f"{key}.pages"
        claim = self.folder / f"{key}.claim"
        while True:
            if done.exists():
                for page in _load(done):
                    yield page
                return
            if not driver and not claim.exists() and _driver_reading(self.folder):
                await asyncio.sleep(DRIVER_POLL_S)  # the driver will make this call
                continue
            if not keep and not claim.exists():
                if done.exists():
                    continue  # finished between the two looks
                async for page in fetch():
                    yield page
                return
            if _take(claim):
                if done.exists():  # finished between the look above and the claim
                    claim.unlink(missing_ok=True)
                    continue
                async for page in self._fetch_and_keep(fetch, done, claim):
                    yield page
                return
            if self._abandoned(claim):
                _break(claim)
                continue
            await asyncio.sleep(POLL_S)

    async def _fetch_and_keep(self, fetch: Callable[[], AsyncIterator[Page]], done: Path,
                              claim: Path) -> AsyncIterator[Page]:
        kept: list[bytes] = []
        try:
            async for page in fetch():
                # Pickled now, before anyone downstream can change the records.
                kept.append(pickle.dumps(page, protocol=pickle.HIGHEST_PROTOCOL))
                os.utime(claim)  # alive: a page arrived
                yield page
            partial = done.with_name(f"{done.name}.{os.getpid()}.partial")
            partial.write_bytes(b"".join(kept))
            os.replace(partial, done)
            _kept[self.folder] = _kept.get(self.folder, 0) + sum(len(k) for k in kept)
        finally:
            # Done, or given up (the next task to ask reads it): the claim is over.
            claim.unlink(missing_ok=True)

    def _abandoned(self, claim: Path) -> bool:
        try:
            pid = int(claim.read_text() or "0")
            touched = claim.stat().st_mtime
        except (FileNotFoundError, ValueError):
            return False  # withdrawn or being written: look again
        return not _alive(pid) or time.time() - touched > self.stale_after_s


#: Bytes of pages this process has kept, per folder (:func:`kept_bytes`).
_kept: dict[Path, int] = {}


def kept_bytes(folder: str) -> int:
    """Bytes of pages this process has written into ``folder``."""
    return _kept.get(Path(folder), 0)


#: Per folder: when :func:`_driver_reading` last looked, and what it found.
_driver_seen: dict[Path, tuple[float, bool]] = {}


def _driver_reading(folder: Path) -> bool:
    """Whether another process, alive, reads early into ``folder`` and is not done
    (the reader's process: killed, it counts as gone even before it is reaped).

    Every call waiting in this process asks; one look per :data:`DRIVER_POLL_S`
    answers them all, and a driver found done or gone stays so.
    """
    now = time.monotonic()
    seen = _driver_seen.get(folder)
    if seen is not None and (not seen[1] or now - seen[0] < DRIVER_POLL_S):
        return seen[1]
    try:
        driver = int((folder / DRIVER_MARK).read_text())
    except (FileNotFoundError, ValueError):
        return False  # no driver (yet): nothing to remember
    reading = (driver != os.getpid() and not (folder / DRIVER_DONE).exists()
               and _alive(driver))
    _driver_seen[folder] = (now, reading)
    return reading


def _take(claim: Path) -> bool:
    try:
        handle = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(handle, "w") as out:
        out.write(str(os.getpid()))
    return True


def _break(claim: Path) -> None:
    """Remove an abandoned claim; of several tasks breaking it at once, one succeeds."""
    moved = claim.with_name(f"{claim.name}.{os.getpid()}.broken")
    try:
        os.replace(claim, moved)
    except FileNotFoundError:
        return
    moved.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    """:func:`~headwater._processes.pid_alive`, except that pid 0 is a claim not written yet."""
    return pid <= 0 or pid_alive(pid)


def _load(path: Path) -> list[Page]:
    pages = []
    with path.open("rb") as source:
        while True:
            try:
                pages.append(pickle.load(source))
            except EOFError:
                return pages
