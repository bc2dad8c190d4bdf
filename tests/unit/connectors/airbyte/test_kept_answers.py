"""What an installed connector's spec and discover said, kept: keys, ages, invalidation.

The connector is the fake connector (a real process), installed as a package
would be: a venv folder with its console script (a wrapper that logs each start
to ``invocations.log``) and a dist-info ``RECORD``, so the kept answers are
keyed as for a pip-installed connector.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

import pytest

from headwater.connectors.airbyte import AirbyteSource, ConnectorEnv
from headwater.connectors.airbyte import _kept as kept
from headwater.protocol import AirbyteCatalog
from tests.unit.connectors.airbyte.conftest import FAKE_CONNECTOR

PACKAGE = {"package": "airbyte-source-fake", "version": "1.0.0"}


def _installed(root: Path) -> tuple[ConnectorEnv, Path]:
    """The fake connector laid out as ``ConnectorEnv.ensure`` leaves a package; its log."""
    env = ConnectorEnv(**PACKAGE, root=str(root))
    invocations = root / "invocations.log"
    (env.venv / "bin").mkdir(parents=True)
    (env.venv / "bin" / "python").symlink_to(sys.executable)
    (env.venv / "bin" / env.script).write_text(
        "import runpy, sys\n"
        f"sys.argv = [{str(FAKE_CONNECTOR)!r}, '--invocations', {str(invocations)!r}]"
        " + sys.argv[1:]\n"
        f"runpy.run_path({str(FAKE_CONNECTOR)!r}, run_name='__main__')\n")
    _record(env).parent.mkdir(parents=True)
    _record(env).write_text("airbyte_source_fake/__init__.py,sha256=abc,10\n")
    (env.venv / ".headwater-ready").write_text("airbyte-source-fake==1.0.0\n")
    return env, invocations


def _record(env: ConnectorEnv) -> Path:
    return (env.venv / "lib" / "python3.11" / "site-packages"
            / "airbyte_source_fake-1.0.0.dist-info" / "RECORD")


def _source(root: Path, **extra: object) -> AirbyteSource:
    return AirbyteSource({**PACKAGE, "envs_dir": str(root), "config": {"records": 3}, **extra})


def _started(invocations: Path) -> list[str]:
    return invocations.read_text().splitlines() if invocations.exists() else []


def test_the_installation_digest_follows_the_installed_files(tmp_path: Path) -> None:
    env, _ = _installed(tmp_path)
    digest = kept.installation_digest(env)
    assert digest is not None and digest == kept.installation_digest(env)
    _record(env).write_text("airbyte_source_fake/__init__.py,sha256=def,10\n")  # a reinstall
    assert kept.installation_digest(env) not in (None, digest)
    assert kept.installation_digest(ConnectorEnv(command_line=("connector",))) is None


def test_spec_runs_once_per_installed_connector(tmp_path: Path) -> None:
    env, invocations = _installed(tmp_path)
    _source(tmp_path)
    _source(tmp_path)
    assert _started(invocations) == ["spec"]
    _record(env).write_text("airbyte_source_fake/__init__.py,sha256=def,10\n")
    _source(tmp_path)  # another build installed under the same version: asked again
    assert _started(invocations) == ["spec", "spec"]


def test_a_sync_plans_with_a_kept_catalog_younger_than_the_limit(tmp_path: Path) -> None:
    _, invocations = _installed(tmp_path)
    first = _source(tmp_path)
    first.prepare()
    assert [s.stream_name for s in first.streams()] == ["items"]
    assert _started(invocations) == ["spec", "discover"]

    second = _source(tmp_path)  # the next sync, within the limit: no discover
    second.prepare()
    assert [s.stream_name for s in second.streams()] == ["items"]
    assert _started(invocations) == ["spec", "discover"]

    every_time = _source(tmp_path, catalog_max_age_minutes=0)
    every_time.prepare()
    every_time.streams()
    assert _started(invocations) == ["spec", "discover", "discover"]


def test_headwater_discover_and_an_old_catalog_discover_afresh(tmp_path: Path) -> None:
    _, invocations = _installed(tmp_path)
    _source(tmp_path).streams()  # what `headwater discover` does: no prepare, always asks
    _source(tmp_path).streams()
    assert _started(invocations) == ["spec", "discover", "discover"]

    source = _source(tmp_path)
    path = source._catalog_file()
    assert path is not None
    document = json.loads(path.read_text())
    document["discovered_at"] -= 16 * 60  # older than the default 15 minutes
    path.write_text(json.dumps(document))
    source.prepare()
    source.streams()
    assert _started(invocations) == ["spec", "discover", "discover", "discover"]


def test_the_kept_catalog_is_per_config(tmp_path: Path) -> None:
    _, invocations = _installed(tmp_path)
    _source(tmp_path).streams()
    other = AirbyteSource({**PACKAGE, "envs_dir": str(tmp_path),
                           "config": {"records": 3, "streams": 2}})
    other.prepare()
    assert [s.stream_name for s in other.streams()] == ["items", "items_2"]
    assert _started(invocations) == ["spec", "discover", "discover"]


def test_a_discover_that_finds_another_catalog_says_what_changed(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _installed(tmp_path)
    source = _source(tmp_path)
    source.streams()
    path = source._catalog_file()
    assert path is not None
    known = kept.load_catalog(path)
    assert known is not None
    stream = known.catalog.streams[0]
    del stream.json_schema["properties"]["label"]
    kept.keep_catalog(path, known.catalog, time.time() - 3600)
    with caplog.at_level(logging.WARNING, logger="headwater.connectors.airbyte"):
        _source(tmp_path).streams()
    assert "stream 'items': column 'label' added" in caplog.text
    refreshed = kept.load_catalog(path)
    assert refreshed is not None and refreshed.age_minutes() < 1
    assert "label" in refreshed.catalog.streams[0].json_schema["properties"]


def test_catalog_changes_in_words() -> None:
    def catalog(streams: dict[str, dict[str, object]], key: str = "id") -> AirbyteCatalog:
        return AirbyteCatalog.model_validate({"streams": [
            {"name": name, "json_schema": {"type": "object", "properties": columns},
             "supported_sync_modes": ["full_refresh"], "source_defined_primary_key": [[key]]}
            for name, columns in streams.items()]})

    old = catalog({"a": {"id": {"type": "integer"}, "x": {"type": "string"}},
                   "gone": {"id": {"type": "integer"}}})
    new = catalog({"a": {"id": {"type": "string"}, "y": {"type": "string"}},
                   "new": {"id": {"type": "integer"}}}, key="y")
    assert kept.catalog_changes(old, old) == []
    assert kept.catalog_changes(old, new) == [
        "stream 'a': column 'id' changed type", "stream 'a': column 'x' removed",
        "stream 'a': column 'y' added", "stream 'a': primary key changed",
        "stream 'gone' removed", "stream 'new' added"]


def test_a_command_connector_is_asked_every_time(tmp_path: Path) -> None:
    invocations = tmp_path / "invocations.log"
    config = {"command": [sys.executable, str(FAKE_CONNECTOR), "--invocations", str(invocations)],
              "config": {"records": 1}}
    for _ in range(2):
        source = AirbyteSource(config)
        source.prepare()
        source.streams()
    assert _started(invocations) == ["spec", "discover", "spec", "discover"]
    assert not any(name.startswith(".headwater") for name in os.listdir(tmp_path))
