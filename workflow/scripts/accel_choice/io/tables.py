"""Tables as CSV: lists become semicolon-joined cells so every row stays one line."""

from __future__ import annotations

import csv
import html
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


def _flat(path: str | os.PathLike[str], rows: Sequence[Any]) -> list[dict[str, Any]]:
    """Each row as a dict (a record that knows its own row, estimates as their columns, gives it)."""
    if not rows:
        raise ValueError(f"{path}: refusing to write an empty table")
    return [
        row if isinstance(row, dict) else row.table_row() if hasattr(row, "table_row") else records.to_json(row)
        for row in rows
    ]


def write_csv(path: str | os.PathLike[str], rows: Sequence[Any]) -> None:
    """Write one line per row (a dict, or a record: its fields in order)."""
    rows = _flat(path, rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({key: _cell(value) for key, value in row.items()})
    atomic.write_text(path, buffer.getvalue())


_STYLE = (
    "table{border-collapse:collapse;font:13px system-ui,sans-serif}"
    "th,td{border:1px solid #ccc;padding:2px 6px;text-align:right;white-space:nowrap}"
    "th{background:#f3f3f3;position:sticky;top:0}"
)


def write_html(path: str | os.PathLike[str], rows: Sequence[Any], title: str) -> None:
    """Write the table as one HTML page, so Snakemake's report shows it as a table (it shows a CSV as a link).

    Columns that hold lists (each job's epochs) are left out: tables/*_epochs.parquet holds those one a row."""
    rows = _flat(path, rows)
    columns = [key for key in rows[0] if not any(isinstance(row.get(key), (list, tuple, dict)) for row in rows)]
    head = "".join(f"<th>{html.escape(str(key))}</th>" for key in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_shown(row.get(key)))}</td>" for key in columns) + "</tr>" for row in rows
    )
    atomic.write_text(
        path,
        f'<!doctype html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_STYLE}</style></head><body><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        "</body></html>\n",
    )


def _shown(value: Any) -> str:
    """A cell's text: floats to 4 significant digits, None empty."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
