"""JsonFloat: a float everywhere, its literal where the engine asks for it."""

from __future__ import annotations

import json
import pickle
from decimal import Decimal

import pyarrow as pa

from headwater import json_numbers
from headwater.json_numbers import JsonFloat

TEXT = ('{"d": 12345678901234567890.123456789012345678, "n": [1.50, 2, {"x": 1E400}],'
        ' "big": 123456789012345678901234567890, "s": "1.5", "nan": NaN}')


def test_numbers_keep_their_literal_and_stay_floats() -> None:
    value = json_numbers.loads(TEXT)
    plain = json.loads(TEXT)
    assert isinstance(value["d"], JsonFloat) and value["d"].text == \
        "12345678901234567890.123456789012345678"
    assert json_numbers.exact_decimal(value["d"]) == \
        Decimal("12345678901234567890.123456789012345678")
    assert json.dumps(value, default=str) == json.dumps(plain)  # a float's repr, as before
    assert pa.array([value["d"]]).type == pa.float64()
    assert value["big"] == 123456789012345678901234567890
    assert json_numbers.decode(TEXT.encode())["n"][0].text == "1.50"  # through json (NaN)
    assert json_numbers.decode(TEXT.replace("NaN", "1").encode())["n"][0].text == "1.50"


def test_pickled_and_dumped_they_keep_their_text() -> None:
    value = json_numbers.loads(TEXT)
    again = pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    assert again["n"][2]["x"].text == "1E400"
    assert json_numbers.dumps({k: v for k, v in value.items() if k != "nan"},
                              sort_keys=True) == (
        '{"big": 123456789012345678901234567890, '
        '"d": 12345678901234567890.123456789012345678, "n": [1.50, 2, {"x": 1E400}], '
        '"s": "1.5"}')
