"""Getting a SparkSession with what the destination needs, wherever the sync runs.

The same connection file runs on ``local[*]``, on a cluster (``--master``), on
Spark Connect (``--remote``) and under ``spark-submit``; only this module knows
the difference.  Rules it follows:

* What a session needs (jars, extensions, catalogs, the table format's
  settings) is the destination's to say (``Destination.capabilities.spark``, a
  :class:`~headwater.destinations.SparkRequirements`); settings that name none
  get what every built-in destination needs.
* An active session (spark-submit, a notebook, the test suite) is used as it is;
  it must already have the destination's extensions, and we say so if it does not;
  the connection's ``spark.master`` and ``spark.conf`` it does not hold are refused
  (``serve``, the page) or warned of (:mod:`~headwater.engine._session_fit`).
* Spark Connect sessions are configured on the server; we only connect.
* Otherwise we start one: the jars come from Maven Central through
  ``spark.jars.packages`` (Ivy), or from a folder ``scripts/setup`` filled with
  ``mvn dependency:copy`` when Ivy could not reach Maven Central
  (``$HEADWATER_HOME/jars`` or the user's cache, see :func:`fetched_jars_dir`).
* Python workers must run this interpreter (``PYSPARK_PYTHON``), or they start
  the system Python and cannot import pyarrow.
* A JVM we start maps the class archive ``scripts/setup`` built, if there is one
  (:mod:`~headwater.engine._class_archive`), and on a local master the Python
  workers import PySpark from its package (:mod:`~headwater.engine._python_daemon`):
  start-up is most of a small sync's time.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from headwater.engine import _unsigned_jars
from headwater.engine._class_archive import CACHE_ENV as CACHE_ENV
from headwater.engine._class_archive import cache_dir, driver_java_options, spark_jars_dir
from headwater.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.destinations import SparkRequirements

log = logging.getLogger(__name__)

DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"

#: A folder of jars to use instead of resolving them (Maven-fetched, or the user's).
LOCAL_JARS_ENV = "HEADWATER_JARS_DIR"
#: Headwater's per-project folder (metadata store, logs); the CLI reads it too.
HOME_ENV = "HEADWATER_HOME"


@dataclass(frozen=True)
class SparkSettings:
    """Where and how to run Spark; built from the CLI flags and the connection file."""

    master: str | None = None
    remote: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    app_name: str = "headwater"
    #: Spark's own JVM output goes here instead of the terminal (None: inherit).
    jvm_log_path: Path | None = None
    #: What the destination needs of the session (None: every built-in destination's).
    requirements: SparkRequirements | None = None
    #: How much lower than this process's CPU priority (Unix nice) a JVM started on
    #: this machine runs: the engine sets it when reads started before Spark
    #: (:mod:`~headwater.engine._jvm_priority`); 0 keeps the same priority.
    jvm_nice: int = 0
    #: Where a session already runs and lacks ``master`` or a ``conf`` setting
    #: (:mod:`~headwater.engine._session_fit`): refuse the sync (True: ``serve``'s and
    #: the page's, whose one session serves every connection), or warn (False).
    refuse_unapplied: bool = False

    def needs(self) -> SparkRequirements:
        """The destination's needs plus the S3 connector's (:mod:`~headwater.engine._s3a`):
        any table or source may live on ``s3a://``, and its jars are small."""
        from headwater.engine._s3a import S3A_NEEDS

        if self.requirements is not None:
            return self.requirements.merged(S3A_NEEDS)
        from headwater.destinations import spark_requirements

        return spark_requirements().merged(S3A_NEEDS)


def maven_jars_dir() -> Path:
    """Where ``scripts/setup`` puts Maven-fetched jars: the user's cache
    (``~/.cache/headwater/jars``), never the source tree, which an installed wheel lacks."""
    return cache_dir() / "jars"


