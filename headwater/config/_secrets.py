"""Secrets: find them through the spec, hide them in configs, logs and output.

A connector's spec marks secret properties with ``"airbyte_secret": true``
(Airbyte's convention).  That mark is the first line of defence: configs are
redacted before they are shown or stored, and errors never echo secret
values.  The second line is a process-wide masker: once the engine has
validated a config it calls ``register_secrets(secret_values(spec, config))``,
and from then on :func:`mask` replaces those values wherever text leaves the
process (log records through :class:`SecretMaskingFilter`, ``--json`` output
and run history through :func:`mask_obj`), even when a library or a stack
trace repeats a value the code never meant to print.

Every marked value is registered, whatever its length: a two-character
database password is a password.  Values shorter than
:data:`MIN_SECRET_LENGTH` are masked where they stand alone (not inside a
longer word or number: ``pw`` in ``:pw@`` or ``'pw'``, not in ``pwd``), so
masking ``"ab"`` does not mangle every log line; longer values are masked
wherever they appear.

The third line needs no registration at all: the password of any URI-like
text (``scheme://user:password@host``) is masked by its place, whether or not
the URI parses, its scheme is known or it sits inside a longer message or an
exception's text (:func:`mask_uri_passwords`).  A connection string is where
an unmarked secret most often hides (a catalog's or a metadata store's URI),
and a misspelt scheme is exactly when a library quotes the URI back.
"""

from __future__ import annotations

import copy
import json
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, unquote

#: What a secret value is replaced with, in redacted configs and masked text.
REDACTED = "**********"
#: Shorter registered values are masked only where they stand alone (module docstring).
MIN_SECRET_LENGTH = 4
#: Path component meaning "every item of the list" (a secret inside ``items``).
ANY_ITEM = "*"

#: Loggers that log on their own handlers and repeat connection strings and
#: configs (py4j echoes Java calls with their arguments).
_NOISY_LOGGERS = ("py4j", "pyspark")


