"""A destination's error in one line a person can act on, whatever raised it."""

from __future__ import annotations

from headwater.destinations._error_line import error_line, telling_line

#: What Spark 4 says when a Python worker died on its way up (the text starts with a blank
#: line after the exception's name, so its first line named nothing).
WORKER = ("org.apache.spark.SparkException: \n" """Error from python worker:
  Traceback (most recent call last):
    File "<frozen runpy>", line 198, in _run_module_as_main
  OSError: [Errno 24] Too many open files
PYTHONPATH was:
  /opt/spark/python/lib/pyspark.zip
""")


def test_a_python_worker_that_died_starting_is_told_by_what_it_raised() -> None:
    assert telling_line(WORKER) == (
        "org.apache.spark.SparkException: Error from python worker: "
        "OSError: [Errno 24] Too many open files")


def test_a_one_line_error_is_its_first_line_without_the_stack_trace() -> None:
    assert telling_line("java.lang.IllegalStateException: bad\n\tat a.b(C.java:1)\n") == (
        "java.lang.IllegalStateException: bad")
    assert telling_line("\n\n") == ""


def test_a_copy_task_s_error_is_told_by_what_the_worker_raised() -> None:
    text = ("An exception was thrown from the Python worker:\nTraceback (most recent call "
            "last):\n  File \"x.py\", line 1, in f\n    copy()\npsycopg.errors.UniqueViolation: "
            "duplicate key\nDETAIL:  Key (id)=(1) already exists.")
    assert error_line(RuntimeError(text)) == (
        "RuntimeError: An exception was thrown from the Python worker: "
        "psycopg.errors.UniqueViolation: duplicate key")


def test_a_python_error_is_its_type_and_first_line() -> None:
    assert error_line(ValueError("no table x\nmore detail")) == "ValueError: no table x"
    assert error_line(OSError()) == "OSError: "


def test_a_python_worker_s_error_in_pyspark_4_s_words_is_told_by_what_it_raised() -> None:
    text = ("\n  An exception was thrown from the Python worker. Please see the stack trace "
            "below.\nTraceback (most recent call last):\n  File \"w.py\", line 3, in run\n"
            "    raise AuthenticationError('refused')\n"
            "headwater.errors.AuthenticationError: password authentication failed\n")
    assert telling_line(text) == (
        "An exception was thrown from the Python worker. Please see the stack trace below. "
        "headwater.errors.AuthenticationError: password authentication failed")
