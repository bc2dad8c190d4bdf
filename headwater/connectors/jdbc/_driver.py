"""The JDBC driver on a running Spark session, and the errors of a connection, in words.

A connection's ``driver`` names Maven coordinates, fetched by Ivy from Maven
Central as Delta's jars are, but into a session that already runs (the one a
sync started for its destination, a notebook's, the test suite's):
``spark.jars.packages`` cannot be set on a running session, so the jar is
added with ``ADD JAR 'ivy://group:artifact:version'``, which Spark resolves
with Ivy, ships to every executor (``SparkContext.addJar``: cluster-safe,
fetched from the driver) and puts in the session's jar class loader.

The known trap ("No suitable driver", ``ClassNotFoundException`` on the
driver after ``addJar``; Spark's SPARK-6913 and SPARK-6966 made its JDBC code
wrap drivers for ``DriverManager`` and load them through the *calling thread's*
context class loader, so that jars added later work): only the thread that ran
``ADD JAR`` gets the session's jar class loader as its own.  PySpark pins each
Python thread to its own JVM thread, and the engine plans and reads streams
in threads of its own, so :func:`ensure_driver` sets the current JVM thread's
context class loader before every driver-side JDBC call.  The executors'
task threads get the jar from Spark itself.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from headwater.connectors.jdbc._config import JdbcConfig
from headwater.errors import AuthenticationError, ConfigError, ConnectorError, HeadwaterError

if TYPE_CHECKING:
    from pyspark.sql import DataFrameReader, SparkSession

__all__ = ["connection", "ensure_driver", "explain", "reader"]

_adding = threading.Lock()


def _loads(spark: SparkSession, loader: Any, name: str) -> bool:
    jvm = spark._jvm
    assert jvm is not None
    try:
        jvm.java.lang.Class.forName(name, False, loader)
    except Exception:
        return False
    return True


def ensure_driver(spark: SparkSession, settings: JdbcConfig) -> str:
    """The driver class, loadable by this thread's JVM context class loader (module docs)."""
    name = settings.resolved_driver_class
    if name is None:
        raise ConfigError(f"no driver class is known for {settings.url.split('//')[0]}...; "
                          "name it in driver_class", field="source.config.driver_class")
    jvm = spark._jvm
    if jvm is None:
        raise ConnectorError("the jdbc source needs a Spark session with a JVM on this side "
                             "(not Spark Connect): it reads through Spark's JDBC reader")
    thread = jvm.java.lang.Thread.currentThread()
    if _loads(spark, thread.getContextClassLoader(), name):
        return name  # the session was started with the driver (--packages, spark.jars)
    shared = spark._jsparkSession.sharedState().jarClassLoader()
    with _adding:
        if not _loads(spark, shared, name):
            try:
                spark.sql(f"ADD JAR 'ivy://{settings.driver}?transitive=true'")
            except Exception as exc:
                raise ConnectorError(
                    f"could not fetch the JDBC driver {settings.driver} with Ivy (Maven "
                    f"Central, or spark.jars.ivySettings): {_first_line(exc)}") from exc
    thread.setContextClassLoader(shared)
    if not _loads(spark, shared, name):
        raise ConfigError(f"the driver class {name} is not in {settings.driver}; name the "
                          "right one in driver_class", field="source.config.driver_class")
    return name


#: Spark has no dialect for ``jdbc:mariadb:`` URLs (its MySQL dialect answers
#: ``jdbc:mysql:`` only), so its generic one quotes column names with double quotes,
#: which MariaDB reads as strings (``SELECT "n"`` is the text ``n``) unless the session
#: runs with ``ANSI_QUOTES``; set when the connection opens, for Spark's reads only.
_SESSION_INIT = {"jdbc:mariadb:": "SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, "
                                  "',ANSI_QUOTES')"}
#: Options of Spark's reader that are not the driver's connection properties.
_SPARK_ONLY = ("driver", "sessionInitStatement")


def _properties(settings: JdbcConfig, driver_class: str) -> dict[str, str]:
    props = {"driver": driver_class, "fetchsize": str(settings.fetchsize)}
    init = next((s for prefix, s in _SESSION_INIT.items() if settings.url.startswith(prefix)),
                None)
    if init is not None:
        props["sessionInitStatement"] = init
    if settings.username is not None:
        props["user"] = settings.username
    if settings.password is not None:
        props["password"] = settings.password.get_secret_value()
    return props


def reader(spark: SparkSession, settings: JdbcConfig) -> DataFrameReader:
    """Spark's JDBC reader with the connection's URL, driver and credentials set."""
    driver_class = ensure_driver(spark, settings)
    return spark.read.format("jdbc").option("url", settings.url) \
        .options(**_properties(settings, driver_class))


@contextmanager
def connection(spark: SparkSession, settings: JdbcConfig) -> Iterator[Any]:
    """A ``java.sql.Connection`` on the driver JVM (check, discover's metadata), closed after.

    The driver is instantiated and asked directly (``Driver.connect``), not through
    ``DriverManager``, which refuses a driver its caller's class loader cannot see.
    """
    driver_class = ensure_driver(spark, settings)
    jvm = spark._jvm
    assert jvm is not None
    gateway = spark.sparkContext._gateway
    assert gateway is not None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    cls = jvm.java.lang.Class.forName(driver_class, True, loader)
    driver = cls.getDeclaredConstructor(gateway.new_array(jvm.java.lang.Class, 0)) \
        .newInstance(gateway.new_array(jvm.java.lang.Object, 0))
    props = jvm.java.util.Properties()
    for key, value in _properties(settings, driver_class).items():
        if key not in _SPARK_ONLY:
            props.setProperty(key, value)
    conn = driver.connect(settings.url, props)
    if conn is None:
        raise ConfigError(f"the driver {driver_class} does not accept the URL "
                          f"{settings.url.split('?')[0]}", field="source.config.url")
    try:
        yield conn
    finally:
        conn.close()


#: SQLSTATE class 28 is "invalid authorization specification" (SQL standard); the
#: rest are databases that answer a refused login with another state.
_REFUSED_WORDS = ("password authentication failed", "access denied for user", "login failed",
                  "ora-01017", "invalid username/password", "incorrect username or password")


def _java_chain(exc: BaseException) -> list[Any]:
    """The Java exceptions behind a PySpark or py4j error, outermost first."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    chain: list[Any] = []
    while java is not None and len(chain) < 20:
        chain.append(java)
        java = java.getCause()
    return chain


def _first_line(exc: BaseException) -> str:
    chain = _java_chain(exc)
    text = str(chain[-1].toString()) if chain else f"{type(exc).__name__}: {exc}"
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def explain(exc: BaseException, settings: JdbcConfig, **context: Any) -> HeadwaterError:
    """The Headwater error for a failure talking to the database: refused credentials
    become :class:`AuthenticationError` (exit code 3), the rest a :class:`ConnectorError`
    with the driver's own words (the URL without its parameters; no password: the
    driver does not echo it, and the engine masks registered secrets besides)."""
    if isinstance(exc, HeadwaterError):
        return exc
    where = f"{settings.url.split('?')[0].split(';')[0]} (user {settings.username!r})"
    states = []
    for java in _java_chain(exc):
        try:
            state = java.getSQLState() if hasattr(java, "getSQLState") else None
        except Exception:
            state = None
        states.append(str(state or ""))
    words = _first_line(exc)
    if any(s.startswith("28") for s in states) or any(w in words.lower()
                                                       for w in _REFUSED_WORDS):
        return AuthenticationError(f"{where} refused the credentials: {words}", **context)
    return ConnectorError(f"{where}: {words}", **context)