def fetched_jars_dir(needs: SparkRequirements) -> Path | None:
    """A folder of already-fetched jars for ``needs``, if the set-up had to make one:
    ``$HEADWATER_JARS_DIR``, ``$HEADWATER_HOME/jars``, then :func:`maven_jars_dir`."""
    if not needs.jar_prefix:
        return None
    candidates = [Path(value) for value in (os.environ.get(LOCAL_JARS_ENV),) if value]
    home = os.environ.get(HOME_ENV)
    if home:
        candidates.append(Path(home) / "jars")
    candidates.append(maven_jars_dir())
    for folder in candidates:
        if folder.is_dir() and any(folder.glob(f"{needs.jar_prefix}*.jar")):
            return folder
    return None


def resolved_jars_file(needs: SparkRequirements | None = None) -> Path:
    """Where the jar files Ivy resolved for ``needs``' packages are listed once known.

    Resolving the package again at every start, even from Ivy's own cache, cost
    about 2 s of each new session on a busy 2-core machine (a CLI sync of a few
    rows: ``bench/postgres_incremental_vs_dlt.py``); and ``spark.jars.packages``
    also puts every resolved jar on the Python workers' ``sys.path``, where each
    of their imports searches them.  So after one session resolved it, later
    ones name the same files in ``spark.jars``.
    """
    packages = ",".join((needs or SparkSettings().needs()).packages)
    return cache_dir() / f"jars-{packages.replace(':', '_').replace(',', '+')}.txt"


def _cached_jars(needs: SparkRequirements) -> list[str] | None:
    """The jar files an earlier session resolved, if every one of them is still there."""
    try:
        jars = [line for line in resolved_jars_file(needs).read_text().splitlines() if line]
    except OSError:
        return None
    if not jars or not all(Path(jar).is_file() for jar in jars):
        return None
    return jars


def _remember_jars(spark: SparkSession, needs: SparkRequirements | None = None) -> None:
    """List the jar files Ivy just resolved for the next start (best effort)."""
    needs = needs or SparkSettings().needs()
    try:
        conf = spark.sparkContext.getConf()
        listed = (conf.get("spark.jars") or "").split(",")
        if not any(listed):  # a local session started from a list names them on its class path
            listed = [entry for entry in (conf.get(DRIVER_CLASS_PATH) or "").split(os.pathsep)
                      if not entry.endswith("*")]
        jars = [jar.removeprefix("file://").removeprefix("file:") for jar in listed if jar]
        if not jars or not all(Path(jar).is_file() for jar in jars) \
                or not any(needs.jar_prefix in Path(jar).name for jar in jars):
            return
        target = resolved_jars_file(needs)
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text("\n".join(jars) + "\n")
        temporary.replace(target)
    except Exception as exc:  # a cache only: the next start resolves again
        log.debug("could not remember the resolved jars: %s", exc)


#: The driver JVM's own class path, before Spark's jars (Spark's launcher puts it first).
DRIVER_CLASS_PATH = "spark.driver.extraClassPath"
#: Masters whose executor runs inside the driver JVM (not ``local-cluster[...]``).
_EXECUTOR_IN_THE_DRIVER = re.compile(r"local(\[[^\]]*\])?")


def _known_jars(settings: SparkSettings, needs: SparkRequirements) -> list[str] | None:
    """The destination's jar files when they are known without Ivy: a folder of fetched
    jars, or the list an earlier session resolved (None: resolve them, or the settings
    name jars of their own, which Ivy resolves with the destination's)."""
    folder = fetched_jars_dir(needs)
    if folder is not None:
        return [str(path) for path in sorted(folder.glob("*.jar"))]
    return None if _own_jars(settings) else _cached_jars(needs)


def local_driver_class_path(settings: SparkSettings | None = None) -> str:
    """The extra class path a local session's driver JVM starts with ("" if none): what
    the class archive is built for (:mod:`~headwater.engine._class_archive`).

    On a local master the driver is the executor too, so the destination's jars go on
    the driver's class path instead of ``spark.jars``.  Why: Spark hands every
    ``spark.jars`` entry to its executors through the driver's file server, and a local
    executor, being in the same JVM, fetched all of them (68 jars, 98 MB) into
    ``/tmp/spark-*/userFiles-*`` at the first task and opened them a second time; and
    ``spark-submit`` first resolved each entry through Hadoop's file system (its
    ``Configuration`` parsed for it).  In a Java Flight Recorder profile of a 100-row
    sync's JVM that was about a fifth of the samples before the first task finished
    (``docs/versions.md``).  A cluster's driver starts with the same class path (so the
    class archive fits it too) and also names the jars in ``spark.jars``, which its
    executors fetch as before.
    """
    return _base_conf(settings or SparkSettings(master="local[2]")).get(DRIVER_CLASS_PATH, "")


