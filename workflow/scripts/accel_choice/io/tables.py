"""Tables as CSV: lists become semicolon-joined cells so every row stays one line."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from typing import Any

from accel_choice import records
from accel_choice.io import atomic


def _cell(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return ";".join(str(v) for v in value)
    return value


def write_csv(path: str | os.PathLike[str], rows: Sequence[Any]) -> None:
    """One line per row (a dict, or a record: its fields in order)."""
    if not rows:
        raise ValueError(f"{path}: refusing to write an empty table")
    # A record that knows its own row (estimates as their columns: records.estimate.columns) gives it.
    rows = [
        row if isinstance(row, dict) else row.table_row() if hasattr(row, "table_row") else records.to_json(row)
        for row in rows
    ]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: _cell(value) for key, value in row.items()})
    atomic.write_text(path, buffer.getvalue())
