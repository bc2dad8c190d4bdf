"""State converters: stored form <-> internal form, record values, steps."""

from __future__ import annotations

import pickle
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from headwater.errors import StateError
from headwater.sdk._state_converters import (
    EpochSecondsStateConverter,
    IntegerStateConverter,
    IsoDateTimeStateConverter,
    StateConverter,
)

ISO = IsoDateTimeStateConverter()
EPOCH = EpochSecondsStateConverter()
INTEGER = IntegerStateConverter()


class TestIsoDateTime:
    def test_round_trip_whole_seconds(self) -> None:
        parsed = ISO.parse("2024-01-01T00:00:00Z")
        assert parsed == datetime(2024, 1, 1, tzinfo=UTC)
        assert parsed.tzinfo is UTC
        assert ISO.serialize(parsed) == "2024-01-01T00:00:00Z"

    def test_microseconds_are_kept_only_when_non_zero(self) -> None:
        value = datetime(2024, 1, 1, 12, 30, 5, 250000, tzinfo=UTC)
        stored = ISO.serialize(value)
        assert stored == "2024-01-01T12:30:05.250000Z"
        assert ISO.parse(stored) == value

    def test_offsets_are_normalised_to_utc(self) -> None:
        parsed = ISO.parse("2024-01-01T02:00:00+02:00")
        assert parsed == datetime(2024, 1, 1, tzinfo=UTC)
        assert ISO.serialize(parsed) == "2024-01-01T00:00:00Z"
        assert ISO.serialize(ISO.parse("2023-12-31T19:00:00.000001-05:00")) == (
            "2024-01-01T00:00:00.000001Z"
        )

    def test_naive_input_is_utc(self) -> None:
        assert ISO.parse("2024-01-01T00:00:00") == datetime(2024, 1, 1, tzinfo=UTC)
        assert ISO.serialize(datetime(2024, 1, 1)) == "2024-01-01T00:00:00Z"
        assert ISO.serialize(ISO.parse("2024-03-05")) == "2024-03-05T00:00:00Z"

    @pytest.mark.parametrize("bad", ["yesterday", "2024-13-01T00:00:00Z", 1704067200, None])
    def test_parse_rejects_what_it_does_not_write(self, bad: object) -> None:
        with pytest.raises(StateError):
            ISO.parse(bad)

    def test_step_is_seconds(self) -> None:
        assert ISO.step(86400) == timedelta(days=1)
        assert ISO.step(0.5) == timedelta(milliseconds=500)
        with pytest.raises(ValueError):
            ISO.step(0)


class TestEpochSeconds:
    def test_state_is_stored_as_int(self) -> None:
        parsed = EPOCH.parse(1704067200)
        assert parsed == datetime(2024, 1, 1, tzinfo=UTC)
        stored = EPOCH.serialize(parsed)
        assert stored == 1704067200
        assert type(stored) is int

    def test_integral_float_from_json_is_accepted(self) -> None:
        assert EPOCH.parse(1704067200.0) == datetime(2024, 1, 1, tzinfo=UTC)

    @pytest.mark.parametrize("bad", ["1704067200", 1.5, True, None])
    def test_parse_rejects_non_integers(self, bad: object) -> None:
        with pytest.raises(StateError):
            EPOCH.parse(bad)

    def test_serialize_floors_sub_seconds(self) -> None:
        assert EPOCH.serialize(datetime(2024, 1, 1, 0, 0, 0, 999999, tzinfo=UTC)) == 1704067200
        before_epoch = datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC)
        assert EPOCH.serialize(before_epoch) == -1

    def test_serialize_converts_offsets(self) -> None:
        plus_two = timezone(timedelta(hours=2))
        assert EPOCH.serialize(datetime(2024, 1, 1, 2, tzinfo=plus_two)) == 1704067200

    def test_step_needs_whole_seconds(self) -> None:
        assert EPOCH.step(60) == timedelta(minutes=1)
        with pytest.raises(ValueError):
            EPOCH.step(0.5)


class TestInteger:
    def test_round_trip(self) -> None:
        assert INTEGER.parse(42) == 42
        assert INTEGER.serialize(INTEGER.parse(42)) == 42
        assert INTEGER.parse(7.0) == 7

    @pytest.mark.parametrize("bad", ["42", 4.2, False, None])
    def test_parse_rejects_non_integers(self, bad: object) -> None:
        with pytest.raises(StateError):
            INTEGER.parse(bad)

    def test_record_values(self) -> None:
        assert INTEGER.parse_record_value(5) == 5
        assert INTEGER.parse_record_value(" 17 ") == 17
        with pytest.raises(StateError, match="not an integer"):
            INTEGER.parse_record_value("seventeen")
        with pytest.raises(StateError, match="not an integer"):
            INTEGER.parse_record_value(2.5)

    def test_step(self) -> None:
        assert INTEGER.step(1000) == 1000
        for bad in (0, -3, 2.5):
            with pytest.raises(ValueError):
                INTEGER.step(bad)


@pytest.mark.parametrize("converter", [ISO, EPOCH])
class TestDateRecordValues:
    def test_accepts_datetimes_dates_strings_and_epochs(self, converter: StateConverter) -> None:
        expected = datetime(2024, 1, 1, tzinfo=UTC)
        assert converter.parse_record_value(datetime(2024, 1, 1)) == expected
        assert converter.parse_record_value(date(2024, 1, 1)) == expected
        assert converter.parse_record_value("2024-01-01T01:00:00+01:00") == expected
        assert converter.parse_record_value(1704067200) == expected
        assert converter.parse_record_value(1704067200.25) == expected + timedelta(milliseconds=250)

    @pytest.mark.parametrize("bad", ["not a date", [2024], True, float("nan"), 10**20])
    def test_rejects_with_a_clear_message(self, converter: StateConverter, bad: object) -> None:
        with pytest.raises(StateError) as info:
            converter.parse_record_value(bad)
        assert repr(bad)[:10] in str(info.value)


@pytest.mark.parametrize("converter", [ISO, EPOCH, INTEGER])
def test_converters_are_picklable_and_stateless(converter: StateConverter) -> None:
    copy = pickle.loads(pickle.dumps(converter))
    assert copy == converter
    assert type(copy) is type(converter)
    assert not hasattr(converter, "__dict__")


def test_state_types() -> None:
    assert ISO.state_type == "date-range"
    assert EPOCH.state_type == "date-range"
    assert INTEGER.state_type == "integer-range"
