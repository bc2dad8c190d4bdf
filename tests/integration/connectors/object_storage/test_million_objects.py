"""Planning a prefix of very many tiny objects: partitions, plan, state and the driver's memory.

The full figure (1,000,000 objects) comes from ``bench/object_storage_plan_million.py``;
here the local folder holds ``HW_MANY_OBJECTS`` objects (50,000 by default) and
moto's S3 server fewer (uploads to it are slow).  The driver's peak is printed
(``pytest -s``) and bounded per object, so a listing held whole again fails.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from pathlib import Path

import fsspec.asyn
from fsspec.asyn import sync

from tests._many_objects import (
    PER_FOLDER,
    make_local_objects,
    measure_plan,
    object_key,
    put_s3_objects,
)
from tests.integration.connectors.object_storage.conftest import S3Server

LOCAL_OBJECTS = int(os.environ.get("HW_MANY_OBJECTS", "50000"))
S3_OBJECTS = 3 * PER_FOLDER + 7
RECENT_KEYS = 10_000


def _config(url: str, **extra: object) -> dict[str, object]:
    return {"url": url, "recent_keys": RECENT_KEYS,
            "streams": [{"name": "objects", "globs": ["**/*.jsonl"]}], **extra}


def test_many_local_objects_plan_as_few_partitions_with_bounded_state(tmp_path: Path) -> None:
    folder = make_local_objects(tmp_path / "objects", LOCAL_OBJECTS)
    figures = measure_plan(_config(str(folder)), trace=True, close_all=True)
    print(f"\n{LOCAL_OBJECTS:,} local objects: {json.dumps(figures)}")
    assert figures["objects"] == LOCAL_OBJECTS
    assert figures["partitions"] == math.ceil(LOCAL_OBJECTS / 500)
    # the plan holds a partition per 500 objects, about the bytes of their keys and identities
    assert figures["plan_bytes"] < 80 * LOCAL_OBJECTS
    # the listing is not held: Python's peak stays near the plan's own objects
    assert figures["traced_peak"] < 600 * LOCAL_OBJECTS
    # the state: a floor and recent_keys keys, whatever the prefix holds
    assert figures["state_bytes"] < 80 * RECENT_KEYS


def test_the_s3_listing_pages_in_key_order_and_plans_each_object_once(
        s3_server: S3Server) -> None:
    s3 = s3_server.client()
    s3.create_bucket(Bucket="many")
    put_s3_objects(s3, "many", S3_OBJECTS)
    s3.put_object(Bucket="many", Key="d00000/", Body=b"")  # a folder marker, not an object
    s3.put_object(Bucket="many", Key="skip/o.csv", Body=b"a\n1\n")
    # objects of the first level sort among the folders: "d00001.jsonl" < "d00001/..."
    top = ["d00001.jsonl", "e.jsonl"]
    for key in top:
        s3.put_object(Bucket="many", Key=key, Body=b'{"n": -1}\n')
    from headwater.connectors.object_storage import ObjectStorageSource

    stream = ObjectStorageSource(_config("s3://many", **{
        k: v for k, v in s3_server.source_config("many").items() if k != "url"})).streams()[0]
    listed = [o.key for o in stream.objects()]  # type: ignore[attr-defined]
    # over 4 folders of up to 1,000 keys (a page each), listed side by side
    assert listed == sorted([object_key(i) for i in range(S3_OBJECTS)] + top)
    assert listed.index("d00001.jsonl") == PER_FOLDER
    # a reader that stops early (the schema's sample) stops the folders' listings
    objects = stream.objects()  # type: ignore[attr-defined]
    assert [next(objects).key for _ in range(3)] == listed[:3]
    objects.close()

    async def folders_listing() -> list[object]:
        for _ in range(20):  # let the cancellations run
            await asyncio.sleep(0)
        return [t for t in asyncio.all_tasks() if "_fill" in repr(t.get_coro())]

    assert sync(fsspec.asyn.get_loop(), folders_listing) == []
    partitions = stream.partitions(None)
    planned = [m[0] for p in partitions for m in p.params["objects"]]
    assert planned == listed and len(partitions) == math.ceil(len(listed) / 500)
    # from the cursor's floor on, S3 sends only the keys after it (StartAfter)
    from headwater.connectors.object_storage._listing import iter_objects

    fs, root = stream._fs()  # type: ignore[attr-defined]
    floor = object_key(2 * PER_FOLDER + 500)
    assert [o.key for o in iter_objects(fs, root, "", ["**/*.jsonl"], floor)] == \
        [k for k in listed if k > floor]
    # a prefix inside the bucket lists only its folder
    inner = ObjectStorageSource(_config("s3://many/d00001", **{
        k: v for k, v in s3_server.source_config("many").items() if k != "url"})).streams()[0]
    assert [o.key for o in inner.objects()][:2] == [  # type: ignore[attr-defined]
        object_key(PER_FOLDER)[len("d00001/"):], object_key(PER_FOLDER + 1)[len("d00001/"):]]
