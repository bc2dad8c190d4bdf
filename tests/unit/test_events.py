"""Moments reach their listeners; the test faults act on the Nth pass only."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pytest

from headwater import _events
from tests._faults import InjectedFault, Pause, install_fault


@pytest.fixture(autouse=True)
def no_listeners() -> Iterator[None]:
    _events.clear()
    yield
    _events.clear()


def test_listeners_hear_every_moment_in_order() -> None:
    heard: list[str] = []
    _events.emit("after-plan")  # nobody listening: nothing happens
    _events.listen(heard.append)
    _events.emit("after-plan")
    _events.emit("after-commit")
    assert heard == ["after-plan", "after-commit"]


def test_a_forgotten_listener_hears_nothing_more() -> None:
    heard: list[str] = []
    _events.listen(heard.append)
    _events.emit("after-plan")
    _events.forget(heard.append)
    _events.forget(heard.append)  # forgetting twice is harmless
    _events.emit("after-commit")
    assert heard == ["after-plan"]


def test_the_kits_simulated_kill_ends_at_the_nth_moment_and_every_later_one() -> None:
    from headwater.destinations.testing import Killed, killed_at

    with killed_at("after-commit", 2):
        _events.emit("after-commit")
        with pytest.raises(Killed):
            _events.emit("after-commit")
        with pytest.raises(Killed):  # a thread reaching a later moment "died" too
            _events.emit("after-release")
    _events.emit("after-commit")  # gone with its ``with``


def test_task_listeners_are_captured_when_a_task_is_built() -> None:
    assert _events.task_listeners() == ()
    _events.listen_in_tasks(Pause("reading", 0.0))
    [pause] = _events.task_listeners()
    assert isinstance(pickle.loads(pickle.dumps(pause)), Pause)


def test_a_raise_fault_raises_on_its_nth_pass_only() -> None:
    install_fault("raise-commit-landed:2")
    _events.emit("commit-landed")
    _events.emit("after-commit")  # another moment: not counted, not hit
    with pytest.raises(InjectedFault, match="commit-landed"):
        _events.emit("commit-landed")
    _events.emit("commit-landed")


def test_the_engine_reads_no_fault_from_the_environment() -> None:
    from pathlib import Path

    import headwater

    package = Path(headwater.__file__).parent
    found = [str(p.relative_to(package)) for p in package.rglob("*.py")
             if "HEADWATER_FAULT" in p.read_text()]
    assert found == []
