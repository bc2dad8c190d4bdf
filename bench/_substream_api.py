"""The parent + substream API workload of issue 17, on the loopback test API.

The loopback API (tests/api_server.py) already serves a SurveyMonkey-like pair:
``/v3/surveys`` (half-open ``[start_modified_at, end_modified_at)`` epoch windows,
``links.next`` pagination) and ``/v3/surveys/{id}/responses``.  This module only
fills it with the benchmark's data and says what a complete read must cost:

* ``parents`` surveys spread evenly over ``windows`` windows of 30 days from
  ``tests.api_server.BASE_EPOCH``, read ``PAGE_SIZE`` per page: 5,000 surveys
  over 42 windows is 119 or 120 a window, 3 pages each, 126 calls;
* ``children`` responses per survey, one page each (``children <= PAGE_SIZE``):
  5,000 calls.

5,126 calls in all, the workload the issue names.  Both tools read the same
windows with the same page size, so they make the same calls (a tool that reads
the parent twice makes 126 more, which the benchmark reports).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tests.api_server import BASE_EPOCH, ApiData, iso

WINDOW_S = 30 * 86_400
PAGE_SIZE = 50


@dataclass(frozen=True)
class Workload:
    """How many surveys, responses each and 30-day windows; what reading them costs."""

    parents: int = 5_000
    children: int = 25
    windows: int = 42

    def __post_init__(self) -> None:
        if self.children > PAGE_SIZE:
            raise ValueError(f"children must fit one page of {PAGE_SIZE}")

    @property
    def start(self) -> int:
        return BASE_EPOCH

    @property
    def end(self) -> int:
        return BASE_EPOCH + self.windows * WINDOW_S

    @property
    def start_iso(self) -> str:
        return iso(self.start)

    @property
    def end_iso(self) -> str:
        return iso(self.end)

    def modified_at(self, survey: int) -> int:
        """Survey ``survey`` (1-based) sits in the middle of its share of the span."""
        step = (self.end - self.start) / self.parents
        return self.start + int((survey - 0.5) * step)

    @property
    def child_records(self) -> int:
        return self.parents * self.children

    @property
    def parent_calls(self) -> int:
        """One call per page of each window (an empty window still costs one call)."""
        per_window = [0] * self.windows
        for survey in range(1, self.parents + 1):
            per_window[(self.modified_at(survey) - self.start) // WINDOW_S] += 1
        return sum(max(1, math.ceil(n / PAGE_SIZE)) for n in per_window)

    @property
    def calls(self) -> int:
        return self.parent_calls + self.parents

    def data(self) -> ApiData:
        """The API's data (built in the API's own process: 125,000 small dicts)."""
        data = ApiData()
        for survey in range(1, self.parents + 1):
            data.surveys[survey] = {"id": survey, "title": f"survey {survey}",
                                    "date_modified": self.modified_at(survey)}
            data.responses[survey] = [
                {"id": survey * 1_000 + r, "survey_id": survey, "answer": f"a{r}",
                 "score": (survey + r) % 11}
                for r in range(self.children)]
        return data
