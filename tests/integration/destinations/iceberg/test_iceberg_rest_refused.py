"""A REST catalog that refuses a sync *after* it loaded: exit code 3, state kept, rows once.

Apache Iceberg's REST server on 127.0.0.1 (``_rest_catalog.py``) behind our
launcher's gate, which grants OAuth2 tokens to a loader (may do anything) and to
a reader (may read only: 403 to every write, as a principal with read privileges
only), and has a switch the test flips mid-sync (the launcher's header).  The
catalog loads fine each time; what is refused is a commit: the reader's, or the
loader's once its token "expires" right at a commit (every call refused from
then on, the lookup after the refusal included).  Each sync runs through the CLI.

A commit whose lookup is refused too has an unknown outcome: the sync still exits
3, but the run stays resumable (``stopped``), and the next sync resumes it, looks
the commit up again and lands everything once, whether that commit had landed
(its answer lost) or not (refused before it).
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import Result
from typer.testing import CliRunner

from headwater import _events
from headwater.cli.app import app
from headwater.connectors.sample import SampleSource
from headwater.errors import ExitCode
from headwater.metadata_store import MetadataStore, RunRecord
from tests.integration._connections import connection_file
from tests.integration.destinations.iceberg._rest_catalog import (
    RestCatalogServer,
    rest_catalog_server,
)

pytestmark = pytest.mark.spark

LOADER_SECRET = "hw-loader-secret-do-not-print"
LOADER = f"hw-loader:{LOADER_SECRET}"
READER_SECRET = "hw-reader-secret-do-not-print"
READER = f"hw-reader:{READER_SECRET}"
#: The bearer tokens the server issues (the adapter's own format): secrets too.
ISSUED = "client-credentials-token:sub="
NAME = "ice-auth"
SOURCE = {"seed": 17, "users": 300, "orders": 0, "rows_per_partition": 100,
          "updates_per_generation": 30, "new_per_generation": 20}
INCREMENTAL = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
                "cursor_field": "updated_at"}]


@dataclass(frozen=True)
class GatedCatalog:
    server: RestCatalogServer
    #: The gate's switch: while it exists, its word refuses every token (the launcher).
    switch: Path


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatedCatalog]:
    folder = tmp_path_factory.mktemp("iceberg-rest-gated")
    switch = folder / "refuse"
    with rest_catalog_server(folder, client_credential=LOADER, reader_credential=READER,
                             refuse_file=switch) as server:
        yield GatedCatalog(server=server, switch=switch)


@pytest.fixture(autouse=True)
def switched_off(gated: GatedCatalog) -> Iterator[None]:
    """Every test starts with the switch off and no listener."""
    gated.switch.unlink(missing_ok=True)
    _events.clear()
    yield
    _events.clear()
    gated.switch.unlink(missing_ok=True)


@pytest.fixture
def namespace() -> str:
    """The test's own namespace (the server is the module's)."""
    return f"t_{uuid.uuid4().hex[:12]}"


def _config(gated: GatedCatalog, folder: Path, credential: str, namespace: str) -> dict[str, Any]:
    return {"warehouse": str(folder / "warehouse"), "namespace": namespace,
            "catalog": {"type": "rest", "uri": gated.server.uri, "credential": credential}}


def _connection(folder: Path, config: dict[str, Any], *, per_checkpoint: int = 3,
                streams: list[dict[str, Any]] = INCREMENTAL, **source: Any) -> Path:
    return connection_file(folder, name=NAME, source={**SOURCE, **source}, streams=streams,
                           checkpoint={"partitions_per_checkpoint": per_checkpoint,
                                       "concurrent_checkpoints": 1},
                           destination={"type": "iceberg", "config": config})


def _sync(path: Path) -> Result:
    """``headwater sync --json -vv``: every log line (DEBUG up) is in the output, where the
    tests look for secrets (the CLI replaces the root logger's handlers: pytest's
    ``caplog`` hears nothing of a CLI run)."""
    return CliRunner().invoke(app, ["sync", str(path), "--json", "-vv"])


def _table(gated: GatedCatalog, namespace: str) -> Any:
    """The table through a client of the test's own, with the loader's credential."""
    from pyiceberg.catalog import load_catalog

    uri = gated.server.uri
    reader = load_catalog("reader", type="rest", uri=uri, credential=LOADER,
                          **{"oauth2-server-uri": f"{uri}/v1/oauth/tokens"})
    return reader.load_table(f"{namespace}.users")


def _keyed(rows: pa.Table) -> Counter[tuple[int, Any]]:
    return Counter(zip(rows.column("id").to_pylist(), rows.column("updated_at").to_pylist(),
                       strict=True))


def _expected(**source: Any) -> Counter[tuple[int, Any]]:
    return _keyed(SampleSource({**SOURCE, **source}).expected_rows("users"))


def _sync_switching_after_the_first_commit(
        gated: GatedCatalog, path: Path, switch: str) -> tuple[Result, MetadataStore, list[Any]]:
    """:func:`_sync`, with the catalog's switch set to ``switch`` once the first commit
    landed; the result, the store, and the run's checkpoints."""

    def switch_after_the_first_commit(moment: str) -> None:
        if moment == "commit-landed" and not gated.switch.exists():
            gated.switch.write_text(switch)

    _events.listen(switch_after_the_first_commit)
    try:
        refused = _sync(path)
    finally:
        _events.clear()
    store = MetadataStore(f"sqlite:///{path.parent / 'meta.db'}")
    return refused, store, store.list_checkpoints(store.list_runs(NAME)[0].run_id)


