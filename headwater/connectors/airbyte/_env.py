"""Isolated virtual environments for Airbyte connectors, made once and reused.

An Airbyte Python connector (``airbyte-source-faker``) brings its own pinned
dependency tree (the Airbyte CDK, often pandas or pydantic pins that clash with
Headwater's), so it never shares Headwater's interpreter: each
``package==version`` gets its own venv under the connectors cache, and the
connector always runs as a separate process speaking the protocol on stdout.

Layout (the cache defaults to ``~/.cache/headwater/connectors``, or
``$HEADWATER_CONNECTOR_ENVS``)::

    <cache>/airbyte-source-faker-7.2.1/          the venv (ready when .headwater-ready exists)
    <cache>/airbyte-source-faker-7.2.1.tar.gz    the packed venv shipped to cluster executors
    <cache>/airbyte-source-faker-7.2.1.lock      serialises creation between processes

On a cluster the venv must exist on every executor: :meth:`ConnectorEnv.ship`
packs it once into a tarball and adds it to the Spark context as an archive
(``spark.archives``), which Spark unpacks into each executor's working
directory under :attr:`ConnectorEnv.alias`; :meth:`ConnectorEnv.command` prefers
that copy when it exists.  The packed venv keeps its interpreter symlink, so the
executors need the same Python at the same path as the driver (true for one
image across the cluster).

Instances are small and picklable: they travel to executors inside streams.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import subprocess
import sys
import tarfile
import threading
from dataclasses import dataclass
from pathlib import Path

from headwater.errors import ConfigError, ConnectorError

log = logging.getLogger(__name__)

ENVS_ENV = "HEADWATER_CONNECTOR_ENVS"
_READY = ".headwater-ready"
_PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: pip installing a connector with the Airbyte CDK takes minutes on a busy machine.
INSTALL_TIMEOUT_S = 1800
_shipped: set[str] = set()
_ship_lock = threading.Lock()


def envs_root(explicit: str | None = None) -> Path:
    """Where connector venvs live: ``explicit``, ``$HEADWATER_CONNECTOR_ENVS`` or the user cache."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    if os.environ.get(ENVS_ENV):
        return Path(os.environ[ENVS_ENV]).expanduser().resolve()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "headwater" / "connectors"


@dataclass(frozen=True)
class ConnectorEnv:
    """How to start one connector: a pinned package in a managed venv, or a command.

    ``package``/``version``: installed with pip into ``root/<package>-<version>``;
    the process is the venv's interpreter running the package's console script
    (``entrypoint``, by default the package name without ``airbyte-``:
    ``source-faker``).  ``command``: run as given (a local executable connector,
    or ``docker run ...``); nothing is installed then.
    """

    package: str | None = None
    version: str | None = None
    command_line: tuple[str, ...] = ()
    entrypoint: str | None = None
    root: str = ""

    def __post_init__(self) -> None:
        if self.command_line:
            return
        if not self.package or not self.version:
            raise ConfigError("an Airbyte source needs either `command`, or `package` with a "
                              "pinned `version`", field="source.config.package")
        for value, name in ((self.package, "package"), (self.version, "version")):
            if not _PIN.match(value):
                raise ConfigError(f"{name} {value!r} is not a plain package name or version "
                                  "(pin an exact version, e.g. 7.2.1)",
                                  field=f"source.config.{name}")

    @property
    def label(self) -> str:
        return f"{self.package}=={self.version}" if self.package else " ".join(self.command_line)

    @property
    def alias(self) -> str:
        """The folder name of the unpacked archive on executors."""
        return f"hw-env-{self.package}-{self.version}".replace(".", "_")

    @property
    def venv(self) -> Path:
        return Path(self.root) / f"{self.package}-{self.version}"

    @property
    def script(self) -> str:
        return self.entrypoint or (self.package or "").removeprefix("airbyte-")

    def command(self) -> list[str]:
        """The argv prefix that starts the connector on this machine (driver or executor)."""
        if self.command_line:
            return list(self.command_line)
        venv = self.venv
        shipped = _unpacked_archive(self.alias)
        if shipped is not None:
            venv = shipped
        elif not (venv / _READY).exists():
            self.ensure()
        # The console script's shebang names the driver's path; run it through the
        # venv's own interpreter so an unpacked copy works anywhere.
        return [str(venv / "bin" / "python"), str(venv / "bin" / self.script)]

    def ensure(self) -> Path:
        """Create the venv and install the pinned package, once (other processes wait)."""
        if self.command_line:
            raise ConnectorError("a command connector has no venv to create")
        venv = self.venv
        if (venv / _READY).exists():
            return venv
        venv.parent.mkdir(parents=True, exist_ok=True)
        with open(venv.parent / f"{venv.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if (venv / _READY).exists():
                return venv
            log.warning("installing %s into %s (once; later runs reuse it)", self.label, venv)
            _run([sys.executable, "-m", "venv", "--clear", str(venv)], self.label)
            _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                  "--disable-pip-version-check", f"{self.package}=={self.version}"], self.label)
            if not (venv / "bin" / self.script).exists():
                raise ConnectorError(
                    f"{self.label} installed, but it has no console script {self.script!r}; "
                    "set `entrypoint` to the script it provides", field="source.config.entrypoint")
            (venv / _READY).write_text(f"{self.label}\n")
        return venv

    def pack(self) -> Path:
        """The venv as a ``.tar.gz`` for ``spark.archives`` (made once, next to the venv)."""
        venv = self.ensure()
        archive = venv.parent / f"{venv.name}.tar.gz"
        if archive.exists():
            return archive
        partial = archive.with_suffix(".partial")
        with tarfile.open(partial, "w:gz") as tar:
            for child in sorted(venv.iterdir()):
                tar.add(child, arcname=child.name)
        partial.rename(archive)
        return archive

    def ship(self) -> None:
        """On a cluster, add the packed venv to the Spark context (once per process).

        Local masters need nothing: executors are on this machine and use the
        venv in place.  Spark Connect clients cannot add archives this way; the
        venv must then be present on the executors at the same path.
        """
        if self.command_line:
            return
        try:
            from pyspark import SparkContext
        except ImportError:  # the Airbyte CLI path runs without Spark
            return
        context = SparkContext._active_spark_context
        if context is None or str(context.master).startswith("local"):
            return
        with _ship_lock:
            if self.alias in _shipped:
                return
            archive = self.pack()
            context.addArchive(f"{archive}#{self.alias}")
            _shipped.add(self.alias)
            log.info("shipped %s to the executors as %s", self.label, self.alias)


def _unpacked_archive(alias: str) -> Path | None:
    """The executor's unpacked copy of a shipped venv, if this process has one."""
    if "pyspark" not in sys.modules:
        # Not a Spark worker (those run inside PySpark): the driver before Spark, or
        # the CLI; importing PySpark here would put its import before the connector's start.
        return None
    try:
        from pyspark import SparkFiles
    except ImportError:
        return None
    for base in (Path.cwd(), Path(_spark_files_root(SparkFiles) or "")):
        candidate = base / alias
        if (candidate / _READY).exists():
            return candidate
    return None


def _spark_files_root(spark_files: object) -> str | None:
    try:
        return str(spark_files.getRootDirectory())  # type: ignore[attr-defined]
    except Exception:  # no SparkContext/TaskContext in this process
        return None


def _run(argv: list[str], label: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConnectorError(f"installing {label} failed: {exc}") from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise ConnectorError(f"installing {label} failed (exit {done.returncode}): "
                             + " | ".join(tail))
