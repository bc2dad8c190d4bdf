"""A failed Spark job's error in one line a person can act on."""

from __future__ import annotations

from headwater.destinations.delta._errors import telling_line

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