def _assert_refused(done: Result, store: MetadataStore, *, says: list[str],
                    unknown: bool = False) -> RunRecord:
    """Exit 3, the run recorded failed with the refusal (``unknown``: left ``stopped``, to
    resume, the commit's outcome unknown), no secret anywhere; the run."""
    assert done.exit_code == ExitCode.AUTHENTICATION, done.output
    error = json.loads(done.stdout)["error"]  # --json: the error, not a crash's
    kind = "RefusedCommitOutcomeUnknown" if unknown else "AuthenticationError"
    assert error["type"] == kind and error["exit_code"] == 3, error
    for words in [*says, "destination.config.catalog.credential"]:
        assert words in error["message"], error
    run = store.list_runs(NAME)[0]
    assert run.status == ("stopped" if unknown else "failed") and run.error is not None, run
    assert (store.find_unfinished_run(NAME) is not None) is unknown
    assert all(words in run.error for words in says), run.error
    logs = [line.message for line in store.run_logs(run.run_id)[0]]
    assert any(says[0] in line for line in logs), logs
    for shown in (done.output, run.error, *logs):
        for secret in (LOADER_SECRET, READER_SECRET, ISSUED):
            assert secret not in shown
    return run


#: Each way a checkpoint reaches the table (a snapshot, a copy-on-write MERGE, a staged
#: overwrite's branch): its streams, checkpoints, and the rows after generations 0 and 1.
MODES = {
    "append": (INCREMENTAL, 3, lambda: _expected() + (_expected(generation=1) - _expected())),
    "append_dedup": ([{**INCREMENTAL[0], "destination_sync_mode": "append_dedup",
                       "primary_key": ["id"]}], 3, lambda: _expected(generation=1)),
    "staged overwrite": ([{"name": "users", "sync_mode": "full_refresh",
                           "destination_sync_mode": "overwrite"}], 1,
                         lambda: _expected(generation=1)),
}


@pytest.mark.parametrize("mode", list(MODES))
def test_a_commit_refused_to_a_read_only_token_exits_3_and_the_next_sync_lands_it_once(
        spark: Any, gated: GatedCatalog, tmp_path: Path, namespace: str, mode: str) -> None:
    streams, per_checkpoint, expected = MODES[mode]
    loader = _config(gated, tmp_path, LOADER, namespace)
    first = _sync(_connection(tmp_path, loader, streams=streams, per_checkpoint=per_checkpoint))
    assert first.exit_code == 0, first.output
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    state = store.get_state(NAME, "users")
    snapshots = len(_table(gated, namespace).snapshots())

    # The reader's token loads the catalog and the table, and may not commit.
    reader = _config(gated, tmp_path, READER, namespace)
    refused = _sync(_connection(tmp_path, reader, streams=streams,
                                per_checkpoint=per_checkpoint, generation=1))
    _assert_refused(refused, store, says=[
        f"the Iceberg REST catalog at {gated.server.uri} refused a commit to table "
        f"{namespace}.users (forbidden; credential given)",
        "nothing of it landed (its marker is not in the table)"])
    assert store.get_state(NAME, "users") == state
    assert len(_table(gated, namespace).snapshots()) == snapshots

    again = _sync(_connection(tmp_path, loader, streams=streams, per_checkpoint=per_checkpoint,
                              generation=1))
    assert again.exit_code == 0, again.output
    assert _keyed(_table(gated, namespace).scan().to_arrow()) == expected()


#: What goes at the second checkpoint's commit (the launcher's switch, what it becomes) and
#: what the error says of it.  A revoked credential: PyIceberg renews the token on a 401 and
#: tries once more, and the renewal is refused.
GOING = {
    "token expires": ("expire-at-write", "all", [
        "refused a commit to table {namespace}.users (unauthorized; credential given)"]),
    "credential revoked": ("revoke-at-write", "revoked", [
        "the OAuth2 server at {uri}/v1/oauth/tokens refused the client credential "
        "(renewing its token for a commit to table {namespace}.users)"]),
}


