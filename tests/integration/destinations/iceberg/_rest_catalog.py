"""Apache Iceberg's own REST catalog server on 127.0.0.1, for the Iceberg destination's tests.

``scripts/setup-tests`` puts the server's jars (``rest-catalog/pom.xml``) into
Headwater's cache; this starts ``rest-catalog/LoopbackRESTCatalogServer.java``
(Iceberg's ``RESTCatalogServlet`` over a JDBC catalog on a SQLite file, on a
connector bound to 127.0.0.1: that file says why it is ours and not Iceberg's
launcher) on a free port, with its warehouse in a ``file://`` folder the tests
share, waits until ``GET /v1/config`` answers, and stops it on the way out.

A warehouse on S3 (``s3_warehouse``): the server writes each commit's table
metadata itself, so it gets a FileIO of its own for the bucket, Iceberg's
``S3FileIO`` (``iceberg-aws``, with the AWS SDK of ``iceberg-aws-bundle``), with
the endpoint, region, path-style access and keys of the store's
:class:`~headwater.destinations._table_files._store.S3Access` (:func:`s3_file_io`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from headwater.destinations._table_files._store import S3Access
from tests._processes import stop

HOST = "127.0.0.1"
#: Keep in step with scripts/setup-tests and rest-catalog/pom.xml.
ICEBERG_REST_VERSION = "1.11.0"
LAUNCHER = Path(__file__).resolve().parent / "rest-catalog" / "LoopbackRESTCatalogServer.java"
#: The jars' Maven project: its hash names the cache folder (as scripts/setup-tests does).
POM = LAUNCHER.with_name("pom.xml")
#: The Java FileIO the server writes an S3 warehouse's metadata with.
S3_FILE_IO = "org.apache.iceberg.aws.s3.S3FileIO"


@dataclass(frozen=True)
class RestCatalogServer:
    """A running server: its URI, the local folder its ``file://`` warehouse is, and the
    file it logs each request's line to (method, path and query, delegation header)."""

    uri: str
    warehouse: Path
    request_log: Path | None = None

    def requests(self) -> list[str]:
        """The request lines so far, oldest first: ``GET /v1/config?warehouse=w
        delegation=-`` (``-``: no ``X-Iceberg-Access-Delegation`` header)."""
        if self.request_log is None or not self.request_log.exists():
            return []
        return self.request_log.read_text().splitlines()


