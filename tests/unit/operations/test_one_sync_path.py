"""Every run's engine is built by :func:`headwater.operations.start_engine`, so a sync from
the page, ``serve``, ``replay``/``backfill``, the destination kit or the class archive's
training run is the sync ``headwater sync`` runs (early reads, Spark started and timed).

Issue 39 found it built in nine places, and only the CLI's sync started the early reads
and timed its steps.  What may still build one: the module that builds it for everyone,
and the previews that run nothing (``headwater plan``, the page's backfill plan).
"""

from __future__ import annotations

import ast
from pathlib import Path

import headwater

#: file -> functions of it that may call ``SyncEngine(...)``, and why.
ALLOWED = {
    "operations/_sync_runner.py": {"start_engine"},  # the one place a run's engine is built
    "cli/_plan_cmd.py": {"plan"},  # `headwater plan`: a preview, no run, no Spark
    "ui/_actions.py": {"backfill_plan"},  # the page's backfill plan: a preview as well
}


def _engine_builders() -> dict[str, set[str]]:
    """file (under headwater/) -> the functions that call ``SyncEngine(...)``."""
    root = Path(headwater.__file__).parent
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        if "SyncEngine(" not in text:  # parsing every module would take seconds
            continue
        tree = ast.parse(text, str(path))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id == "SyncEngine"):
                    found.setdefault(path.relative_to(root).as_posix(), set()).add(
                        function.name)
    return found


def test_a_run_engine_is_built_only_by_operations_start_engine() -> None:
    builders = _engine_builders()
    assert builders.get("operations/_sync_runner.py") == {"start_engine"}
    strays = {file: names - ALLOWED.get(file, set()) for file, names in builders.items()}
    assert {file: names for file, names in strays.items() if names} == {}
