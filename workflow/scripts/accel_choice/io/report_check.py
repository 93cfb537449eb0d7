"""Vouching for Snakemake's HTML report (`snakemake --report`, the lab-report profile). It is written after
MANIFEST.sha256, so no line lists its bytes; but it embeds every result it shows, each as a base64 data URI
under the result's path. A report whose embedded results are byte-identical to the files the manifest lists
shows what this run made; one that embeds anything else was made from other files, or edited since. What it
cannot vouch for: the report's own words around the results (the workflow description and the captions,
which come from the workflow's code at the commit provenance.json names).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from pathlib import Path

from accel_choice.io import paths

# One embedded result: its key (the path Snakemake knows, under results/) and, in the same object, its data URI.
_RESULT = re.compile(
    r'"' + re.escape(paths.RESULTS) + r'/([^"\\]+)": \{(?:(?!"' + re.escape(paths.RESULTS) + r'/[^"\\]+": \{).)*?'
    r'"data_uri": "data:[^;",]+(?:;[^;",]+)*;base64,([A-Za-z0-9+/=]*)"',
    re.S,
)


def embedded_results(html: str) -> dict[str, str]:
    """Return the results an HTML report embeds: path under the results folder → sha256 of the embedded bytes."""
    found = {}
    for match in _RESULT.finditer(html):
        try:
            data = base64.b64decode(match.group(2), validate=True)
        except binascii.Error:
            data = b"\0undecodable"  # counted, and it matches no listed file
        found[match.group(1)] = hashlib.sha256(data).hexdigest()
    return found


def report_problems(report: Path, listed: dict[str, str]) -> tuple[int, list[str]]:
    """Check the report's embedded results against the manifest.

    How many of the report's embedded results match the manifest's hashes, and why the report cannot be
    vouched for (empty when it can): it embeds no result, or one the manifest does not list, or other bytes."""
    embedded = embedded_results(report.read_text(encoding="utf-8", errors="replace"))
    if not embedded:
        return 0, [f"{report.name}: embeds no result of this run (not a Snakemake report of it)"]
    problems = [
        f"{report.name}: embeds {name}, which the manifest does not list"
        if name not in listed
        else f"{report.name}: embeds other bytes for {name} than the manifest lists"
        for name, digest in sorted(embedded.items())
        if listed.get(name) != digest
    ]
    return len(embedded) - len(problems), problems
