"""The connection file's ``lineage:`` block: validated like every block, its key never shown."""

from __future__ import annotations

import logging
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.errors import SpecValidationError
from headwater.observability.lineage._emitter import LineageEmitter

KEY = "ol-api-key-3b9e7d"


def connection(tmp_path: Path, lineage: str, env: dict[str, str] | None = None) -> Any:
    path = tmp_path / "shop.yaml"
    path.write_text("source: {type: sample}\n" + textwrap.dedent(lineage), encoding="utf-8")
    return load_connection(path, env=env or {})


def problems(tmp_path: Path, lineage: str) -> dict[str, str]:
    with pytest.raises(SpecValidationError) as info:
        connection(tmp_path, lineage)
    assert KEY not in str(info.value)
    return dict(info.value.problems)


def test_a_lineage_block_loads_with_its_key_from_the_environment(tmp_path: Path) -> None:
    loaded = connection(tmp_path, """\
        lineage:
          url: http://127.0.0.1:5000
          namespace: prod
          api_key: ${OL_KEY}
          timeout_s: 2
        """, env={"OL_KEY": KEY})
    lineage = loaded.lineage
    assert (lineage.url, lineage.namespace, lineage.timeout_s) == \
        ("http://127.0.0.1:5000", "prod", 2)
    assert lineage.api_key.get_secret_value() == KEY
    assert KEY not in repr(loaded) and KEY not in repr(lineage) and KEY not in str(lineage)


def test_no_lineage_block_is_none(tmp_path: Path) -> None:
    assert connection(tmp_path, "").lineage is None


@pytest.mark.parametrize(("block", "field", "says"), [
    ("lineage: {url: http://h, file: /tmp/x}\n", "lineage", "exactly one of url"),
    ("lineage: {namespace: prod}\n", "lineage", "exactly one of url"),
    ("lineage: {url: ftp://h}\n", "lineage.url", "http:// or https://"),
    (f"lineage: {{url: 'http://me:{KEY}@h'}}\n", "lineage.url", "must not hold credentials"),
    ("lineage: {file: /tmp/x, timeout_s: 0}\n", "lineage.timeout_s", "greater than 0"),
    ("lineage: {file: /tmp/x, adress: y}\n", "lineage.adress", "unknown field"),
])
def test_a_bad_field_names_itself(tmp_path: Path, block: str, field: str, says: str) -> None:
    found = problems(tmp_path, block)
    assert field in found, found
    assert says in found[field], found


class _Client:
    """A client whose ``emit`` fails, or blocks until released (a receiver that never answers)."""

    def __init__(self, *, fails: bool = False) -> None:
        self.fails = fails
        self.release = threading.Event()
        self.sent: list[Any] = []

    def emit(self, event: Any) -> None:
        if self.fails:
            raise ConnectionError(f"refused, and the error repeats the key {KEY}")
        self.release.wait()
        self.sent.append(event)


def test_a_failing_receiver_is_one_masked_warning_per_run(caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    from headwater.config import register_secrets

    register_secrets([KEY])
    emitter = LineageEmitter(lambda: _Client(fails=True), where="http://h", timeout_s=30)
    with caplog.at_level(logging.WARNING, logger="headwater.lineage"):
        assert emitter.send("start", run_id="r1", what="START") is False
        assert emitter.send("complete", run_id="r1", what="COMPLETE") is False
        assert emitter.send("start", run_id="r2", what="START") is False
    warnings = [r.getMessage() for r in caplog.records if r.name == "headwater.lineage"]
    assert len(warnings) == 2, warnings  # one per run
    assert "run r1" in warnings[0] and "START" in warnings[0] and "http://h" in warnings[0]
    assert all(KEY not in w for w in warnings)


def test_a_receiver_that_never_answers_costs_the_timeout_not_the_sync(
        caplog: pytest.LogCaptureFixture) -> None:
    client = _Client()
    emitter = LineageEmitter(lambda: client, where="http://h", timeout_s=0.2)
    with caplog.at_level(logging.WARNING, logger="headwater.lineage"):
        assert emitter.send("start", run_id="r1", what="START") is False
    assert "not accepted within 0.2 s" in caplog.text
    client.release.set()  # the receiver answers at last: the events still go, in order
    assert emitter.send("complete", run_id="r1", what="COMPLETE") is True
    assert client.sent == ["start", "complete"]
