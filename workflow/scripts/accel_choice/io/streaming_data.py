"""Datasets larger than memory, on disk: written part by part, checked part by part before a read.

A dataset is a folder of parts (`part-00000.parquet` or `part-00000.npy`) and its manifest
`dataset.json` (records.scale.StreamedDataset). Each part holds whole row groups of seeded rows:
features f000… as float32 and a 0/1 target (int8 in Parquet, the last float32 column of the .npy
matrix, as the canonical benchmark file). A part is written to a temporary name and renamed when
whole, and the manifest is rewritten after every part, so a failure - a full disk included - leaves
only whole, listed parts. Growing a dataset adds parts; each row group's rows depend on the seed and
its place in the dataset alone, so a dataset grown in steps holds the rows of one written at once.

`open_parts` checks every part against the manifest before anything is read: its size (a truncated
file), and for Parquet its footer, row groups and schema (a part written with another schema).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from accel_choice import records
from accel_choice.io import atomic
from accel_choice.records.scale import DatasetPart, StreamedDataset

MANIFEST = "dataset.json"
FP32 = 4
GB = 1e9
# Beyond the data itself a dataset needs its Parquet metadata and some room for everything else.
MARGIN_BYTES = 1 * 10**9


class ScaleDataError(RuntimeError):
    """A dataset that cannot be written or read as it is; the message names the file and what is wrong."""


def row_bytes(features: int) -> int:
    """Return the bytes of one row as the reader hands it out: fp32 features and the target."""
    return (features + 1) * FP32


def rows_for(size_gb: float, features: int, row_group_rows: int) -> int:
    """Whole row groups of rows making about `size_gb` GB (at least one row group)."""
    groups = max(1, round(size_gb * GB / row_bytes(features) / row_group_rows))
    return groups * row_group_rows


def schema(features: int) -> pa.Schema:
    return pa.schema([(f"f{i:03d}", pa.float32()) for i in range(features)] + [("target", pa.int8())])


def seeded_rows(seed: int, group: int, rows: int, features: int) -> tuple[np.ndarray, np.ndarray]:
    """Generate row group `group`'s rows from the seed and the group alone.

    Row group `group`'s rows (counted from the dataset's first): standard normal features and a
    target from a fixed linear rule, from the seed and the group alone - whatever parts hold them."""
    rng = np.random.default_rng([seed, group])
    x = rng.standard_normal((rows, features), dtype=np.float32)
    w = np.random.default_rng([seed]).standard_normal(features).astype(np.float32)
    return x, (x @ w > 0).astype(np.int8)


def needed_bytes(size_gb: float, features: int, row_group_rows: int) -> int:
    """Return the disk one dataset of `size_gb` takes at most (both formats store ≤ 4 bytes per value), with margin."""
    return rows_for(size_gb, features, row_group_rows) * row_bytes(features) + MARGIN_BYTES


def free_space_problem(
    folder: str | os.PathLike[str], largest_gb: float, features: int, row_group_rows: int
) -> str | None:
    """Why the largest dataset cannot be written under `folder`, naming the free space; None if it fits."""
    probe = Path(folder).resolve()
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    needed = needed_bytes(largest_gb, features, row_group_rows)
    if needed <= free:
        return None
    return (
        f"config key scale.sizes_gb: the largest dataset ({largest_gb:,.10g} GB) needs about {needed / GB:,.1f} GB "
        f"under {folder} (on the filesystem of {probe}), which has {free / GB:.1f} GB free; "
        "lower scale.sizes_gb or set scale.scratch to a folder on a larger disk"
    )


# --- writing ---------------------------------------------------------------------------------------


def _part_name(fmt: str, index: int) -> str:
    return f"part-{index:05d}.{fmt}"


def _write_parquet(path: Path, seed: int, first: int, rows: int, features: int, group: int, codec: str) -> int:
    # Plain encoding for the features: Arrow's default dictionary encoding keeps a dictionary of every
    # distinct value up to 1 MiB per column chunk, so unique floats would take the dictionary and the
    # indices, about 1.5x the values' bytes (what other writers fall back from too).
    with pq.ParquetWriter(path, schema(features), compression=codec, use_dictionary=["target"]) as writer:
        for start in range(0, rows, group):
            x, y = seeded_rows(seed, first + start // group, group, features)
            columns = [pa.array(x[:, j]) for j in range(features)] + [pa.array(y)]
            writer.write_table(pa.Table.from_arrays(columns, schema=writer.schema), row_group_size=group)
    return rows // group


def _write_npy(path: Path, seed: int, first: int, rows: int, features: int, group: int) -> int:
    with open(path, "wb") as handle:
        header = {"descr": "<f4", "fortran_order": False, "shape": (rows, features + 1)}
        np.lib.format.write_array_header_2_0(handle, header)
        for start in range(0, rows, group):
            x, y = seeded_rows(seed, first + start // group, group, features)
            handle.write(np.hstack([x, y[:, None].astype(np.float32)]).tobytes())
    return rows // group


def grow(
    folder: str | os.PathLike[str],
    fmt: str,
    rows: int,
    *,
    features: int,
    row_group_rows: int,
    part_rows: int,
    seed: int,
    compression: str = "snappy",
) -> StreamedDataset:
    """Add parts until the dataset under `folder` holds `rows` rows (whole row groups of them)."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    if rows % row_group_rows or part_rows % row_group_rows:
        raise ValueError(f"rows {rows} and part_rows {part_rows} must be whole row groups of {row_group_rows}")
    codec = compression if fmt == "parquet" else "none"
    manifest = root / MANIFEST
    dataset = (
        records.read(StreamedDataset, manifest)
        if manifest.exists()
        else StreamedDataset(
            format=fmt, features=features, row_group_rows=row_group_rows, compression=codec, seed=seed, parts=()
        )
    )
    wanted = (fmt, features, row_group_rows, codec, seed)
    found = (dataset.format, dataset.features, dataset.row_group_rows, dataset.compression, dataset.seed)
    if found != wanted:
        raise ScaleDataError(f"{manifest}: a dataset of {found} is there, not {wanted}; delete {root} first")
    parts = list(dataset.parts)
    while sum(p.rows for p in parts) < rows:
        index = len(parts)
        count = min(part_rows, rows - sum(p.rows for p in parts))
        final = root / _part_name(fmt, index)
        temporary = root / f".{final.name}.partial"
        first = sum(p.rows for p in parts) // row_group_rows  # the dataset's row group this part starts with
        try:
            if fmt == "parquet":
                units = _write_parquet(temporary, seed, first, count, features, row_group_rows, codec)
            else:
                units = _write_npy(temporary, seed, first, count, features, row_group_rows)
        except OSError as error:
            temporary.unlink(missing_ok=True)
            if error.errno in (errno.ENOSPC, errno.EDQUOT):
                free = shutil.disk_usage(root).free
                raise ScaleDataError(
                    f"disk full while writing {final} ({free / GB:.2f} GB free on its filesystem): the part was "
                    f"removed; {len(parts)} whole part(s) of {sum(p.rows for p in parts):,} rows remain, listed in "
                    f"{manifest}. Free space, or lower scale.sizes_gb"
                ) from error
            raise
        os.replace(temporary, final)
        parts.append(DatasetPart(name=final.name, rows=count, bytes=final.stat().st_size, units=units))
        dataset = dataclasses.replace(dataset, parts=tuple(parts))  # the same data set (checked above), one part more
        atomic.write_record(manifest, dataset)
    return dataset


