"""The connection file's ``lineage:`` block: where OpenLineage run events go.

::

    lineage:
      url: http://marquez:5000              # an OpenLineage HTTP receiver, or
      # file: ./.headwater/lineage.jsonl    # one JSON event per line
      namespace: prod                       # the jobs' namespace (default: headwater)
      api_key: ${OPENLINEAGE_API_KEY}       # sent as a bearer token; never shown
      timeout_s: 5                          # the most a sync waits for one event

The events themselves are built by :mod:`headwater.observability.lineage`.
Left out, lineage follows the OpenLineage client's own environment
(``OPENLINEAGE_URL``, ``OPENLINEAGE_CONFIG``), or is off.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

#: The jobs' namespace when neither the file nor ``OPENLINEAGE_NAMESPACE`` names one.
DEFAULT_NAMESPACE = "headwater"


class LineageConfig(BaseModel):
    """Where a connection's OpenLineage events go: ``url`` or ``file``, exactly one.

    ``api_key`` is a :class:`SecretStr` (it never prints) and is registered with
    the secret masker when the events' client is made.
    """

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(default=None, min_length=1)
    #: The receiver's path under ``url`` (the OpenLineage client's default).
    endpoint: str = Field(default="api/v1/lineage", min_length=1)
    file: str | None = Field(default=None, min_length=1)
    namespace: str | None = Field(default=None, min_length=1)
    api_key: SecretStr | None = Field(default=None, repr=False)
    #: Seconds a sync waits for one event at most, retries included (see
    #: :mod:`headwater.observability.lineage`): a receiver that hangs costs this, no more.
    timeout_s: float = Field(default=5.0, gt=0, le=300)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL of an OpenLineage receiver")
        if parts.username or parts.password:
            # Not echoed: the URL holds a credential.
            raise ValueError("must not hold credentials (user:password@); use api_key")
        return value

    @model_validator(mode="after")
    def _one_destination(self) -> LineageConfig:
        if (self.url is None) == (self.file is None):
            raise ValueError("set exactly one of url (an HTTP receiver) or file (JSON lines)")
        return self


__all__ = ["DEFAULT_NAMESPACE", "LineageConfig"]