def _merge_class_path(merged: dict[str, str], ours: Mapping[str, str],
                      users: Mapping[str, str]) -> None:
    """Keep the destination's jars on the driver's class path beside a user's own
    ``spark.driver.extraClassPath`` (theirs first, so their classes win)."""
    if DRIVER_CLASS_PATH in ours and DRIVER_CLASS_PATH in users \
            and users[DRIVER_CLASS_PATH] != ours[DRIVER_CLASS_PATH]:
        merged[DRIVER_CLASS_PATH] = os.pathsep.join(
            filter(None, [users[DRIVER_CLASS_PATH], ours[DRIVER_CLASS_PATH]]))


def _base_conf(settings: SparkSettings) -> dict[str, str]:
    python = sys.executable
    needs = settings.needs()
    conf = {
        **needs.conf,
        "spark.sql.session.timeZone": "UTC",
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": python,
        "spark.executorEnv.PYSPARK_PYTHON": python,
        # Our own progress display replaces Spark's console bar.
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # Nothing Headwater starts listens beyond this machine unless asked to.
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
    }
    master = settings.master or "local[*]"
    if master.startswith("local"):
        conf["spark.ui.enabled"] = "false"
        conf["spark.sql.shuffle.partitions"] = str(max(2, (os.cpu_count() or 2) * 2))
        conf.update(needs.local_conf)
        # The executors run this very Python: import PySpark from its package, not its zip.
        conf["spark.python.daemon.module"] = "headwater.engine._python_daemon"
        conf[EXTENSIONS_FROM_CLASSPATH] = "false"
    jars = _known_jars(settings, needs)
    spark_jars = spark_jars_dir()
    if jars is not None:
        if spark_jars is not None:
            # Spark's own jars first, as when ours were in spark.jars: theirs win a clash
            # (Ivy's list holds older copies of some, jackson-databind 2.13 for one).
            # Before them, unsigned copies of Spark's signed jars, if setup made them.
            # A cluster's driver gets the same class path: the one class archive fits it.
            conf[DRIVER_CLASS_PATH] = os.pathsep.join(
                [*map(str, _unsigned_jars.copies(spark_jars)), str(spark_jars / "*"), *jars])
        if spark_jars is None or not _EXECUTOR_IN_THE_DRIVER.fullmatch(master):
            conf["spark.jars"] = ",".join(jars)  # executors in JVMs of their own fetch them
    elif needs.packages:
        conf["spark.jars.packages"] = ",".join(needs.packages)
        conf["spark.jars.ivySettings"] = str(Path(__file__).with_name("ivysettings.xml"))
    # Decided with the user's own settings in view (their heap size, their collector).
    with_users = {**conf, **settings.conf}
    _merge_class_path(with_users, conf, settings.conf)
    _add_driver_jvm_options(with_users, local=master.startswith("local"))
    if DRIVER_JAVA_OPTIONS in with_users:
        conf[DRIVER_JAVA_OPTIONS] = with_users[DRIVER_JAVA_OPTIONS]
    return conf


#: The driver JVM compiles code to machine code later than by default (HotSpot's
#: thresholds times 10).  Why: on a 2-core machine the JIT compilers of a JVM that
#: Headwater starts took about 7 of the 17 CPU-seconds its JVM spent in a 100-row
#: sync, CPU the connector, the HTTP reads and the tasks' Python were waiting
#: for.  At ten times the thresholds the same sync's JVM spent 11.4 CPU-seconds,
#: and a 40,000,000-row Spark job (write Parquet, read, aggregate) 42 instead of
#: 47: code that stays hot is still compiled, lukewarm start-up code is not.
#: (C1 only, ``-XX:TieredStopAtLevel=1``, saved as much at start but made that
#: job about 3x slower.)  A user's own ``CompileThresholdScaling`` or JIT choice wins.
LAZY_JIT_OPTION = "-XX:CompileThresholdScaling=10"
_JIT_OPTIONS = ("CompileThresholdScaling", "TieredStopAtLevel", "TieredCompilation", "-Xint",
                "-Xcomp")