PART = re.compile(r"^part-\d{5}\.(parquet|npy)$")
PARTIAL = re.compile(r"^\.part-\d{5}\.(parquet|npy)\.partial$")


def remove(folder: str | os.PathLike[str]) -> None:
    """Delete the dataset this workflow wrote under `folder`.

    Delete the dataset this workflow wrote under `folder` (scratch data: the records keep what was
    measured on it): its manifest, its parts (listed or not yet listed) and unfinished parts, then the
    folder if nothing else is left. Only files of those names go, and parts only beside a manifest
    of this workflow's: `scale.scratch` may point at a disk that holds other data."""
    root = Path(folder)
    if not root.is_dir():
        return
    manifest = root / MANIFEST
    ours = False
    if manifest.is_file():
        try:
            records.read(StreamedDataset, manifest)
            ours = True
        except (ValueError, OSError) as error:
            raise ScaleDataError(
                f"{manifest}: not a dataset manifest of this workflow's; {root} left as it is"
            ) from error
    for path in root.iterdir():
        if PARTIAL.match(path.name) or (ours and (PART.match(path.name) or path.name == MANIFEST)):
            path.unlink(missing_ok=True)
    if not any(root.iterdir()):
        root.rmdir()


# --- checking before reading -----------------------------------------------------------------------


