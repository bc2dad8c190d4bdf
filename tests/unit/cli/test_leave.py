"""The console entry point leaves without the interpreter's teardown once a command
said its work is done (``headwater.cli._leave``), and exits as usual otherwise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: A program that runs the real entry point on a command of its own.  ``Torn`` is
#: only destroyed by the interpreter's teardown (a module global at exit); the
#: atexit handler and the unflushed output must survive either way.
PROGRAM = """
import atexit, sys, threading, time
from pathlib import Path

import typer

from headwater.cli import _leave
from headwater.cli.app import app, main

marks = Path(sys.argv[1])

class Torn:
    def __del__(self):
        with marks.open("a") as out:
            out.write("teardown\\n")

torn = Torn()
atexit.register(lambda: marks.open("a").write("atexit\\n"))

def late():
    time.sleep(0.2)  # a thread that is not a daemon: the exit still waits for it
    with marks.open("a") as out:
        out.write("thread\\n")

@app.command("probe")
def probe(done: bool = False, code: int = 0) -> None:
    threading.Thread(target=late).start()
    sys.stdout.write("answer")  # not flushed: leaving must flush it
    if done:
        _leave.done()
    if code:
        raise typer.Exit(code)

main(["probe", *sys.argv[2:]])
"""


def run(tmp_path: Path, *args: str) -> tuple[int, str, list[str]]:
    marks = tmp_path / "marks.txt"
    marks.touch()
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(marks), *args],
                          capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, done.stdout, marks.read_text().split()


@pytest.mark.parametrize("code", [0, 3])
def test_a_command_that_is_done_leaves_without_the_teardown(tmp_path: Path,
                                                            code: int) -> None:
    returncode, out, marks = run(tmp_path, "--done", "--code", str(code))
    assert returncode == code
    assert out == "answer"
    assert marks == ["thread", "atexit"]  # no teardown: the object was never destroyed


def test_other_commands_exit_as_usual(tmp_path: Path) -> None:
    returncode, out, marks = run(tmp_path)
    assert (returncode, out) == (0, "answer")
    assert marks == ["thread", "atexit", "teardown"]
