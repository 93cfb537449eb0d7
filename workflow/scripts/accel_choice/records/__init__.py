"""The records rules hand each other: every JSON one rule writes and another reads, as a type.

Each record is a frozen dataclass (pydantic's, strict: an int is not a bool, a float not a
string, NaN and infinity are refused, an unknown key is an error) defined once, in one module
of this package per subject. A record that is a whole file carries a schema name and version
(`SCHEMA`, `VERSION`); `to_json` writes them first, and `read` refuses a file written under
another schema or version, or by a workflow before records had versions, with a message naming
the file and saying to re-run, instead of half-reading it. A damaged value is refused naming
the file and the field (`records[1].epoch_s: Input should be greater than 0 (found -1.0)`).

This package imports nothing else from accel_choice: every layer may depend on it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar, dataclass_transform

from accel_choice.records import ledger

try:
    from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
    from pydantic.dataclasses import dataclass as _pydantic_dataclass

    VALIDATED = True
except ModuleNotFoundError:  # a bare machine (torch and numpy): records are written, not read (see `record`)
    VALIDATED = False

    def Field(**constraints: Any) -> Any:  # noqa: N802 - pydantic's name, kept as a field type's metadata
        """Keep a field's constraints as metadata; without pydantic nothing checks them."""
        return constraints

    def ConfigDict(**settings: Any) -> Any:  # noqa: N802
        """Keep the settings; without pydantic nothing applies them."""
        return settings


T = TypeVar("T")

# defer_build: a record type's validator is built when the type first validates or writes, not when its module is
# imported; a job uses a few of the 120 types (importing every record module: 0.39 s → 0.30 s, 2026-12-04).
CONFIG = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, defer_build=True)
HEADER = ("schema", "schema_version", ledger.KEY)
RERUN = "delete it and re-run the workflow (snakemake --cores 4 makes it again)"
REMEASURE = "measure it again: delete it and re-run the workflow (snakemake --cores 4 makes it again, from its job)"

