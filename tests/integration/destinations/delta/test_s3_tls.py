"""Delta on an S3 store that speaks TLS under a private certificate authority.

Real S3 (and most on-premises S3-compatible stores) are reached over HTTPS, while
the other S3 tests talk plain HTTP to the run's server.  Here a second moto
server serves HTTPS with a certificate signed by a CA made for the test, and a
sync goes through every client Headwater uses against the store: S3A in the JVM
(which trusts the JVM's trust store), pyarrow in the tasks and delta-rs on the
driver (which trust the PEM bundle named by ``SSL_CERT_FILE``), and botocore in
``headwater check``.  Told where the CA is, the sync takes the task path and lands
every row once; not told, ``check`` says the store's certificate is not trusted.

The sync runs as a ``headwater sync`` process: its JVM must start with the trust
store (``spark.driver.extraJavaOptions``), which the suite's shared session did not.
``check`` starts no Spark and reads ``SSL_CERT_FILE`` when it makes its client, so
it runs in this process (``_in_process``).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import certifi
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.integration._cli import expected_rows, store, sync
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process
from tests.integration._s3 import (
    ACCESS_KEY,
    HOST,
    REGION,
    SECRET_KEY,
    S3Server,
    ServerTls,
    moto_server,
)

pytestmark = [pytest.mark.spark]

NAME, STREAM = "s3tls", "users"
SOURCE = {"seed": 5, "users": 2_000, "orders": 0, "rows_per_partition": 500}
STREAMS = [{"name": STREAM, "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"}]
STORE_PASSWORD = "changeit"


@dataclass(frozen=True)
class TlsStore:
    server: S3Server
    trust_store: Path

    @property
    def endpoint(self) -> str:
        return self.server.endpoint

    @property
    def ca_pem(self) -> Path:
        assert self.server.authority is not None
        return self.server.authority


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_authority_and_server_cert(folder: Path) -> ServerTls:
    """A CA, and a server certificate for 127.0.0.1 it signs, as PEM files."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("headwater test CA"))
          .issuer_name(_name("headwater test CA")).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name(HOST)).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(HOST))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    tls = ServerTls(certificate=folder / "server.pem", key=folder / "server.key",
                    authority=folder / "ca.pem")
    tls.authority.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    tls.certificate.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    tls.key.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return tls


def _keytool() -> str:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "keytool") if home else shutil.which("keytool")
    assert found and Path(found).exists(), "keytool (the JDK's) is needed to make a trust store"
    return found


@pytest.fixture(scope="module")
def tls_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsStore]:
    """moto's server over HTTPS with a private CA, and a JVM trust store holding that CA."""
    folder = tmp_path_factory.mktemp("s3-tls")
    tls = _write_authority_and_server_cert(folder)
    trust_store = folder / "trust.p12"
    subprocess.run([_keytool(), "-importcert", "-noprompt", "-alias", "test-ca", "-file",
                    str(tls.authority), "-keystore", str(trust_store), "-storetype", "PKCS12",
                    "-storepass", STORE_PASSWORD], check=True, capture_output=True)
    with moto_server(folder / "moto.log", tls=tls) as server:
        yield TlsStore(server=server, trust_store=trust_store)


def _connection(tmp_path: Path, tls: TlsStore, bucket: str) -> Path:
    prefix = f"spark.hadoop.fs.s3a.bucket.{bucket}."
    conf = {f"{prefix}endpoint": tls.endpoint, f"{prefix}access.key": ACCESS_KEY,
            f"{prefix}secret.key": SECRET_KEY, f"{prefix}path.style.access": "true",
            f"{prefix}endpoint.region": REGION,
            # The JVM's clients (S3A) trust what the JVM's trust store holds.
            "spark.driver.extraJavaOptions":
                f"-Djavax.net.ssl.trustStore={tls.trust_store} "
                f"-Djavax.net.ssl.trustStorePassword={STORE_PASSWORD} "
                "-Djavax.net.ssl.trustStoreType=PKCS12"}
    return connection_file(tmp_path, name=NAME, source=SOURCE, streams=STREAMS,
                           lake=f"s3a://{bucket}/lake", store_file=None,
                           checkpoint={"partitions_per_checkpoint": 2}, spark={"conf": conf})


def _read_delta(tls: TlsStore, location: str, monkeypatch: pytest.MonkeyPatch) -> pa.Table:
    from deltalake import DeltaTable

    monkeypatch.setenv("SSL_CERT_FILE", str(tls.ca_pem))
    options = {"AWS_ENDPOINT_URL": tls.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
               "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}
    table = DeltaTable(location.replace("s3a://", "s3://"), storage_options=options)
    landed = table.to_pyarrow_table()
    # Timestamps as microseconds since the epoch, as ``expected_rows`` gives them.
    return pa.table([pc.cast(pc.cast(column, pa.timestamp("us", "UTC")), pa.int64())
                     if pa.types.is_timestamp(column.type) else column
                     for column in landed.columns], names=landed.column_names)


def test_a_sync_over_tls_with_a_private_ca_takes_the_task_path_and_lands_every_row(
        tls_store: TlsStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bucket = tls_store.server.bucket("hw-tls-sync")
    connection = _connection(tmp_path, tls_store, bucket)
    trusted = {"SSL_CERT_FILE": str(tls_store.ca_pem)}

    checked = run_in_process(tmp_path, "check", str(connection), env=trusted)
    assert checked.exit_code == 0, checked.describe()

    result = sync(tmp_path, connection, env=trusted)
    assert result.exit_code == 0, result.describe()
    run_id = result.document["run_id"] if result.document else None
    assert run_id, result.describe()
    checkpoints = store(tmp_path).list_checkpoints(run_id)
    assert {c.stats.get("writer") for c in checkpoints} == {"tasks+delta-rs"}, [
        c.stats for c in checkpoints]

    landed = _read_delta(tls_store, f"s3a://{bucket}/lake/{STREAM}", monkeypatch)
    expected = expected_rows(SOURCE, STREAM)
    columns = expected.column_names
    assert sorted(landed.select(columns).to_pylist(), key=repr) == sorted(
        expected.to_pylist(), key=repr)
    for text in (checked.stdout, checked.stderr, result.stdout, result.stderr):
        assert SECRET_KEY not in text


def test_check_names_an_untrusted_certificate(tls_store: TlsStore, tmp_path: Path) -> None:
    bucket = tls_store.server.bucket("hw-tls-untrusted")
    connection = _connection(tmp_path, tls_store, bucket)
    public = certifi.where()  # the public CAs: a machine that was not told of the test CA
    result = run_in_process(tmp_path, "check", str(connection),
                            env={"SSL_CERT_FILE": public, "AWS_CA_BUNDLE": public})
    assert result.exit_code != 0, result.describe()
    assert "certificate of the s3 endpoint" in result.stderr.lower(), result.describe()
    assert "SSL_CERT_FILE" in result.stderr, result.describe()
    assert SECRET_KEY not in result.stdout + result.stderr