#: Where else a user's JVM options reach the driver JVM: the JVM reads these variables
#: itself, and Spark puts ``spark.driver.defaultJavaOptions`` before the extra ones.
_JAVA_OPTIONS_ENV = ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS")
_DEFAULT_JAVA_OPTIONS = "spark.driver.defaultJavaOptions"


def _users_java_options(conf: Mapping[str, str]) -> str:
    """Every JVM option of the user's that reaches the driver JVM, as one string."""
    return " ".join(filter(None, [conf.get(DRIVER_JAVA_OPTIONS), conf.get(_DEFAULT_JAVA_OPTIONS),
                                  *(os.environ.get(name) for name in _JAVA_OPTIONS_ENV)]))


#: Spark's switch for the session extensions its jars name in ``META-INF/services``
#: (``SparkSessionExtensionsProvider``), which a session we start on a local master
#: turns off.  The only provider in Spark's and the destinations' jars is Spark ML's
#: ``InternalFunctionRegistration``, which registers ML's SQL functions for Spark
#: Connect through Scala reflection: the largest single piece of a session's start
#: in a Java Flight Recorder profile of a faker sync's JVM (47 of 238 samples of
#: the threads serving Python's calls, about 0.9 CPU-seconds on the 2-core machine),
#: for functions no sync calls.  Measured directly (``bench/jvm_options_work.py
#: --rows 1000 --repeat 3``, a loaded machine): the JVM's CPU 24.7 s against 25.5 s
#: (medians; ranges 23.3-25.6 and 24.4-26.2).  Extensions named in ``spark.sql.extensions``
#: (the table format's) load as before; a user's own value of the key wins.  (Spark calls it a
#: test flag; an unknown key is ignored, so a Spark without it is unaffected.)
EXTENSIONS_FROM_CLASSPATH = "spark.sql.extensions.test.loadFromCp"


#: A driver JVM on a local master collects garbage with the serial collector
#: instead of G1.  Why: that JVM is also the executor, on the machine the connector
#: and the tasks' Python share, and CPU it spends is theirs.  Measured from /proc on
#: the 2-core machine (loaded; medians of 2, ``bench/airbyte_faker.py --cpu`` and
#: ``bench/jvm_options_work.py``): a 10,000,000-row job where the JVM does the work
#: (Parquet written, read, aggregated, then a table by Spark's writer) 45.6 CPU-seconds
#: of JVM against G1's 52.7 (ranges 43.6-47.6 and 51.4-54.0; which threads saved it
#: was not broken down); a faker 200,000 sync's JVM 8.1 against 8.9, inside that
#: benchmark's spread (its collectors' own threads spend 0.2 CPU-seconds either way,
#: its JIT compilers 1.3 against 1.5).  One GC thread for
#: G1 (``ParallelGCThreads=1``) saved nothing (56.3 and 9.3).  Again, interleaved
#: (``airbyte_faker.py --users 200000 --repeat 3 --cpu``, load 5-10): a faker sync's
#: JVM 6.4 CPU-seconds (5.6-6.8) with this collector and no classpath extensions,
#: 7.1 (7.0-7.3) with G1 and them; the 10,000,000-row job 45.0 against 49.7.  The heap Spark gives a
#: local driver (``spark.driver.memory``, 1g) is small enough for serial pauses; a
#: driver given more than :data:`SERIAL_GC_MAX_HEAP_MB` keeps G1, and so does a user
#: who chose a collector or GC threads anywhere the JVM reads options.
SERIAL_GC_OPTION = "-XX:+UseSerialGC"
SERIAL_GC_MAX_HEAP_MB = 4096
_GC_CHOICE = re.compile(r"-XX:[+-]Use\w*GC\b|GCThreads")
_MEMORY = re.compile(r"\s*(\d+)\s*([kmgt]?)b?\s*", re.IGNORECASE)


def _heap_mb(value: str | None) -> float | None:
    """Megabytes of a JVM memory size as Spark writes it (``1g``, ``2048m``; bare: MiB)."""
    match = _MEMORY.fullmatch(value or "1g")
    if match is None:
        return None
    scale = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024 * 1024}[match[2].lower()]
    return int(match[1]) * scale


