"""What the comparison reads from a results folder, checked before anything is computed from it.

One check per kind of document: a training table (cpu_training.json, gpu_training.json), the full-path rows
(decision.json's `full_path`, or full_path.csv), decision.json, the environment record, provenance.json, and for
every JSON or YAML document: no NaN or infinity anywhere (Python's json reads `NaN` and `Infinity`; the workflow
never writes them). Each problem is one line naming the file, the row (counted from 0, as in the JSON list or below
the CSV header) and the field:

    results/tables/cpu_training.json: row 1 (cpu fastpath B=32): epoch_s_median is -1.0; expected a positive
    finite number of seconds
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from accel_choice.records.training import VARIANT_KEYS

# (name in the outputs, median key, min key, max key) of a training row; the full path is added separately.
TRAINING_METRICS = (
    ("epoch_s", "epoch_s_median", "epoch_s_min", "epoch_s_max"),
    ("samples_per_s", "samples_per_s", "samples_per_s_min", "samples_per_s_max"),
)
FULL_PATH_METRIC = ("full_path_s", "total_s", "total_min_s", "total_max_s")
SECONDS = "a positive finite number of seconds"
RATE = "a positive finite number of samples per second"


class NotAResultsFolder(ValueError):
    """A folder that cannot be compared; the message names the file and fits on one line."""


class DamagedRecord(NotAResultsFolder):
    """A value the comparison reads is not one the workflow writes; the message names the file, row and field."""


def incomplete(folder: Path, name: str, why: str = "missing") -> NotAResultsFolder:
    return NotAResultsFolder(f"{folder / name}: {why}; {folder} is not a complete accel-choice results folder")


def variant_name(row: dict[str, Any]) -> str:
    """'cpu fastpath' or 'cuda fp16 streamed fastpath'; also names a row whose values are damaged."""
    device, precision, placement, loader = (row.get(key) for key in ("device", "precision", "placement", "loader"))
    if device == "cpu":
        return f"cpu {loader}"
    return f"{device} {precision} {placement} {loader}"


# ---------------------------------------------------------------- one value


def _shown(value: Any) -> str:
    if value is None:
        return "has no value"
    if isinstance(value, bool):
        return f"is {value} (a boolean)"
    if isinstance(value, str):
        return f"is the string {value!r}"
    if isinstance(value, (int, float)):
        return f"is {value!r}"
    return f"is a {type(value).__name__} ({json.dumps(value, default=str)[:60]})"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# A check returns None for a good value, else what was expected, in words.
Check = Callable[[Any], "str | None"]


def _positive(expected: str) -> Check:
    return lambda value: None if _is_number(value) and value > 0 else expected


def _startup(value: Any) -> str | None:
    # Optional: CPU rows carry 0, and a CSV cell may be empty.
    return None if value is None or (_is_number(value) and value >= 0) else "a finite number of seconds >= 0, or none"


def _batch_size(value: Any) -> str | None:
    return None if isinstance(value, int) and not isinstance(value, bool) and value > 0 else "a positive integer"


def _name(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "a non-empty string"


def _flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def _optional_flag(value: Any) -> str | None:
    return None if value is None else _flag(value)


def _threads(value: Any) -> str | None:
    counts = value if isinstance(value, list) else [value]
    ok = value is None or all(_batch_size(count) is None for count in counts)
    return None if ok else "a thread count or a list of them"


def _list(value: Any) -> str | None:
    return None if value is None or isinstance(value, list) else "a list"


VARIANT_FIELDS: tuple[tuple[str, Check], ...] = tuple(
    (key, _batch_size if key == "batch_size" else _name) for key in VARIANT_KEYS)
TRAINING_FIELDS: tuple[tuple[str, Check], ...] = (
    *VARIANT_FIELDS,
    *((key, _positive(SECONDS)) for key in TRAINING_METRICS[0][1:]),
    *((key, _positive(RATE)) for key in TRAINING_METRICS[1][1:]),
    ("noisy", _flag),
)
TRAINING_OPTIONAL: tuple[tuple[str, Check], ...] = (("threads", _threads), ("contaminated", _list))
FULL_PATH_FIELDS: tuple[tuple[str, Check], ...] = (
    ("format", _name), *VARIANT_FIELDS, *((key, _positive(SECONDS)) for key in FULL_PATH_METRIC[1:]))
FULL_PATH_OPTIONAL: tuple[tuple[str, Check], ...] = (("startup_s", _startup), ("noisy", _optional_flag))


# ---------------------------------------------------------------- one row


def _where(source: Path, what: str, number: int, row: dict[str, Any], with_format: bool = False) -> str:
    name = f"{variant_name(row)} B={row.get('batch_size')}"
    shown_format = f"{row.get('format')}, " if with_format else ""
    return f"{source}: {what} {number} ({shown_format}{name})"


def _check_row(row: Any, number: int, folder: Path, name: str, required: Sequence[tuple[str, Check]],
               optional: Sequence[tuple[str, Check]], metrics: Sequence[Sequence[str]], what: str = "row",
               with_format: bool = False) -> None:
    """Keys present, each value of the kind the comparison computes with, and min <= median <= max per metric."""
    if not isinstance(row, dict):
        raise incomplete(folder, name, f"{what} {number} is not an object (found {type(row).__name__})")
    missing = [key for key, _ in required if key not in row]
    if missing:
        raise incomplete(folder, name, f"{what} {number} lacks {', '.join(missing)}")
    where = _where(folder / name, what, number, row, with_format)
    for key, check in (*required, *((key, check) for key, check in optional if key in row)):
        expected = check(row[key])
        if expected is not None:
            raise DamagedRecord(f"{where}: {key} {_shown(row[key])}; expected {expected}")
    for median_key, low_key, high_key in metrics:
        low, median, high = row[low_key], row[median_key], row[high_key]
        for (small_key, small), (large_key, large) in (((low_key, low), (median_key, median)),
                                                       ((median_key, median), (high_key, high))):
            if small > large:
                raise DamagedRecord(f"{where}: {small_key} {small!r} > {large_key} {large!r}; a damaged record "
                                    "(min <= median <= max must hold)")


def _rows(document: Any, key: str, folder: Path, name: str, required: bool = True) -> list[Any]:
    rows = document.get(key) if isinstance(document, dict) else None
    if rows is None and not required:
        return []
    if not isinstance(rows, list):
        raise incomplete(folder, name, "not an aggregated training table (no 'table' list)" if key == "table"
                         else f"its '{key}' is not a list")
    return rows


# ---------------------------------------------------------------- one document per kind


def training_document(document: Any, folder: Path, name: str) -> None:
    """cpu_training.json / gpu_training.json: every row of `table`, and the variant of every `non_finite` run."""
    for number, row in enumerate(_rows(document, "table", folder, name)):
        _check_row(row, number, folder, name, TRAINING_FIELDS, TRAINING_OPTIONAL, [m[1:] for m in TRAINING_METRICS])
    for number, row in enumerate(_rows(document, "non_finite", folder, name, required=False)):
        _check_row(row, number, folder, name, VARIANT_FIELDS, (), (), what="non_finite row")
    finite_numbers(document, folder / name)


def full_path_rows(rows: Sequence[Any], folder: Path, name: str, what: str = "row") -> None:
    """The full-path rows of full_path.csv, or (what="full_path row") of decision.json."""
    for number, row in enumerate(rows):
        _check_row(row, number, folder, name, FULL_PATH_FIELDS, FULL_PATH_OPTIONAL, [FULL_PATH_METRIC[1:]], what,
                   with_format=True)


def decision_document(document: Any, folder: Path, name: str) -> None:
    """decision.json: an object; its verdict an object when present; its full-path rows when it has them."""
    if not isinstance(document, dict):
        raise incomplete(folder, name, "not a JSON object")
    if not isinstance(document.get("verdict"), (dict, type(None))):
        raise DamagedRecord(f"{folder / name}: verdict {_shown(document['verdict'])}; expected an object")
    if isinstance(document.get("full_path"), list):
        full_path_rows(document["full_path"], folder, name, what="full_path row")
    finite_numbers(document, folder / name)


def environment_document(document: Any, folder: Path, name: str) -> None:
    if not isinstance(document, dict) or not isinstance(document.get("quick"), dict):
        raise incomplete(folder, name, "not an environment record (no 'quick' part)")
    finite_numbers(document, folder / name)


def object_document(document: Any, folder: Path, name: str) -> None:
    """provenance.json, config.yaml: a mapping, every key optional."""
    if not isinstance(document, dict):
        raise incomplete(folder, name, "not a JSON object" if name.endswith(".json") else "not a configuration mapping")
    finite_numbers(document, folder / name)


def finite_numbers(document: Any, source: Path) -> None:
    """No NaN or infinity anywhere, also where the comparison does not look: the workflow writes JSON with
    allow_nan=False, so a file that has one was changed by hand or by another tool, and comparison.json could not
    hold a difference in such a value."""
    for path, value in _leaves(document, ""):
        if isinstance(value, float) and not math.isfinite(value):
            raise DamagedRecord(f"{source}: {path or '(top level)'} is {json.dumps(value)}; expected a finite number "
                                "(NaN and infinity cannot be compared)")


def _leaves(node: Any, path: str) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for number, value in enumerate(node):
            yield from _leaves(value, f"{path}[{number}]")
    else:
        yield path, node
