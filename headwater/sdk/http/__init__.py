"""The HTTP stream SDK: what a REST source is built from.

Authenticators, paginators, the client (budgets, retries, errors) and
:class:`HttpStream`.  The built-in ``rest`` source declares its streams with
these from YAML; a Python source uses the same classes for unusual APIs.
"""

from headwater.sdk.http._auth import (
    ApiKeyAuth,
    Authenticator,
    BasicAuth,
    BearerAuth,
    NoAuth,
    OAuth2Auth,
)
from headwater.sdk.http._client import HttpClient, HttpSettings, NotFoundError, Page
from headwater.sdk.http._paginators import (
    CursorPaginator,
    LinkHeaderPaginator,
    NextUrlPaginator,
    NoPagination,
    OffsetPaginator,
    PageNumberPaginator,
    PaginationLoop,
    Paginator,
    select_path,
)
from headwater.sdk.http._rate_limit import CallBudget, CallGate, split_share
from headwater.sdk.http._stream import HttpStream, HttpStreamSpec, ParentLink

__all__ = [
    "ApiKeyAuth",
    "Authenticator",
    "BasicAuth",
    "BearerAuth",
    "CallBudget",
    "CallGate",
    "CursorPaginator",
    "HttpClient",
    "HttpSettings",
    "HttpStream",
    "HttpStreamSpec",
    "LinkHeaderPaginator",
    "NextUrlPaginator",
    "NoAuth",
    "NoPagination",
    "NotFoundError",
    "OAuth2Auth",
    "OffsetPaginator",
    "Page",
    "PageNumberPaginator",
    "PaginationLoop",
    "Paginator",
    "ParentLink",
    "select_path",
    "split_share",
]