def _add_driver_jvm_options(conf: dict[str, str], *, local: bool = False) -> None:
    """Start the driver JVM from the class archive, if ``scripts/setup`` built one, with
    :data:`LAZY_JIT_OPTION` unless the user's options choose their own JIT settings, and,
    on a local master, with :data:`SERIAL_GC_OPTION` unless they choose a collector."""
    options = driver_java_options(conf.get(DRIVER_JAVA_OPTIONS), conf.get(DRIVER_CLASS_PATH, ""))
    if options is not None:
        conf[DRIVER_JAVA_OPTIONS] = options
    chosen = _users_java_options(conf)
    ours = []
    if not any(option in chosen for option in _JIT_OPTIONS):
        ours.append(LAZY_JIT_OPTION)
    heap = _heap_mb(conf.get("spark.driver.memory"))
    if local and not _GC_CHOICE.search(chosen) and heap is not None \
            and heap <= SERIAL_GC_MAX_HEAP_MB:
        ours.append(SERIAL_GC_OPTION)
    if ours:
        conf[DRIVER_JAVA_OPTIONS] = " ".join([conf.get(DRIVER_JAVA_OPTIONS) or "", *ours]).strip()


#: ``spark-submit`` first runs a launcher JVM of its own (``org.apache.spark.launcher.Main``,
#: ``-Xmx128m``, Spark's 250 jars on its class path) that only prints the driver's
#: command and exits; ``SPARK_LAUNCHER_OPTS`` is the one way to give it options.  It
#: lives a fraction of a second, so the optimizing JIT (C2) only costs it: measured on
#: the 2-core machine, 0.26-0.31 CPU-seconds per launch by default, 0.16-0.20 with C1
#: only (5 runs each, the launcher alone, given a few ``--conf``); the serial
#: collector for its small heap saved nothing more measurable.  Set only when the user
#: set no options of their own for it, and only while the launcher starts.
LAUNCHER_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
LAUNCHER_OPTIONS_ENV = "SPARK_LAUNCHER_OPTS"


@contextlib.contextmanager
def _launcher_options() -> Iterator[None]:
    """:data:`LAUNCHER_OPTIONS` for a spark-submit launched meanwhile, unless the user's are set."""
    if LAUNCHER_OPTIONS_ENV in os.environ:
        yield
        return
    os.environ[LAUNCHER_OPTIONS_ENV] = LAUNCHER_OPTIONS
    try:
        yield
    finally:
        os.environ.pop(LAUNCHER_OPTIONS_ENV, None)


def _own_jars(settings: SparkSettings) -> bool:
    """The settings name jars of their own: Ivy resolves them with the destination's, as asked."""
    return any(key in settings.conf for key in ("spark.jars", "spark.jars.packages"))


@contextlib.contextmanager
def _jvm_output_to(path: Path | None) -> Iterator[None]:
    """Send what the JVM prints while it starts (Ivy, log4j) to a file.

    The JVM inherits this process's stdout/stderr when PySpark launches it and
    keeps them for its whole life, so pointing fds 1 and 2 at a log file for
    the moment of the launch keeps Spark's chatter out of the terminal.
    """
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab") as sink:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _start_context_below(settings: SparkSettings, conf: Mapping[str, str]) -> None:
    """Start the JVM ``settings.jvm_nice`` below this process's CPU priority (see
    :mod:`~headwater.engine._jvm_priority`), where this machine allows it; the
    builder then makes its session on that context."""
    from pyspark import SparkContext

    from headwater.engine._jvm_priority import lower_priority_possible, start_context_below

    if SparkContext._active_spark_context is not None or not lower_priority_possible():
        return
    start_context_below(settings.jvm_nice, {
        **conf, "spark.master": settings.master or "local[*]",
        "spark.app.name": settings.app_name})


