"""A REST catalog as production servers (Polaris, Lakekeeper, Unity) run it, on S3.

One Apache Iceberg REST server for the module (``_rest_catalog.py``: Iceberg
1.11.0's own ``RESTCatalogAdapter`` behind our loopback launcher), its warehouse
in a bucket of the run's S3 server (moto), which

* grants OAuth2 tokens (the adapter's own ``/v1/oauth/tokens``) to one client
  id and secret only, and refuses every other call without its token (401);
* logs each request's line (method, path and query, access-delegation header);
* vends storage settings in every load-table answer, as a vended-credentials
  server does, pointing at an endpoint where nothing listens, with keys of its own.

So a sync that names its warehouse and exchanges its client credential commits
only if the driver writes the manifests with the connection's S3 settings, not
the vended ones; the log shows the warehouse asked for and no delegation asked.
Not tested here: real short-lived vended keys refreshed mid-sync (not supported:
docs/destinations/iceberg.md), and an OAuth2 server apart from the catalog (the
same code path with another URL: ``oauth2_server_uri``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.destinations.iceberg import _catalog
from headwater.destinations.iceberg._config import resolve
from headwater.errors import ExitCode
from tests.integration._cli_logs import invoke_logged
from tests.integration._connections import connection_file
from tests.integration._s3 import SECRET_KEY, S3Server, free_port
from tests.integration.destinations.delta._s3 import access, hadoop_settings, new_bucket
from tests.integration.destinations.delta._tables import session_settings
from tests.integration.destinations.iceberg._rest_catalog import (
    RestCatalogServer,
    rest_catalog_server,
)

pytestmark = pytest.mark.spark

CLIENT_SECRET = "hw-oauth-client-secret-do-not-print"
CREDENTIAL = f"hw-loader:{CLIENT_SECRET}"
#: The catalog's name as Polaris (or a warehouse's, as Lakekeeper) would know it.
WAREHOUSE_NAME = "hw-prod-lake"
VENDED_SECRET = "hw-vended-secret-do-not-print"
SOURCE = {"seed": 5, "users": 120, "orders": 0, "rows_per_partition": 40}
STREAMS = [{"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "append"}]


@dataclass(frozen=True)
class ProdCatalog:
    server: RestCatalogServer
    bucket: str
    #: Where the server's vended config points the driver: nothing listens there.
    vended_endpoint: str


@pytest.fixture(scope="module")
def prod_catalog(spark: Any, s3_server: S3Server,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProdCatalog]:
    bucket = new_bucket(s3_server)
    vended_endpoint = f"http://127.0.0.1:{free_port()}"
    vend = {"s3.endpoint": vended_endpoint, "s3.access-key-id": "hw-vended-key",
            "s3.secret-access-key": VENDED_SECRET}
    with session_settings(spark, hadoop_settings(s3_server, bucket)), rest_catalog_server(
            tmp_path_factory.mktemp("iceberg-rest-prod"), f"s3://{bucket}/warehouse",
            s3=access(s3_server), client_credential=CREDENTIAL, vend=vend) as server:
        yield ProdCatalog(server=server, bucket=bucket, vended_endpoint=vended_endpoint)


def _config(prod: ProdCatalog, **catalog: str) -> dict[str, Any]:
    return {"warehouse": f"s3a://{prod.bucket}/warehouse",
            "namespace": f"t_{uuid.uuid4().hex[:12]}",
            "catalog": {"type": "rest", "uri": prod.server.uri, "warehouse": WAREHOUSE_NAME,
                        "scope": "catalog", **catalog}}


def _connection(folder: Path, config: dict[str, Any], s3_server: S3Server) -> Path:
    return connection_file(folder, name="ice-prod", source=SOURCE, streams=STREAMS,
                           destination={"type": "iceberg", "config": config},
                           spark={"conf": s3_server.spark_conf()})


def test_a_sync_names_its_warehouse_asks_no_delegation_and_writes_as_the_connection(
        s3_server: S3Server, prod_catalog: ProdCatalog, tmp_path: Path) -> None:
    config = _config(prod_catalog, credential=CREDENTIAL)
    before = len(prod_catalog.server.requests())
    done = invoke_logged(["sync", str(_connection(tmp_path, config, s3_server)), "--json"])
    assert done.exit_code == 0, done.output
    assert [s["records_written"] for s in json.loads(done.stdout)["streams"]] == [120]
    ours = prod_catalog.server.requests()[before:]
    assert f"GET /v1/config?warehouse={WAREHOUSE_NAME} delegation=-" in ours, ours
    assert "POST /v1/oauth/tokens delegation=-" in ours, ours
    assert all(line.endswith(" delegation=-") for line in ours), ours
    # The server did vend: PyIceberg's own client asks, and would write there.
    from pyiceberg.catalog import load_catalog

    settings = resolve(config)
    identifier = settings.identifier("users")
    plain = load_catalog("plain", type="rest", uri=prod_catalog.server.uri,
                         credential=CREDENTIAL, warehouse=WAREHOUSE_NAME,
                         **{"oauth2-server-uri": f"{prod_catalog.server.uri}/v1/oauth/tokens"},
                         **_catalog.file_io_properties(access(s3_server)))
    assert plain.load_table(identifier).io.properties["s3.endpoint"] == \
        prod_catalog.vended_endpoint
    assert prod_catalog.server.requests()[-1].endswith(" delegation=vended-credentials")
    ours_again = _catalog.load(settings, access(s3_server)).load_table(identifier)
    assert ours_again.io.properties["s3.endpoint"] == s3_server.endpoint
    assert ours_again.scan().to_arrow().num_rows == 120
    assert CLIENT_SECRET not in done.output and SECRET_KEY not in done.output
    assert VENDED_SECRET not in done.output
    # The bearer token the server issued for the credential (the adapter's own format) is a
    # secret from then on, as are the vended keys.
    from headwater.config import mask

    issued = f"client-credentials-token:sub={CREDENTIAL.partition(':')[0]}"
    assert issued not in mask(f"Authorization: Bearer {issued}")
    assert VENDED_SECRET not in mask(f"s3.secret-access-key={VENDED_SECRET}")


@pytest.mark.parametrize("catalog,field", [
    ({"credential": "hw-loader:wrong-secret-do-not-print"}, "credential"),
    ({"credential": f"hw-intruder:{CLIENT_SECRET}"}, "credential"),
    ({}, "credential"),  # none given: the catalog refuses the call itself
    ({"token": "hw-forged-token-do-not-print"}, "token"),
])
def test_check_names_a_refused_credential_and_exits_with_the_auth_code(
        s3_server: S3Server, prod_catalog: ProdCatalog, tmp_path: Path,
        catalog: dict[str, str], field: str) -> None:
    path = _connection(tmp_path, _config(prod_catalog, **catalog), s3_server)
    done = CliRunner().invoke(app, ["check", str(path), "--json"])
    assert done.exit_code == ExitCode.AUTHENTICATION, done.output
    error = json.loads(done.stdout)["destination"]["error"]
    assert error["type"] == "AuthenticationError", error
    assert f"destination.config.catalog.{field}" in error["message"], error
    assert "do-not-print" not in done.output and CLIENT_SECRET not in done.output


def test_check_passes_with_the_client_credential(
        s3_server: S3Server, prod_catalog: ProdCatalog, tmp_path: Path) -> None:
    path = _connection(tmp_path, _config(prod_catalog, credential=CREDENTIAL), s3_server)
    done = CliRunner().invoke(app, ["check", str(path), "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["destination"] == {"type": "iceberg", "status": "succeeded"}
    assert CLIENT_SECRET not in done.output


def test_a_sync_with_a_refused_credential_exits_with_the_auth_code_and_keeps_it_secret(
        s3_server: S3Server, prod_catalog: ProdCatalog, tmp_path: Path) -> None:
    from headwater.metadata_store import MetadataStore

    wrong = "hw-wrong-client-secret-do-not-print"
    path = _connection(tmp_path, _config(prod_catalog, credential=f"hw-loader:{wrong}"),
                       s3_server)
    done = invoke_logged(["sync", str(path), "--json"])
    assert done.exit_code == ExitCode.AUTHENTICATION, done.output
    assert "destination.config.catalog.credential" in done.output
    history = [run.error or "" for run in
               MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}").list_runs()]
    assert any("destination.config.catalog.credential" in error for error in history), history
    for shown in (done.output, *history):
        assert wrong not in shown and CLIENT_SECRET not in shown