#: What the error says of a commit whose lookup was refused too.
UNKNOWN = ("and looking it up in the table failed too (refused): could not check whether "
           "checkpoint {index} of stream users landed; the next sync resumes this run and "
           "checks again")


@pytest.mark.parametrize("going", list(GOING))
def test_a_token_or_credential_going_at_a_commit_mid_sync_exits_3_and_stays_resumable(
        spark: Any, gated: GatedCatalog, tmp_path: Path, namespace: str, going: str) -> None:
    switch, becomes, says = GOING[going]
    path = _connection(tmp_path, _config(gated, tmp_path, LOADER, namespace), per_checkpoint=1)
    refused, store, checkpoints = _sync_switching_after_the_first_commit(gated, path, switch)
    [unchecked] = [c for c in checkpoints if c.status == "failed"]
    assert unchecked.stats.get("outcome_unknown") is True, unchecked
    run = _assert_refused(refused, store, unknown=True, says=[
        *(words.format(namespace=namespace, uri=gated.server.uri) for words in says),
        UNKNOWN.format(index=unchecked.index)])
    assert gated.switch.read_text() == becomes  # the lookup after the refusal was refused too
    gated.switch.unlink()
    committed = [c.index for c in checkpoints if c.status in ("committed", "released")]
    assert len(committed) == 1, committed
    table = _table(gated, namespace)
    assert len(table.snapshots()) == 1
    assert 0 < table.scan().to_arrow().num_rows < SOURCE["users"]

    again = _sync(path)  # resumes the run: the refused checkpoint is written, once
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["runs"][0]["run_id"] == run.run_id
    assert _keyed(_table(gated, namespace).scan().to_arrow()) == _expected()
    assert store.get_run(run.run_id).status == "succeeded"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", list(MODES))
def test_a_commit_that_landed_while_its_answer_and_lookup_were_refused_is_kept_once(
        spark: Any, gated: GatedCatalog, tmp_path: Path, namespace: str, mode: str) -> None:
    """The catalog makes the second checkpoint's commit (a snapshot, a MERGE's rewrite, a
    staging), its answer is refused, and so is every call after it (the lookup included):
    exit 3, resumable; resumed, the commit is found by its marker and skipped, and a
    sync of the next generation lands exactly the world (the state is right)."""
    streams, _, expected = MODES[mode]
    config = _config(gated, tmp_path, LOADER, namespace)
    path = _connection(tmp_path, config, streams=streams, per_checkpoint=1)
    refused, store, checkpoints = _sync_switching_after_the_first_commit(
        gated, path, "refuse-answer-then-all")
    [unchecked] = [c for c in checkpoints if c.status == "failed"]
    run = _assert_refused(refused, store, unknown=True, says=[
        f"table {namespace}.users (forbidden; credential given)",
        UNKNOWN.format(index=unchecked.index)])
    assert gated.switch.read_text() == "all"  # the commit went through; then all refused
    gated.switch.unlink()

    again = _sync(path)
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["runs"][0]["run_id"] == run.run_id
    assert re.search(rf"checkpoint {unchecked.index} was already (committed|staged)",
                     again.output), again.output  # found by its marker, not read again
    rows = _table(gated, namespace).scan().to_arrow()
    assert _keyed(rows) == _expected()
    assert rows.num_rows == len(set(rows.column("id").to_pylist())) == SOURCE["users"]
    newer = _sync(_connection(tmp_path, config, streams=streams, per_checkpoint=1,
                              generation=1))
    assert newer.exit_code == 0, newer.output
    assert _keyed(_table(gated, namespace).scan().to_arrow()) == expected()


def test_a_commit_whose_answer_was_refused_after_it_landed_counts_as_committed_once(
        spark: Any, gated: GatedCatalog, tmp_path: Path, namespace: str) -> None:
    path = _connection(tmp_path, _config(gated, tmp_path, LOADER, namespace))
    assert _sync(path).exit_code == 0
    # The catalog makes the next commit; a gateway in front of it answers 403.
    gated.switch.write_text("refuse-answer-once")
    path = _connection(tmp_path, _config(gated, tmp_path, LOADER, namespace), generation=1)
    done = _sync(path)
    assert done.exit_code == 0, done.output
    assert not gated.switch.exists()  # the commit went through the gate, its answer refused
    assert "was refused after it landed, so it counts as committed" in done.output, done.output
    world0, world1 = _expected(), _expected(generation=1)
    table = _table(gated, namespace)
    assert _keyed(table.scan().to_arrow()) == world0 + (world1 - world0)
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    assert [run.status for run in store.list_runs(NAME)] == ["succeeded", "succeeded"]
    assert len(table.snapshots()) == 2  # one per checkpoint: nothing committed twice
    for secret in (LOADER_SECRET, ISSUED):
        assert secret not in done.output
