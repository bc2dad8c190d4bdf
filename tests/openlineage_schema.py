"""Validate OpenLineage events against the spec's own JSON schemas (``tests/openlineage_spec``).

Each event is checked against ``RunEvent`` of ``OpenLineage.json``, and each facet
against the schema its ``_schemaURL`` names (a vendored file, found by ``$id``).
A facet of Headwater's own (``_schemaURL`` ``urn:headwater:...``) is checked
against the spec's base facet of its kind only, as the spec asks of custom
facets; any other facet without a vendored schema fails, so the test cannot
pass by not looking.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource

SPEC = Path(__file__).parent / "openlineage_spec"
CORE_ID = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
#: Facets of Headwater's own: valid when their kind's base facet is.
OWN_FACET_PREFIX = "urn:headwater:"


def _registry() -> Registry:
    resources = []
    for path in [SPEC / "OpenLineage.json", *sorted((SPEC / "facets").glob("*.json"))]:
        document = json.loads(path.read_text())
        resources.append((document["$id"], Resource.from_contents(document)))
    return Registry().with_resources(resources)


REGISTRY = _registry()


def _validator(ref: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": ref}, registry=REGISTRY,
                                format_checker=FormatChecker())


def validate_event(event: Mapping[str, Any]) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``event`` is a valid OpenLineage RunEvent."""
    _validator(f"{CORE_ID}#/$defs/RunEvent").validate(event)
    run = event["run"]
    _facets(run.get("facets") or {}, "RunFacet")
    _facets(event["job"].get("facets") or {}, "JobFacet")
    for dataset in event.get("inputs") or []:
        _facets(dataset.get("facets") or {}, "DatasetFacet")
        _facets(dataset.get("inputFacets") or {}, "InputDatasetFacet")
    for dataset in event.get("outputs") or []:
        _facets(dataset.get("facets") or {}, "DatasetFacet")
        _facets(dataset.get("outputFacets") or {}, "OutputDatasetFacet")


def _facets(facets: Mapping[str, Any], kind: str) -> None:
    for name, facet in facets.items():
        url = facet["_schemaURL"]
        if url.startswith(OWN_FACET_PREFIX):
            _validator(f"{CORE_ID}#/$defs/{kind}").validate(facet)
            continue
        _validator(url).validate(facet)  # an unknown URL fails: referencing.Unresolvable
        assert url.split("#")[0] in {str(r) for r in REGISTRY}, (name, url)
