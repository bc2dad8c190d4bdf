"""The key checksum's definition (headwater/key_checksum.py), pinned: PostgreSQL and Spark
compute it in SQL (tests/integration/operations/test_verify_postgres.py checks all three
agree), so a change here must be a change of all three."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pytest

from headwater.key_checksum import MODULUS, canonical_key, key_checksum, key_hash, value_text


def test_canonical_text_prefixes_each_value_with_its_length() -> None:
    assert canonical_key((7, "ab")) == "1:72:ab"
    assert canonical_key(("a:b", "c")) != canonical_key(("a", "b:c"))
    assert canonical_key(("日本",)) == "2:日本"  # characters, not bytes
    assert canonical_key(("🙂",)) == "1:🙂"  # one code point beyond the BMP
    assert canonical_key((1, None)) is None


@pytest.mark.parametrize(("value", "text"), [
    (True, "true"), (False, "false"), (-9223372036854775808, "-9223372036854775808"),
    ("", ""), (dt.date(1, 1, 1), "0001-01-01"),
    (uuid.UUID(int=255), "00000000-0000-0000-0000-0000000000ff")])
def test_value_texts(value: object, text: str) -> None:
    assert value_text(value) == text


@pytest.mark.parametrize("value", [dt.datetime(2024, 1, 1), 1.5, decimal.Decimal("1.50"),
                                   b"\x00"])
def test_types_without_a_canonical_text_are_refused(value: object) -> None:
    with pytest.raises(TypeError):
        value_text(value)


def test_the_hash_is_the_first_eight_bytes_of_md5() -> None:
    assert key_hash("1:7") == 0xa9857b2167864a55
    assert key_hash("1:72:ab") == 0xd3f3147e3b35103a


def test_the_checksum_is_an_order_independent_sum_modulo_two_to_the_64() -> None:
    keys = [(7,), ("hello",), (7, "ab")]
    total = (0xa9857b2167864a55 + 0x1217bffb92357256 + 0xd3f3147e3b35103a) % MODULUS
    assert key_checksum(keys) == key_checksum(reversed(keys)) == total
    assert key_checksum([(7,), (7,)]) == (2 * 0xa9857b2167864a55) % MODULUS  # no cancelling
    assert key_checksum([(None,), (7,)]) == key_checksum([(7,)])  # a NULL key adds nothing
    assert key_checksum([]) == 0
