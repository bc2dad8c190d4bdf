"""Secrets found through the spec, redacted in configs, masked in logs and output."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from headwater.config import (
    MIN_SECRET_LENGTH,
    REDACTED,
    SecretMaskingFilter,
    install_log_masking,
    mask,
    mask_obj,
    redact,
    register_secrets,
    secret_paths,
    secret_values,
    uri_passwords,
)
from headwater.config._secrets import _registry

SPEC: dict[str, Any] = {
    "connectionSpecification": {
        "type": "object",
        "properties": {
            "host": {"type": "string"},
            "password": {"type": "string", "airbyte_secret": True},
            "credentials": {
                "type": "object",
                "oneOf": [
                    {
                        "properties": {
                            "method": {"const": "key"},
                            "api_key": {"type": "string", "airbyte_secret": True},
                        }
                    },
                    {
                        "properties": {
                            "method": {"const": "oauth"},
                            "client_id": {"type": "string"},
                            "client_secret": {"type": "string", "airbyte_secret": True},
                            "refresh": {
                                "type": "object",
                                "properties": {"token": {"type": "string", "airbyte_secret": True}},
                            },
                        }
                    },
                ],
            },
            "tunnels": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"ssh_key": {"type": "string", "airbyte_secret": True}},
                },
            },
            "extra": {"anyOf": [{"properties": {"pin": {"airbyte_secret": True}}}]},
        },
    }
}


@pytest.fixture(autouse=True)
def empty_registry() -> Iterator[None]:
    """The masker is process-wide; each test starts and ends with no secrets registered."""
    _registry.clear()
    yield
    _registry.clear()


def test_secret_paths_go_through_nested_objects_oneof_anyof_and_items() -> None:
    assert secret_paths(SPEC) == [
        ("password",),
        ("credentials", "api_key"),
        ("credentials", "client_secret"),
        ("credentials", "refresh", "token"),
        ("tunnels", "*", "ssh_key"),
        ("extra", "pin"),
    ]


def test_secret_values_are_the_non_empty_strings_at_secret_paths() -> None:
    config = {
        "host": "db.internal",
        "password": "pw-123456",
        "credentials": {"method": "oauth", "client_id": "cid", "client_secret": ""},
        "tunnels": [{"ssh_key": "key-one"}, {"ssh_key": "key-two"}, {}],
        "extra": {"pin": 1234},
    }
    assert secret_values(SPEC, config) == ["pw-123456", "key-one", "key-two"]


def test_redact_replaces_secrets_in_a_copy() -> None:
    config: dict[str, Any] = {
        "host": "db.internal",
        "password": "pw-123456",
        "credentials": {"method": "oauth", "client_id": "cid", "refresh": {"token": "rt-1"}},
        "tunnels": [{"ssh_key": "key-one"}],
        "extra": {"pin": 1234},
    }
    redacted = redact(config, SPEC)
    assert redacted == {
        "host": "db.internal",
        "password": REDACTED,
        "credentials": {"method": "oauth", "client_id": "cid", "refresh": {"token": REDACTED}},
        "tunnels": [{"ssh_key": REDACTED}],
        "extra": {"pin": REDACTED},
    }
    assert config["password"] == "pw-123456"
    assert config["credentials"]["refresh"]["token"] == "rt-1"


def test_redact_keeps_unset_secrets_visible_as_unset() -> None:
    assert redact({"password": None}, SPEC) == {"password": None}


def test_mask_replaces_registered_secrets_longest_first() -> None:
    register_secrets(["abcd1234", "abcd1234-extended"])
    assert mask("x abcd1234-extended y abcd1234 z") == f"x {REDACTED} y {REDACTED} z"


@pytest.mark.parametrize("short", ["p", "pw", "x" * (MIN_SECRET_LENGTH - 1)])
def test_short_secrets_are_masked_where_they_stand_alone(short: str) -> None:
    """Marked secret is secret, whatever its length; inside a longer word it is left."""
    register_secrets([short, ""])
    assert mask(f"password {short}, '{short}' u:{short}@h") == (
        f"password {REDACTED}, '{REDACTED}' u:{REDACTED}@h")
    assert mask(f"a{short} {short}1 {short}_x") == f"a{short} {short}1 {short}_x"


URI_CASES = [
    # (text with the password PW in it, what it must read once masked)
    ("the Iceberg sql catalog at postgressql://loader:PW@127.0.0.1/iceberg is not usable",
     f"the Iceberg sql catalog at postgressql://loader:{REDACTED}@127.0.0.1/iceberg is not "
     "usable"),
    ("postgresql+psycopg2://loader:PW@db:5432/iceberg?sslmode=require",
     f"postgresql+psycopg2://loader:{REDACTED}@db:5432/iceberg?sslmode=require"),
    ("Could not parse SQLAlchemy URL from string 'postgres ql://u:PW@h/db'",
     f"Could not parse SQLAlchemy URL from string 'postgres ql://u:{REDACTED}@h/db'"),
    ("REST catalog https://client:PW@catalog.example:8181/api/catalog refused",
     f"REST catalog https://client:{REDACTED}@catalog.example:8181/api/catalog refused"),
    ("redis://:PW@127.0.0.1:6379/0", f"redis://:{REDACTED}@127.0.0.1:6379/0"),
    ("jdbc:postgresql://u:PW@h/db", f"jdbc:postgresql://u:{REDACTED}@h/db"),
    ("//u:PW@h", f"//u:{REDACTED}@h"),
    ('{"uri": "s3a://AKIA:PW@bucket/key"}', f'{{"uri": "s3a://AKIA:{REDACTED}@bucket/key"}}'),
]


@pytest.mark.parametrize("password", ["pw", "a-long-password-1234", "p@ss/w:rd"],
                         ids=["short", "long", "unencoded"])
@pytest.mark.parametrize(("text", "masked"), URI_CASES, ids=[
    "misspelt-scheme-in-message", "driver-scheme", "unparsable-quoted", "rest-https",
    "no-user", "jdbc", "no-scheme", "json"])
def test_a_uri_password_is_masked_by_its_place_without_registration(
        text: str, masked: str, password: str) -> None:
    """Well-formed or not, known scheme or not, in a message or alone, short or long."""
    assert mask(text.replace("PW", password)) == masked
    assert password not in mask(text.replace("PW", password)).replace("pwd", "")


@pytest.mark.parametrize("text", [
    "http://127.0.0.1:9000/bucket/key", "sqlite:///tmp/catalog.db", "https://git@host/x",
    "no uri here: a:b@c", "s3://bucket/prefix/a:b",
])
def test_text_without_a_uri_password_is_left_as_it_is(text: str) -> None:
    assert mask(text) == text


def test_uri_passwords_are_found_as_written_and_decoded() -> None:
    assert uri_passwords("a postgressql://u:p%40w@h/db and redis://:xy@h") == [
        "p%40w", "p@w", "xy"]
    assert uri_passwords("sqlite:///catalog.db") == []


def test_a_uri_password_in_a_logged_exception_is_masked(caplog: pytest.LogCaptureFixture) -> None:
    install_log_masking()
    logger = logging.getLogger("headwater.test.secrets")
    with caplog.at_level(logging.INFO, logger="headwater.test.secrets"):
        try:
            raise RuntimeError("cannot connect to postgressql://loader:pw@127.0.0.1/iceberg")
        except RuntimeError:
            logger.exception("catalog %s failed", "postgresql://loader:pw@127.0.0.1/iceberg")
    assert ":pw@" not in caplog.text
    assert caplog.text.count(f"loader:{REDACTED}@127.0.0.1") >= 2  # message, exception


def test_url_encoded_and_json_escaped_forms_are_masked_too() -> None:
    secret = 'p@ss/word"\nline2'
    register_secrets([secret])
    assert "p%40ss" not in mask("postgresql://u:p%40ss%2Fword%22%0Aline2@host/db")
    assert mask('{"password": "p@ss/word\\"\\nline2"}') == f'{{"password": "{REDACTED}"}}'


def test_mask_without_secrets_returns_text_unchanged() -> None:
    assert mask("nothing to hide") == "nothing to hide"


def test_mask_obj_walks_dicts_lists_and_tuples() -> None:
    register_secrets(["tok-98765"])
    obj = {
        "error": "auth failed with tok-98765",
        "items": [("tok-98765", 3), None, 2.5],
        "tok-98765": True,
    }
    assert mask_obj(obj) == {
        "error": f"auth failed with {REDACTED}",
        "items": [(REDACTED, 3), None, 2.5],
        REDACTED: True,
    }
    assert obj["error"] == "auth failed with tok-98765"


def test_log_records_are_masked_in_message_args_and_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    register_secrets(["hunter2-secret"])
    install_log_masking()
    logger = logging.getLogger("headwater.test.secrets")
    with caplog.at_level(logging.INFO, logger="headwater.test.secrets"):
        logger.info("connecting with password %s", "hunter2-secret")
        try:
            raise RuntimeError("refused: hunter2-secret")
        except RuntimeError:
            logger.exception("failed")

    assert "hunter2-secret" not in caplog.text
    assert f"connecting with password {REDACTED}" in caplog.text
    assert f"RuntimeError: refused: {REDACTED}" in caplog.text
    assert caplog.records[0].getMessage() == f"connecting with password {REDACTED}"


def test_install_log_masking_is_idempotent(caplog: pytest.LogCaptureFixture) -> None:
    install_log_masking()
    install_log_masking()
    for target in [caplog.handler, logging.getLogger("py4j"), logging.getLogger("pyspark")]:
        masking = [f for f in target.filters if isinstance(f, SecretMaskingFilter)]
        assert len(masking) == 1


def test_filter_keeps_records_without_secrets_as_they_were() -> None:
    register_secrets(["hunter2-secret"])
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "read %d rows", (5,), None)
    assert SecretMaskingFilter().filter(record) is True
    assert (record.msg, record.args) == ("read %d rows", (5,))


def test_filter_survives_arguments_that_do_not_fit_the_format() -> None:
    register_secrets(["hunter2-secret"])
    record = logging.LogRecord(
        "x", logging.INFO, __file__, 1, "%s %s hunter2-secret", ("hunter2-secret",), None
    )
    SecretMaskingFilter().filter(record)
    assert record.getMessage() == f"%s %s {REDACTED}"


def test_registry_is_safe_under_concurrent_registration() -> None:
    def register(start: int) -> None:
        for n in range(start, start + 200):
            register_secrets([f"secret-{n:05d}"])

    threads = [threading.Thread(target=register, args=(i * 200,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    text = " ".join(f"secret-{n:05d}" for n in range(800))
    assert mask(text) == " ".join([REDACTED] * 800)


def test_spark_conf_values_spark_redacts_are_masked_once_a_connection_is_read() -> None:
    from headwater.config import SparkConfig

    SparkConfig(conf={
        "spark.hadoop.fs.s3a.secret.key": "wJalrXUtnFEMI/K7MDENG",
        "spark.hadoop.fs.s3a.access.key": "AKIAIOSFODNN7EXAMPLE",
        "spark.hadoop.fs.s3a.bucket.logs.session.token": "FwoGZXIvYXdzEJr-token",
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
    })
    line = mask("GET http://127.0.0.1:9000 with wJalrXUtnFEMI/K7MDENG, AKIAIOSFODNN7EXAMPLE "
                "and FwoGZXIvYXdzEJr-token")
    assert line == f"GET http://127.0.0.1:9000 with {REDACTED}, {REDACTED} and {REDACTED}"


def test_conf_pairs_from_the_command_line_are_masked_too() -> None:
    from headwater.operations import spark_conf

    spark_conf(["spark.hadoop.fs.s3a.secret.key=cli-secret-value-123", "spark.ui.port=4041"])
    assert mask("cli-secret-value-123 on 4041") == f"{REDACTED} on 4041"


@pytest.mark.parametrize("text", ["a" * 50_000 + "//x", ("//u:" + "b" * 100) * 500],
                         ids=["long-word-then-slashes", "many-uri-heads-no-at"])
def test_masking_by_place_stays_linear_on_long_text_without_spaces(text: str) -> None:
    """A base64 blob or a long JSON line passes through every log filter: an unbounded
    pattern scanned such text again from every position (minutes for 200 KB)."""
    import time

    started = time.perf_counter()
    assert mask(text) == text
    assert time.perf_counter() - started < 2.0