# Field types with their invariants, shared by every record.
Seconds = Annotated[float, Field(gt=0)]  # a measured duration
NonNegativeSeconds = Annotated[float, Field(ge=0)]
Positive = Annotated[float, Field(gt=0)]
NonNegative = Annotated[float, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]
Count = Annotated[int, Field(ge=0)]
PositiveCount = Annotated[int, Field(ge=1)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
LoadAverage = tuple[float, float, float]


class UserInputError(ValueError):
    """A mistake in what the user gave (config, table, arrays, model, a results folder): its message is
    the one line that names the key or file and says what is allowed. A job that raises one ends with
    that line, without a traceback (io.runtime.job); any other exception keeps its traceback in the job's log."""


class RecordError(UserInputError):
    """A record file that cannot be used as it is; the message names the file and the field."""


@dataclass_transform(kw_only_default=True, frozen_default=True)
def record(cls: type[T] | None = None, *, schema: str | None = None, version: int = 1) -> Any:
    """Make `cls` a record: a frozen, strictly validated, keyword-only dataclass.

    Without pydantic (a bare GPU machine has torch and numpy only) it is a standard frozen dataclass:
    `to_json` writes it and its `__post_init__` checks run, but nothing reads records there (`from_json`
    says pydantic is needed), so every field's type is checked where the record is read.

    With `schema`, the record is a whole file: `to_json` writes `schema` and `schema_version`
    first and `read` checks them.
    """

    def wrap(klass: type[T]) -> type[T]:
        if VALIDATED:
            made = _pydantic_dataclass(frozen=True, kw_only=True, config=CONFIG)(klass)
        else:  # its own invariants (__post_init__) still run; field types and bounds are checked on reading
            made = dataclasses.dataclass(frozen=True, kw_only=True)(klass)
        made.SCHEMA = schema  # type: ignore[attr-defined]
        made.VERSION = version  # type: ignore[attr-defined]
        return made

    return wrap if cls is None else wrap(cls)


def ordered(low: float, middle: float, high: float, names: str) -> None:
    """Refuse a record whose spread does not hold its centre: `names` names the three fields."""
    if not low <= middle <= high:
        low_name, middle_name, high_name = names.split()
        raise ValueError(
            f"{low_name} {low!r} <= {middle_name} {middle!r} <= {high_name} {high!r} does not hold: a damaged record"
        )


def one_per_repeat(record: Any, *names: str) -> None:
    """Refuse a record whose per-job fields do not hold one value per repeat.

    Refuse a record whose per-job fields `names` do not hold one value for each of its `repeats` (a null
    field, one that was not measured, holds none to count)."""
    for name in names:
        if getattr(record, name) is not None and len(getattr(record, name)) != record.repeats:
            raise ValueError(f"{len(getattr(record, name))} {name} for {record.repeats} repeats")


@functools.cache
def _adapter(cls: type) -> TypeAdapter[Any]:
    return TypeAdapter(cls)


def to_json(obj: Any) -> dict[str, Any]:
    """Return the JSON object of a record, its schema and version first when it is a whole file."""
    body = _adapter(type(obj)).dump_python(obj, mode="json") if VALIDATED else _plain(dataclasses.asdict(obj))
    schema = getattr(type(obj), "SCHEMA", None)
    return {"schema": schema, "schema_version": type(obj).VERSION, **body} if schema else body


def _plain(value: Any) -> Any:
    """A record's fields as JSON values where pydantic is absent: tuples as lists, keys as strings."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _refuse_constant(source: str) -> Callable[[str], Any]:
    def refuse(name: str) -> Any:
        raise RecordError(f"{source}: holds {name}, which no record writes (JSON has no NaN or infinity); {RERUN}")

    return refuse


def _where(location: tuple[Any, ...]) -> str:
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "(the whole record)"


def describe_error(error: ValidationError, source: str) -> str:
    """Describe the first problem of a validation error, naming the file, the field and the value found."""
    first = error.errors()[0]
    found = first.get("input")
    shown = "" if isinstance(found, (dict, list)) else f" (found {found!r})"
    more = f" and {error.error_count() - 1} more problem(s)" if error.error_count() > 1 else ""
    return f"{source}: {_where(tuple(first['loc']))}: {first['msg']}{shown}{more}; {RERUN}"


def _upgraded(cls: type, data: dict[str, Any], found: tuple[Any, Any], source: str) -> tuple[dict[str, Any], Any]:
    """Bring a file of an older version of `cls`'s schema up to date, step by step, where `cls.UPGRADES` can.

    `UPGRADES` maps a version to a function that returns the next version's JSON, or raises ValueError where the
    file does not add up (an archived run stays readable; a damaged one is refused as before)."""
    upgrades = getattr(cls, "UPGRADES", {})
    while found[0] == cls.SCHEMA and found[1] in upgrades:  # type: ignore[attr-defined]
        try:
            data = {**upgrades[found[1]](data), "schema_version": found[1] + 1}
        except ValueError as error:
            raise RecordError(f"{source}: {found[0]} version {found[1]}: {error}; {RERUN}") from None
        found = (found[0], found[1] + 1)
    return data, found


def from_json(cls: type[T], data: Any, source: str) -> T:
    """Build a record of type `cls` from parsed JSON (`data`), read from `source` (named in every error)."""
    if not VALIDATED:
        raise RecordError(f"{source}: reading a record checks it with pydantic, which is not installed here")
    schema = getattr(cls, "SCHEMA", None)
    if schema:
        if not isinstance(data, dict):
            raise RecordError(f"{source}: expected a JSON object ({schema}), found {type(data).__name__}; {RERUN}")
        found = (data.get("schema"), data.get("schema_version"))
        data, found = _upgraded(cls, data, found, source)
        if found != (schema, cls.VERSION):  # type: ignore[attr-defined]
            was = (
                "no schema (written by a workflow before records were versioned)"
                if found == (None, None)
                else f"schema {found[0]} version {found[1]}"
            )
            raise RecordError(f"{source}: has {was}; this workflow reads {schema} version {cls.VERSION}: {RERUN}")  # type: ignore[attr-defined]
        data = {key: value for key, value in data.items() if key not in HEADER}
    try:
        return _adapter(cls).validate_json(json.dumps(data, allow_nan=True))
    except ValidationError as error:
        raise RecordError(describe_error(error, source)) from None


# Whether every record read must be vouched for by its job's log (records.ledger): on inside a
# workflow job (io.runtime.job) and in the tools that read an archive; off for records built by hand.
_LEDGER_REQUIRED = [False]


def require_ledger(required: bool = True) -> bool:
    """Require (or, with False, stop requiring) that a job's log vouch for every record file read.

    From now on in this process, refuse (or, with False, accept again) a record file that no job's log
    vouches for (records.ledger); returns what was required before."""
    before, _LEDGER_REQUIRED[0] = _LEDGER_REQUIRED[0], required
    return before


def read(cls: type[T], path: str | os.PathLike[str]) -> T:
    """Read and check a record file.

    Read and check a record file; RecordError naming the file for anything that is not right: not
    what its job wrote (records.ledger), damaged, of another schema or version, or failing a check."""
    source = str(path)
    try:
        raw = Path(path).read_bytes()
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise RecordError(f"{source}: missing; {RERUN}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise RecordError(f"{source}: cannot be read ({error}); {RERUN}") from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant(source))
    except json.JSONDecodeError as error:
        raise RecordError(f"{source}: not valid JSON ({error}); {RERUN}") from None
    if getattr(cls, "SCHEMA", None) and isinstance(data, dict):
        log_header = data.get(ledger.KEY)
        if log_header is None and _LEDGER_REQUIRED[0]:
            raise RecordError(
                f"{source}: names no job log that vouches for it (no '{ledger.KEY}' in its header: written outside "
                f"the workflow, or edited); {REMEASURE}"
            )
        found = None if log_header is None else ledger.problem(path, raw, str(log_header))
        if found:
            raise RecordError(f"{source}: {found}; {REMEASURE}")
    return from_json(cls, data, source)
