"""Notification discovery: new keys from an S3 event queue (SQS) instead of listing.

A stream with ``discovery: {mode: notifications, queue_url: ...}`` learns of new
objects from the ``s3:ObjectCreated:*`` events its bucket sends to an SQS (or
SQS-compatible) queue, as Auto Loader's and Hudi's S3 sources do, so a plan
costs a few receives and one HEAD per new object instead of a listing of the
prefix.  It plans the same partitions a listing would for the same objects:
exactly once comes from the cursor, not from the queue.

Planning (:meth:`Inbox.new_objects`)

1. receives messages (long poll, batches of 10) until the queue returns none or
   ``max_messages`` are held; a message received again (same message id)
   replaces its receipt handle;
2. turns each into object keys: the ObjectCreated records of the event (also
   inside an SNS envelope), URL-decoded (S3 encodes keys as a form value:
   ``+`` for a space), relative to the source's url, kept when under the
   stream's prefix and matching its globs;
3. HEADs each key for its size and identity (the ETag, as listing reads it;
   an object deleted since is dropped) and asks the cursor, exactly as a
   listing's object: a key already read (same identity), at or below the
   floor, or changed under ``changed_objects: ignore`` is not read;
4. deletes at once the messages with nothing to read (their objects are
   committed by the state the plan started from, or gone, or not this
   stream's), and plans the rest in key order, as listing does; each partition
   carries, under ``messages``, the receipt handles of the messages of its keys.

The messages of the objects read are deleted only after the state that
records those objects is saved: the cursor collects a key's handles when the
key completes (all its partitions committed) into the state's ``acks``, and
:meth:`Stream.on_state_committed` deletes them.  Nothing is deleted before its
data is committed and its state stored, so a message is lost only after its
object is.  A crash between the save and the delete leaves messages in the
queue; the next plan deletes the handles the saved state lists, and a message
that still comes back (its handle expired with the visibility timeout,
another receive got it) is received again and skipped by the cursor's
identity check as already read, then deleted.  A run that fails half way
keeps the messages of objects not yet complete: they come back and are
planned again (an object in flight resumes its missing ranges).  Messages
received but not yet deleted are remembered by the stream on the driver, so
a ``--watch`` poll that planned them does not hide them from the sync that
follows for a visibility timeout.

Like listing, the cursor remembers ``recent_keys`` keys above a floor: an
event for a key at or below the floor is skipped as a listing would skip it.
The schema is still sampled from the prefix's first objects (one page).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote_plus

import fsspec

from headwater.connectors.object_storage._config import (
    NotificationDiscovery,
    ObjectStorageConfig,
    StreamConfig,
)
from headwater.connectors.object_storage._cursor import Decision
from headwater.connectors.object_storage._listing import ObjectInfo, identity_of, wanted_keys
from headwater.errors import AuthenticationError, ConnectorError
from headwater.sdk import Partition

__all__ = ["Inbox", "Message", "event_paths", "with_messages"]

log = logging.getLogger(__name__)

#: SQS receives and deletes at most 10 messages a call.
SQS_BATCH = 10
#: HEAD requests in flight at once while a plan sizes the notified objects.
HEADS_AT_ONCE = 16


@dataclass(frozen=True)
class Message:
    """One received message: its id, latest receipt handle and the ``bucket/key`` of
    each object it says was created."""

    id: str
    handle: str
    paths: tuple[str, ...]


def event_paths(body: str) -> tuple[str, ...]:
    """``bucket/key`` of every ObjectCreated record of an S3 event notification (direct,
    or in an SNS envelope); none for test events, removals and other messages."""
    try:
        event = json.loads(body)
        if isinstance(event, dict) and event.get("Type") == "Notification" \
                and isinstance(event.get("Message"), str):
            event = json.loads(event["Message"])
    except ValueError:
        return ()
    records = event.get("Records") if isinstance(event, dict) else None
    paths = []
    for record in records if isinstance(records, list) else ():
        try:
            if not str(record.get("eventName", "")).startswith("ObjectCreated"):
                continue
            bucket = record["s3"]["bucket"]["name"]
            key = unquote_plus(record["s3"]["object"]["key"])
        except (AttributeError, KeyError, TypeError):
            continue
        paths.append(f"{bucket}/{key}")
    return tuple(paths)


def _queue_client(settings: ObjectStorageConfig, discovery: NotificationDiscovery) -> Any:
    """A botocore SQS client with the source's credentials (botocore comes with s3fs)."""
    from botocore.session import get_session

    def plain(value: Any) -> str | None:
        return value.get_secret_value() if value is not None else None

    region = discovery.region or settings.region
    if region is None and ".amazonaws.com" in discovery.queue_url:
        # https://sqs.REGION.amazonaws.com/ACCOUNT/QUEUE
        region = discovery.queue_url.split("://", 1)[-1].split(".")[1]
    return get_session().create_client(
        "sqs", region_name=region, endpoint_url=discovery.endpoint_url or settings.endpoint_url,
        aws_access_key_id=plain(settings.aws_access_key_id),
        aws_secret_access_key=plain(settings.aws_secret_access_key),
        aws_session_token=plain(settings.aws_session_token))


