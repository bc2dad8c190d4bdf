"""The destinations' default check: nothing to check, and saying so."""

from __future__ import annotations

from headwater.destinations import Destination


def test_a_destination_without_a_check_says_nothing_was_checked() -> None:
    class Bare(Destination):
        type_name = "bare"

        @classmethod
        def spec(cls) -> dict[str, object]:
            return {}

        def table_location(self, stream: str) -> str:
            return stream

        prepare = find_commit = commit = None  # type: ignore[assignment]

    bare = Bare({})
    bare.check()
    assert bare.check_skipped() == "the bare destination has no check: nothing was checked"