def connection_specification(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """Accept a whole Airbyte spec (``connectionSpecification`` inside) or the schema itself."""
    inner = spec.get("connectionSpecification")
    return inner if isinstance(inner, Mapping) else spec


def secret_paths(spec: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """Paths of the properties marked ``"airbyte_secret": true``, in spec order.

    Walks ``properties`` recursively and every branch of ``oneOf`` / ``anyOf``
    / ``allOf`` (an Airbyte auth choice is a ``oneOf`` of objects), and
    ``items`` of arrays, where the path holds :data:`ANY_ITEM`.  A path that
    several branches share is listed once.

    >>> secret_paths({"properties": {"auth": {"oneOf": [
    ...     {"properties": {"token": {"type": "string", "airbyte_secret": True}}}]}}})
    [('auth', 'token')]
    """
    found: dict[tuple[str, ...], None] = {}
    _collect_secret_paths(connection_specification(spec), (), found)
    return list(found)


def _collect_secret_paths(
    schema: Any, path: tuple[str, ...], found: dict[tuple[str, ...], None]
) -> None:
    if not isinstance(schema, Mapping):
        return
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, prop in properties.items():
            if isinstance(prop, Mapping) and prop.get("airbyte_secret") is True:
                found[(*path, name)] = None
            _collect_secret_paths(prop, (*path, name), found)
    for keyword in ("oneOf", "anyOf", "allOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            for branch in branches:
                _collect_secret_paths(branch, path, found)
    items = schema.get("items")
    if isinstance(items, Mapping):
        _collect_secret_paths(items, (*path, ANY_ITEM), found)


def _values_at(node: Any, path: tuple[str, ...]) -> Iterable[Any]:
    """Every value found at ``path`` in ``node`` (several when the path crosses a list)."""
    if not path:
        yield node
        return
    head, rest = path[0], path[1:]
    if head == ANY_ITEM and isinstance(node, list):
        for item in node:
            yield from _values_at(item, rest)
    elif isinstance(node, Mapping) and head in node:
        yield from _values_at(node[head], rest)


def secret_values(spec: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """The non-empty string values of ``config`` at the spec's secret paths, without repeats."""
    values: dict[str, None] = {}
    for path in secret_paths(spec):
        for value in _values_at(config, path):
            if isinstance(value, str) and value:
                values[value] = None
    return list(values)


def redact(config: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``config`` with every secret value (of any type) replaced by REDACTED.

    Absent and null secrets stay absent and null, so a redacted config still
    shows which secrets were left unset.
    """
    redacted = copy.deepcopy(dict(config))
    for path in secret_paths(spec):
        _redact_at(redacted, path)
    return redacted


def _redact_at(node: Any, path: tuple[str, ...]) -> None:
    head, rest = path[0], path[1:]
    if head == ANY_ITEM and isinstance(node, list):
        children: Iterable[tuple[Any, Any]] = enumerate(node)
    elif isinstance(node, dict) and head in node:
        children = [(head, node[head])]
    else:
        return
    for key, child in list(children):
        if rest:
            _redact_at(child, rest)
        elif child is not None:
            node[key] = REDACTED


class _SecretRegistry:
    """The process-wide set of secret values and the pattern that finds them.

    The lock exists because connections are validated (and their secrets
    registered) on the driver while other threads log: it keeps the set and
    the pattern built from it consistent.  Readers take the compiled pattern
    as one reference, so they never see a half-built one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def add(self, values: Iterable[str]) -> None:
        variants = set()
        for value in values:
            if not isinstance(value, str) or not value:
                continue
            # The same secret as it appears URL-encoded (connection strings)
            # or JSON-escaped (a private key with newlines in --json output).
            variants |= {value, quote(value, safe=""), json.dumps(value)[1:-1]}
        with self._lock:
            if variants <= self._values:
                return
            self._values |= variants
            self._pattern = None  # rebuilt by the next mask(), once per batch of additions

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._pattern = None

    def mask(self, text: str) -> str:
        if not text or not self._values:
            return text
        pattern = self._pattern
        if pattern is None:
            with self._lock:
                if self._pattern is None:
                    self._pattern = _values_pattern(self._values)
                pattern = self._pattern
        return pattern.sub(REDACTED, text)


def _values_pattern(values: Iterable[str]) -> re.Pattern[str]:
    """One pattern for every registered value, longest first (a secret containing
    another is hidden whole); a short value only where no letter, digit or ``_`` touches it."""
    alternatives = []
    for value in sorted(values, key=len, reverse=True):
        escaped = re.escape(value)
        alternatives.append(escaped if len(value) >= MIN_SECRET_LENGTH
                            else rf"(?<!\w){escaped}(?!\w)")
    return re.compile("|".join(alternatives))


#: The password of URI-like text, by its place: after ``//user:`` (whatever scheme comes
#: before, spelt right or not, or none) and up to the last ``@`` before the text's next
#: space (a malformed password may hold an unencoded ``@``, ``/``, ``:`` or quote;
#: masking a little more than the password beats showing part of it).  Bounded lengths
#: keep a search linear in the text: a long run without a space (a base64 blob with a
#: ``//`` in it) is not scanned again from every position.
_URI_PASSWORD = re.compile(
    r"(?P<head>//[^\s/@:'\"<>]{0,256}:)(?P<password>[^\s<>]{1,512})@")


def mask_uri_passwords(text: str) -> str:
    """``text`` with the password of every URI-like part replaced by REDACTED.

    >>> mask_uri_passwords("cannot load postgressql://loader:pw@127.0.0.1/iceberg")
    'cannot load postgressql://loader:**********@127.0.0.1/iceberg'
    """
    if "//" not in text:
        return text
    return _URI_PASSWORD.sub(rf"\g<head>{REDACTED}@", text)


def uri_passwords(text: str) -> list[str]:
    """The passwords of the URI-like parts of ``text``, found by place as
    :func:`mask_uri_passwords` finds them, each as written and URL-decoded.

    For registering them (:func:`register_secrets`): a driver's error may quote
    the password alone, outside its URI.
    """
    found: dict[str, None] = {}
    for match in _URI_PASSWORD.finditer(text):
        password = match.group("password")
        found.update(dict.fromkeys((password, unquote(password))))
    return list(found)


_registry = _SecretRegistry()


def register_secrets(values: Iterable[str]) -> None:
    """Add secret values to the process-wide masker (thread-safe, idempotent).

    Values shorter than :data:`MIN_SECRET_LENGTH` are masked where they stand
    alone (the module docstring says why).  The longest value wins where two
    overlap, so a secret containing another is hidden whole.
    """
    _registry.add(values)


#: Spark's own default ``spark.redaction.regex`` (the conf keys whose values Spark hides
#: in its UI and logs), plus hadoop-azure's account keys and SAS tokens
#: (``fs.azure.account.key.<host>``, ``fs.azure.sas.<container>.<host>``), which it
#: misses.  Headwater hides these values everywhere it prints.
SPARK_SECRET_KEYS = re.compile(
    r"(?i)secret|password|token|access[.]?key|account[.]key|azure[.]sas[.]")


def register_spark_conf_secrets(conf: Mapping[str, str]) -> None:
    """Register the values of ``conf`` keys Spark itself treats as secret.

    Why: a connection's ``spark.conf`` (or ``--conf``) is where Spark users put
    ``spark.hadoop.fs.s3a.secret.key`` and friends; once Headwater reads those
    values for its own S3 access, an error quoting a request or a setting must
    not print them.
    """
    register_secrets(value for key, value in conf.items()
                     if isinstance(value, str) and SPARK_SECRET_KEYS.search(key))


def mask(text: str) -> str:
    """``text`` with every registered secret, and every URI's password, replaced by REDACTED."""
    return mask_uri_passwords(_registry.mask(text))


def mask_obj(obj: Any) -> Any:
    """A copy of ``obj`` with every string (keys too) in its dicts, lists and tuples masked.

    For JSON output and run history, where a config or an error message may
    carry a secret that was never meant to be there.  Other values are
    returned as they are.
    """
    if isinstance(obj, str):
        return mask(obj)
    if isinstance(obj, Mapping):
        return {mask_obj(key): mask_obj(value) for key, value in obj.items()}
    if isinstance(obj, list):
        return [mask_obj(item) for item in obj]
    if isinstance(obj, tuple):
        return tuple(mask_obj(item) for item in obj)
    return obj


class SecretMaskingFilter(logging.Filter):
    """Masks registered secrets in a log record before any handler formats it.

    The message is formatted with its arguments first (a secret is usually an
    argument, not part of the format string), then masked; the exception text
    and stack info are masked too.  The filter never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            # Arguments that do not fit the format string: keep the format
            # string alone, or logging's error report would print the raw
            # arguments to stderr.
            record.msg, record.args = mask(str(record.msg)), None
        else:
            masked = mask(message)
            if masked != message:
                record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask(record.exc_text)
        if record.stack_info:
            record.stack_info = mask(record.stack_info)
        return True


_masking_filter = SecretMaskingFilter()
_install_lock = threading.Lock()


def install_log_masking() -> None:
    """Add the masking filter to the root logger's handlers and to py4j's and pyspark's.

    Idempotent: a handler or logger that already has a :class:`SecretMaskingFilter`
    is left alone.  Handler filters see every record a handler emits,
    including records propagated from child loggers; call this again after
    adding handlers (the CLI calls it once logging is configured).
    """
    with _install_lock:
        root = logging.getLogger()
        targets: list[logging.Filterer] = list(root.handlers)
        for name in _NOISY_LOGGERS:
            logger = logging.getLogger(name)
            targets.append(logger)
            targets.extend(logger.handlers)
        for target in targets:
            if not any(isinstance(existing, SecretMaskingFilter) for existing in target.filters):
                target.addFilter(_masking_filter)