def _key_of(root: str, config: StreamConfig, path: str) -> str | None:
    """The key of ``path`` relative to the source's url, if this stream lists it."""
    if root:
        if not path.startswith(root + "/"):
            return None
        path = path[len(root) + 1:]
    folder = config.prefix.rstrip("/")
    if folder and not path.startswith(folder + "/"):
        return None
    return path if wanted_keys(tuple(config.globs))(path) else None


class Inbox:
    """The messages of one stream's queue received and not yet deleted (driver only)."""

    def __init__(self, settings: ObjectStorageConfig, discovery: NotificationDiscovery) -> None:
        self._discovery = discovery
        self._client = _queue_client(settings, discovery)
        self._pending: dict[str, Message] = {}
        self._released: frozenset[str] = frozenset()

    def check(self) -> None:
        """Asks the queue for its attributes: a wrong url or credentials show here."""
        try:
            self._client.get_queue_attributes(QueueUrl=self._discovery.queue_url,
                                              AttributeNames=["QueueArn"])
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            error = AuthenticationError if any(
                w in text for w in ("AccessDenied", "InvalidClientTokenId", "SignatureDoes",
                                    "Forbidden", "403")) else ConnectorError
            raise error(f"cannot reach queue {self._discovery.queue_url}: {text}",
                        field="source.config.streams.discovery.queue_url") from exc

    # ------------------------------------------------------------------ planning

    def new_objects(self, fs: fsspec.AbstractFileSystem, root: str, config: StreamConfig,
                    decide: Callable[[str, str], Decision]
                    ) -> tuple[list[ObjectInfo], dict[str, list[str]]]:
        """The notified objects to read, in key order, and the receipt handles by key;
        messages with nothing to read are deleted (see the module docstring)."""
        self._receive()
        by_key: dict[str, list[Message]] = {}
        for message in self._pending.values():
            for path in message.paths:
                key = _key_of(root, config, path)
                if key is not None:
                    by_key.setdefault(key, []).append(message)
        infos = self._head(fs, root, sorted(by_key))
        objects = [info for info in infos if decide(info.key, info.identity).read]
        reading = {m.id for info in objects for m in by_key[info.key]}
        settled = [m for m in self._pending.values() if m.id not in reading]
        self.delete(m.handle for m in settled)  # and forgets them
        if settled:
            log.info("queue %s: %d message(s) with nothing to read deleted",
                     self._discovery.queue_url, len(settled))
        return objects, {info.key: [m.handle for m in by_key[info.key]] for info in objects}

    def _receive(self) -> None:
        options: dict[str, Any] = {"QueueUrl": self._discovery.queue_url,
                                   "WaitTimeSeconds": self._discovery.wait_seconds}
        if self._discovery.visibility_timeout is not None:
            options["VisibilityTimeout"] = self._discovery.visibility_timeout
        while len(self._pending) < self._discovery.max_messages:
            wanted = min(SQS_BATCH, self._discovery.max_messages - len(self._pending))
            try:
                got = self._client.receive_message(MaxNumberOfMessages=wanted, **options)
            except Exception as exc:
                raise ConnectorError(f"cannot receive from queue {self._discovery.queue_url}: "
                                     f"{type(exc).__name__}: {exc}") from exc
            messages = got.get("Messages") or []
            if not any(m["MessageId"] not in self._pending for m in messages):
                return  # empty, or only messages held already (a short visibility timeout)
            for m in messages:
                self._pending[m["MessageId"]] = Message(m["MessageId"], m["ReceiptHandle"],
                                                        event_paths(m.get("Body") or ""))

    def _head(self, fs: fsspec.AbstractFileSystem, root: str, keys: list[str]
              ) -> list[ObjectInfo]:
        """Size and identity of each key (in order); an object deleted since is left out."""
        def head(key: str) -> ObjectInfo | None:
            path = f"{root}/{key}" if root else key
            try:
                info = fs.info(path)
            except FileNotFoundError:
                return None
            except Exception as exc:
                raise ConnectorError(f"cannot read {fs.unstrip_protocol(path)}: "
                                     f"{type(exc).__name__}: {exc}") from exc
            if info.get("type") == "directory":
                return None
            return ObjectInfo(key, path, int(info.get("size") or 0), identity_of(info))

        fs.invalidate_cache()
        with ThreadPoolExecutor(HEADS_AT_ONCE, thread_name_prefix="hw-head") as pool:
            return [info for info in pool.map(head, keys) if info is not None]

    # ------------------------------------------------------------------ deleting

    def release(self, state: Mapping[str, Any] | None) -> None:
        """Delete the messages a saved state lists as committed (again, after a crash
        between the save and the delete, they would otherwise wait for redelivery)."""
        acks = frozenset((state or {}).get("acks") or ())
        if acks and acks != self._released:
            self.delete(acks)
            self._released = acks

    def delete(self, handles: Iterable[str]) -> None:
        """Delete these messages; a failure is logged, not raised: a message left in the
        queue comes back and is skipped as already read."""
        batch: list[str] = []
        for handle in handles:
            batch.append(handle)
            if len(batch) == SQS_BATCH:
                self._delete_batch(batch)
                batch = []
        if batch:
            self._delete_batch(batch)

    def _delete_batch(self, handles: list[str]) -> None:
        gone = set(handles)
        self._pending = {i: m for i, m in self._pending.items() if m.handle not in gone}
        try:
            result = self._client.delete_message_batch(
                QueueUrl=self._discovery.queue_url,
                Entries=[{"Id": str(n), "ReceiptHandle": h} for n, h in enumerate(handles)])
        except Exception as exc:
            log.warning("queue %s: deleting %d message(s) failed (they come back and are "
                        "skipped as read): %s: %s", self._discovery.queue_url, len(handles),
                        type(exc).__name__, exc)
            return
        failed = result.get("Failed") or []
        if failed:
            log.warning("queue %s: %d message(s) not deleted (they come back and are skipped "
                        "as read): %s", self._discovery.queue_url, len(failed),
                        sorted({f.get("Code", "?") for f in failed}))


def with_messages(partitions: Iterable[Partition], handles: Mapping[str, list[str]]
                  ) -> Iterator[Partition]:
    """Each partition with the receipt handles of its keys' messages (``messages``)."""
    for partition in partitions:
        params = partition.params
        keys = [str(member[0]) for member in params["objects"]] \
            if params.get("unit") == "objects" else [str(params["key"])]
        yield Partition(partition.stream, partition.id,
                        {**params, "messages": {k: handles[k] for k in keys if k in handles}})
