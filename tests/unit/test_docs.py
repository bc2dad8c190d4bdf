"""The README stays a front door (short, two commands first) and the manual in docs/ stays
whole: every relative link resolves, and every built-in connector and destination has a page."""

from __future__ import annotations

import re
from pathlib import Path

from headwater.connectors import _BUILT_INS as SOURCES
from headwater.destinations import _BUILT_INS as DESTINATIONS

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes."""
    return {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line in page.read_text().splitlines() if line.startswith("#")}


def test_the_readme_is_a_front_door() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move manual text to docs/"
    commands = [line for line in lines[:20] if line.startswith("scripts/")]
    assert [c.split()[0] for c in commands] == ["scripts/quickstart", "scripts/test"]


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert broken == []


def test_every_built_in_connector_and_destination_has_a_page() -> None:
    pages = {p.stem for p in (REPO / "docs" / "connectors").glob("*.md")}
    missing = [t for t in SOURCES if t.replace("_", "-") not in pages]
    assert missing == [], f"no docs/connectors page for {missing}"
    pages = {p.stem for p in (REPO / "docs" / "destinations").glob("*.md")}
    missing = [t for t in DESTINATIONS if t not in pages]
    assert missing == [], f"no docs/destinations page for {missing}"
    index = (REPO / "docs" / "README.md").read_text()
    assert all(f"connectors/{t.replace('_', '-')}.md" in index for t in SOURCES)
