"""``headwater`` with faults installed: the crash tests' entry point (test-only).

    python -m tests._faulty_cli [--fault MOMENT:N] [--pause MOMENT:SECONDS] -- ARGS...

installs the faults of :mod:`tests._faults`, then runs ``headwater ARGS`` in
this very process.  The task listeners (``--pause``) travel to the Spark
Python workers pickled by value, so the workers need not import ``tests``.
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="tests._faulty_cli")
    parser.add_argument("--fault", action="append", default=[])
    parser.add_argument("--pause", action="append", default=[])
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    args = options.args[1:] if options.args[:1] == ["--"] else options.args

    from pyspark import cloudpickle

    from tests import _faults

    cloudpickle.register_pickle_by_value(_faults)
    for spec in options.fault:
        _faults.install_fault(spec)
    for spec in options.pause:
        _faults.install_pause(spec)

    from headwater.cli.app import main as headwater

    sys.argv = ["headwater", *args]
    headwater(args)


if __name__ == "__main__":
    main(sys.argv[1:])