def jars_folder() -> Path:
    """The installed jars, or an error that says how to install them."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    folder = Path(os.environ.get("HEADWATER_ICEBERG_REST_DIR")
                  or cache / "headwater" / f"iceberg-rest-{ICEBERG_REST_VERSION}-{digest}")
    if not (folder / "complete").exists():
        raise RuntimeError(f"Iceberg's REST catalog server is not installed at {folder}: run "
                           "scripts/setup-tests (it fetches the jars with Maven)")
    if shutil.which("java") is None:
        raise RuntimeError("the Iceberg REST catalog tests need Java 17 (a JDK)")
    return folder / "lib"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def listening_addresses(port: int) -> set[str]:
    """The local addresses sockets listen on at ``port`` (Linux's /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                local, state = line.split()[1], line.split()[3]
                address, _, hex_port = local.partition(":")
                if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.add(address)
    return found


#: Loopback as /proc/net shows it: 127.0.0.1, and IPv6's ::1 and ::ffff:127.0.0.1.
LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


def _answers(uri: str, statuses: tuple[int, ...] = (200,)) -> bool:
    try:
        return httpx.get(f"{uri}/v1/config", timeout=2).status_code in statuses
    except httpx.HTTPError:
        return False


def s3_file_io(s3: S3Access) -> dict[str, str]:
    """The server's catalog properties that make its FileIO ``S3FileIO`` reaching the store
    as ``s3`` does (Iceberg's property names: ``s3.endpoint``, ``s3.access-key-id``...)."""
    pairs = (("io-impl", S3_FILE_IO), ("s3.endpoint", s3.endpoint),
             ("client.region", s3.region or "us-east-1"), ("s3.access-key-id", s3.access_key),
             ("s3.secret-access-key", s3.secret_key), ("s3.session-token", s3.session_token),
             ("s3.path-style-access", None if s3.path_style is None
              else str(s3.path_style).lower()))
    return {key: value for key, value in pairs if value}


def _environment(properties: dict[str, str]) -> dict[str, str]:
    """Catalog properties as the launcher reads them: ``s3.access-key-id`` is
    ``CATALOG_S3_ACCESS__KEY__ID`` (``.`` is ``_``, ``-`` is ``__``)."""
    return {"CATALOG_" + key.replace("-", "__").replace(".", "_").upper(): value
            for key, value in properties.items()}


@contextmanager
def rest_catalog_server(folder: Path, warehouse_uri: str | None = None,
                        s3: S3Access | None = None, client_credential: str | None = None,
                        vend: dict[str, str] | None = None, reader_credential: str | None = None,
                        refuse_file: Path | None = None) -> Iterator[RestCatalogServer]:
    """Yield a fresh server whose catalog database and warehouse are in ``folder``.

    ``warehouse_uri`` puts the server's warehouse elsewhere: an ``s3://`` one
    the server writes with ``S3FileIO`` when ``s3`` says how to reach the store,
    or (without ``s3``) a location the tasks cannot write, to see a sync refuse it.
    ``client_credential`` (``id:secret``): the server grants tokens to that client
    only and refuses every other call without one (401), as production servers do.
    ``vend``: catalog properties (``s3.access-key-id``...) every load-table answer's
    ``config`` carries, as a server vending storage credentials does.
    ``reader_credential`` (``id:secret``, with ``client_credential``): a second
    client whose token may read only (every call but GET and HEAD: 403).
    ``refuse_file``: a switch: while the file exists, its word refuses every token
    ``writes`` (403) or ``all`` calls (401), and ``expire-at-write`` turns into
    ``all`` at the first write, which it refuses (a token that expires at a
    commit), ``revoke-at-write`` likewise into ``revoked`` (``all``, and no token
    granted: a credential revoked), and ``refuse-answer-once`` carries out the
    first write but answers it 403, then goes off (a gateway refusing the answer
    of a commit the catalog made; the launcher's header says more), and
    ``refuse-answer-then-all`` likewise but turns into ``all`` (the answer lost,
    then every call refused: the commit's lookup cannot answer).
    """
    lib = jars_folder()
    port = _free_port()
    warehouse = folder / "warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    environment = {**os.environ, "CATALOG_REST_PORT": str(port),
                   "CATALOG_URI": f"jdbc:sqlite:{folder / 'catalog.db'}",
                   "CATALOG_JDBC_SCHEMA__VERSION": "V1",
                   "CATALOG_WAREHOUSE": warehouse_uri or warehouse.as_uri(),
                   **_environment(s3_file_io(s3) if s3 is not None else {}),
                   "HEADWATER_REQUEST_LOG": str(folder / "requests.log"),
                   **{"HEADWATER_VEND_" + key[len("CATALOG_"):]: value
                      for key, value in _environment(vend or {}).items()}}
    if client_credential is not None:
        environment["HEADWATER_CLIENT_CREDENTIAL"] = client_credential
    if reader_credential is not None:
        environment["HEADWATER_READER_CREDENTIAL"] = reader_credential
    if refuse_file is not None:
        environment["HEADWATER_REFUSE_FILE"] = str(refuse_file)
    log_file = folder / "rest-catalog.log"
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", f"{lib}/*", str(LAUNCHER)], env=environment,
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=folder)
    uri = f"http://{HOST}:{port}"
    # With a client credential, an unauthenticated GET /v1/config is refused: 401 says it is up.
    up = (200, 401) if client_credential is not None else (200,)
    try:
        deadline = time.monotonic() + 120  # it compiles the launcher first
        while not _answers(uri, up):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Iceberg's REST catalog server did not start on {uri}: "
                                   f"{log_file.read_text()[-2000:]}")
            time.sleep(0.2)
        yield RestCatalogServer(uri=uri, warehouse=warehouse,
                                request_log=folder / "requests.log")
    finally:
        stop(process)
