"""Database URLs in a connection file (the metadata store's, an Iceberg SQL catalog's):
whether an installed SQLAlchemy driver reads them, found without connecting.

Why here: a misspelt scheme (``postgressql://``) or a driver that is not installed
is a mistake in the file, which ``validate`` and ``check`` must refuse as ``sync``
would, and a message about it must never echo the URL as written (it may hold a
password, and an unparsable URL cannot have it hidden).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

#: What a URL should look like, said in every refusal.
EXAMPLES = "expected e.g. sqlite:///path/to/file.db or postgresql://user@host/db"


def read_database_url(url: str | URL) -> tuple[URL | None, str | None]:
    """``url`` parsed, and why no installed driver reads it (``None``: one does).

    Only the dialect and its driver module are loaded: nothing connects.  SQLAlchemy
    is imported here, not with the package: most users of ``headwater.config`` (the
    tasks on executors) never look at a database URL.
    """
    import sqlalchemy as sa
    from sqlalchemy import exc as sa_exc

    try:
        parsed = sa.make_url(url)
    except sa_exc.ArgumentError:
        return None, f"not a database URL; {EXAMPLES}"
    try:
        parsed.get_dialect().import_dbapi()  # the driver too, not only its dialect
    except (sa_exc.NoSuchModuleError, ImportError):
        return parsed, (f"{parsed.render_as_string(hide_password=True)} names "
                        f"{parsed.drivername!r}, which no installed database driver reads; "
                        f"{EXAMPLES}")
    return parsed, None
