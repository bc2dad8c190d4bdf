"""The protocol tests compare Headwater's models with Airbyte's; without them they prove nothing.

``airbyte-protocol-models-pdv2`` is a declared dev dependency, so a missing package is
an error of the environment and must fail the run, not skip tests.
"""

try:
    import airbyte_protocol.models  # noqa: F401
except ImportError as exc:  # pragma: no cover - the environment is broken
    raise ImportError(
        "tests/unit/protocol needs airbyte_protocol.models: "
        "install the dev extra (pip install -e '.[dev]', airbyte-protocol-models-pdv2)"
    ) from exc