def _missing_extensions(spark: SparkSession, needs: SparkRequirements) -> list[str]:
    """The session extensions ``needs`` names that the running session lacks."""
    wanted = [e for e in needs.conf.get("spark.sql.extensions", "").split(",") if e]
    try:
        extensions = spark.conf.get("spark.sql.extensions", "") or ""
    except Exception:  # Spark Connect may refuse to show static confs
        return []
    return [e for e in wanted if e not in extensions]


def _how_to_start(needs: SparkRequirements) -> str:
    flags = [f"--packages {','.join(needs.packages)}"] if needs.packages else []
    flags += [f"--conf {key}={value}" for key, value in needs.conf.items()
              if key in ("spark.sql.extensions", "spark.sql.catalog.spark_catalog")]
    return " ".join(flags)


def default_parallelism(spark: SparkSession) -> int:
    """How many tasks the session runs at once (its default parallelism)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext on the client
        return int(spark.conf.get("spark.default.parallelism", "4") or 4)


#: The warnings :func:`_say_unapplied` gave: each once per process (a sync asks twice).
_WARNED: set[str] = set()


def _say_unapplied(active: SparkSession, settings: SparkSettings) -> None:
    """Refuse (``settings.refuse_unapplied``) or warn of the settings the running
    session does not hold: they would not act (:mod:`~headwater.engine._session_fit`).
    Names the settings, never their values (a key may be a secret)."""
    from headwater.engine._session_fit import unapplied_settings

    unapplied = unapplied_settings(active, settings.master, settings.conf)
    if not unapplied:
        return
    what = (f"{settings.app_name}: the Spark session this process already runs (one "
            "serves every sync of a process: serve's, the web page's, a notebook's) does "
            f"not have {', '.join(unapplied)} as the settings say")
    if settings.refuse_unapplied:
        raise ConfigError(f"{what}, so they would not act; give every connection this "
                          "process syncs the same spark settings, or sync this one with "
                          "headwater sync (a process of its own)", field=unapplied[0])
    if what not in _WARNED:
        _WARNED.add(what)
        log.warning("%s; they are not applied", what)


def get_spark(settings: SparkSettings) -> SparkSession:
    """Return the session a sync runs on (see the module docstring for the rules)."""
    from pyspark.sql import SparkSession

    if settings.master and settings.remote:
        raise ConfigError("choose either a Spark master or a Spark Connect remote, not both",
                          field="spark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    if settings.remote:
        builder = SparkSession.builder.remote(settings.remote).appName(settings.app_name)
        for key, value in settings.conf.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()

    needs = settings.needs()
    active = SparkSession.getActiveSession()
    if active is not None:
        missing = _missing_extensions(active, needs)
        if missing:
            raise ConfigError(
                f"the running Spark session lacks {', '.join(missing)}, which the "
                f"destination needs; start it with {_how_to_start(needs)}",
                field="spark",
            )
        _say_unapplied(active, settings)
        return active

    under_spark_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    builder = SparkSession.builder.appName(settings.app_name)
    conf = _base_conf(settings)
    if under_spark_submit:
        # spark-submit already started the JVM: jars and master come from its flags.
        conf = {k: v for k, v in conf.items()
                if not k.startswith("spark.jars") and k != DRIVER_CLASS_PATH}
    elif settings.master:
        builder = builder.master(settings.master)
    else:
        builder = builder.master("local[*]")
    remote_cluster = bool(settings.master) and not any(
        marker in (settings.master or "") for marker in ("local", "127.0.0.1", "localhost"))
    if remote_cluster:
        # Executors elsewhere must reach the driver: pin it to loopback only when
        # the cluster itself is on loopback.
        conf.pop("spark.driver.bindAddress", None)
        conf.pop("spark.driver.host", None)
    ours = dict(conf)
    conf.update(settings.conf)
    _merge_class_path(conf, ours, settings.conf)
    if not under_spark_submit:
        # Beside the user's own driver options, if any.
        _add_driver_jvm_options(conf, local=(settings.master or "local").startswith("local"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    with _jvm_output_to(None if under_spark_submit else settings.jvm_log_path), \
            _launcher_options():
        if settings.jvm_nice and not under_spark_submit and not remote_cluster:
            _start_context_below(settings, conf)
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if needs.packages and conf.get("spark.jars.packages") == ",".join(needs.packages):
        _remember_jars(spark, needs)
    return spark
