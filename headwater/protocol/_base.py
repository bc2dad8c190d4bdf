"""The one base class every protocol model shares, so the wire rules live in one place.

Rules (the same as Airbyte's own generated models, so JSON moves both ways):

- Unknown fields are kept (``extra="allow"``): a connector speaking a newer protocol
  version must not lose data when it passes through Headwater.
- Fields are named exactly as on the wire (``connectionSpecification``, ``emitted_at``);
  the one Python keyword, ``global``, is the attribute ``global_`` and is written as
  ``global`` without asking (``serialize_by_alias``).
- Serialize with ``model_dump(mode="json", exclude_none=True)``: absent optional fields
  are omitted, while ``None`` *inside* free-form dicts (record data, state) is kept.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ProtocolModel(BaseModel):
    """Base of every Airbyte protocol model in Headwater."""

    model_config = ConfigDict(
        extra="allow",
        serialize_by_alias=True,
        validate_by_alias=True,
        validate_by_name=True,
    )
