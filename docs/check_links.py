"""Check the relative links in README.md, config/README.md and docs/*.md.

Every [text](target) outside code must name a file or folder that exists, and a #anchor must be
a heading of the target page (GitHub's anchors: lower case, punctuation dropped, spaces to
hyphens, -1, -2 … for repeats). Web links are not fetched. Run from anywhere:

    python3 docs/check_links.py

Exit 0 when every link resolves; otherwise one line per broken link and exit 1.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", REPO / "config" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code removed."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, re.sub(r"`[^`]*`", "", line)))
    return lines


def anchors(page: Path) -> set[str]:
    """GitHub's anchor of every heading of `page`."""
    seen: dict[str, int] = {}
    found = set()
    text = page.read_text(encoding="utf-8")
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken(page: Path) -> list[str]:
    problems = []
    for number, line in _prose(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            where = (page.parent / path).resolve() if path else page
            name = f"{page.relative_to(REPO)}:{number}: {target}"
            if not where.exists():
                problems.append(f"{name}: no such file")
            elif anchor and (where.suffix != ".md" or anchor not in anchors(where)):
                problems.append(f"{name}: no heading #{anchor} in {where.relative_to(REPO)}")
    return problems


def main() -> int:
    problems = [problem for page in PAGES if page.exists() for problem in broken(page)]
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