def open_parts(folder: str | os.PathLike[str], rows: int | None = None) -> tuple[StreamedDataset, list[Path]]:
    """Open the manifest and the parts holding the first `rows` rows, each checked.

    The manifest and the paths of the parts holding the first `rows` rows (all by default), each
    checked: present, of its recorded size, and for Parquet a readable footer with the recorded row
    groups and exactly the expected schema. A problem raises ScaleDataError naming the part."""
    root = Path(folder)
    manifest = root / MANIFEST
    if not manifest.is_file():
        raise ScaleDataError(f"{root}: no {MANIFEST}; not a dataset written by this workflow (or not whole)")
    dataset = records.read(StreamedDataset, manifest)
    chosen, total = [], 0
    for part in dataset.parts:
        if rows is not None and total >= rows:
            break
        chosen.append(_checked(root / part.name, part, dataset))
        total += part.rows
    if rows is not None and total < rows:
        raise ScaleDataError(f"{manifest}: holds {total:,} rows, {rows:,} were asked for")
    return dataset, chosen


def _checked(path: Path, part: DatasetPart, dataset: StreamedDataset) -> Path:
    if not path.is_file():
        raise ScaleDataError(f"{path}: listed in {MANIFEST} but missing")
    size = path.stat().st_size
    if size != part.bytes:
        raise ScaleDataError(
            f"{path}: {size:,} bytes, {MANIFEST} recorded {part.bytes:,}: "
            f"{'truncated' if size < part.bytes else 'changed'} since it was written"
        )
    if dataset.format == "npy":
        return path
    try:
        metadata = pq.ParquetFile(path).metadata
    except (pa.ArrowException, OSError) as error:
        raise ScaleDataError(f"{path}: not a readable Parquet file ({error})") from error
    found = metadata.schema.to_arrow_schema()
    expected = schema(dataset.features)
    if not found.equals(expected):
        raise ScaleDataError(
            f"{path}: its row groups have another schema than the dataset's: {_difference(found, expected)}"
        )
    if metadata.num_rows != part.rows or metadata.num_row_groups != part.units:
        raise ScaleDataError(
            f"{path}: {metadata.num_rows:,} rows in {metadata.num_row_groups} row groups, "
            f"{MANIFEST} recorded {part.rows:,} in {part.units}"
        )
    return path


def _difference(found: pa.Schema, expected: pa.Schema) -> str:
    for index, field in enumerate(expected):
        if index >= len(found):
            return f"column {field.name} ({field.type}) is missing"
        if found[index].name != field.name or found[index].type != field.type:
            return f"column {index} is {found[index].name} ({found[index].type}), expected {field.name} ({field.type})"
    extra = [f.name for f in found][len(expected) :]
    return f"extra columns {', '.join(extra)}" if extra else "the schemas' metadata differ"


def unit_ranges(dataset: StreamedDataset, parts: Sequence[Path]) -> list[tuple[Path, int, int]]:
    """Return every unit a reader hands out: (part, first row within it, rows) of one row group or window."""
    units = []
    for path, part in zip(parts, dataset.parts):
        for start in range(0, part.rows, dataset.row_group_rows):
            units.append((path, start, min(dataset.row_group_rows, part.rows - start)))
    return units
