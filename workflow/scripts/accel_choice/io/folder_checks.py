"""What the comparison reads from a results folder that is no record: the configuration and provenance.

The tables, the decision and the environment are records, checked as they are read (records.read):
a damaged value is refused naming the file and the field. The configuration (config.yaml) and
provenance.json are plain mappings: here they must be mappings and hold no NaN or infinity anywhere
(Python's json reads `NaN` and `Infinity`; the workflow never writes them).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from accel_choice.records import UserInputError
from typing import Any


class NotAResultsFolder(UserInputError):
    """A folder that cannot be compared; the message names the file and fits on one line."""


class DamagedRecord(NotAResultsFolder):
    """A value the comparison reads is not one the workflow writes; the message names the file and the field."""


def incomplete(folder: Path, name: str, why: str = "missing") -> NotAResultsFolder:
    return NotAResultsFolder(f"{folder / name}: {why}; {folder} is not a complete accel-choice results folder")


def object_document(document: Any, folder: Path, name: str) -> None:
    """provenance.json, config.yaml: a mapping, every key optional, no NaN or infinity in it."""
    if not isinstance(document, dict):
        raise incomplete(folder, name, "not a JSON object" if name.endswith(".json") else "not a configuration mapping")
    finite_numbers(document, folder / name)


def finite_numbers(document: Any, source: Path) -> None:
    """Check that no NaN or infinity appears anywhere.

    No NaN or infinity anywhere, also where the comparison does not look: the workflow writes JSON with
    allow_nan=False, so a file that has one was changed by hand or by another tool, and comparison.json could not
    hold a difference in such a value."""
    for path, value in _leaves(document, ""):
        if isinstance(value, float) and not math.isfinite(value):
            raise DamagedRecord(
                f"{source}: {path or '(top level)'} is {json.dumps(value)}; expected a finite number "
                "(NaN and infinity cannot be compared)"
            )


def _leaves(node: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for number, value in enumerate(node):
            yield from _leaves(value, f"{path}[{number}]")
    else:
        yield path, node
