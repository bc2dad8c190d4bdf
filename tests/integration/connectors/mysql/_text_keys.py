"""Text keys whose collation order is not Python's, for the mysql source's split tests.

They mix case, accents and shared prefixes, so Python's order (code points: ``B``
before ``a``, ``é`` after ``z``) and a byte-wise comparison both disagree with
``utf8mb4_unicode_ci`` and ``latin1_swedish_ci`` (where ``ä`` and ``ö`` follow
``z``): cut or compared by either, a key range would miss rows or read some twice.
"""

from __future__ import annotations

import random

from tests._mariadb import MariaDBServer

#: Bases distinct once lower-cased and stripped of accents (so the keys are distinct
#: under every collation used), many sharing prefixes (``ab``, ``ab0``, ``ab0a``...).
STEMS = ("a", "ab", "ab0", "abc", "b", "c", "e", "ec", "ecz", "o", "oe", "z", "z0")
TAILS = ("", "0", "1", "a", "ab", "b", "c", "e", "ea", "o", "z", "za", "zz", "0a", "00")
ENDS = ("", "b", "o0", "zc")
#: Letters a key may carry in another case or with an accent; no letter here equals
#: another under these collations (no y/ü, no ß, no æ).
ACCENTS = {"a": "aAäÄá", "e": "eEéÉè", "o": "oOöÖ", "b": "bB", "c": "cC", "z": "zZ"}


def text_keys() -> list[str]:
    """About 700 distinct keys, in no particular order."""
    rng = random.Random(40)
    bases = sorted({stem + tail + end for stem in STEMS for tail in TAILS for end in ENDS})
    return ["".join(rng.choice(ACCENTS.get(ch, ch)) for ch in base) for base in bases]


def create_keyed_table(server: MariaDBServer, database: str, table: str, collation: str,
                       keys: list[str]) -> None:
    """``table (id VARCHAR(20) PRIMARY KEY, n INT)`` under ``collation``, ``n`` the key's
    position in ``keys``."""
    charset = collation.split("_", 1)[0]
    connection = server.connect(database)
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE TABLE {table} (id VARCHAR(20) PRIMARY KEY, n INT) "
                           f"CHARACTER SET {charset} COLLATE {collation}")
            cursor.executemany(f"INSERT INTO {table} VALUES (%s, %s)",
                               [(k, i) for i, k in enumerate(keys)])
    finally:
        connection.close()
