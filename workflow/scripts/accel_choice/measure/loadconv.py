"""Time the load and conversion path, stage by stage, for every exported file in one process.

CSV:     pandas.read_csv                      -> DataFrame -> numpy float32 -> torch.float32
Parquet: pyarrow.parquet.read_table -> to_pandas -> DataFrame -> numpy float32 -> torch.float32

One untimed pass over every file first (page cache, lazy imports, first allocations), then
`passes` timed rounds; each round loads every file once, in the opposite order from the round
before (A B, B A, ...; odd repeats start reversed), so a slow minute falls on every file alike.
A stage's time in the record (a FileLoad) is its median over the passes (each pass is kept),
because a millisecond-long read is at the mercy of a single scheduler hiccup. One job per repeat
instead of one per file and repeat: the job's start-up (Python, pandas, pyarrow, torch: seconds)
is paid once for all files.
The numpy stage makes one owned, writable float32 copy; `torch.from_numpy` then shares
that buffer, so the torch stage costs no copy. The record says so rather than hiding a
copy in another stage.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import torch

from accel_choice.measure.contention import ForeignCpuMeter
from accel_choice.io.dataio import matrix_sha256
from accel_choice.measure.job import Envelope
from accel_choice.measure.contention import load_average
from accel_choice.records.loads import LOAD_STAGES, FileLoad, LoadConvertJob, PassStages

FORMATS = ("csv", "parquet")


def _read_csv(path: Path) -> tuple[pd.DataFrame, dict[str, float]]:
    t0 = time.perf_counter()
    frame = pd.read_csv(path)
    return frame, {"read_s": time.perf_counter() - t0, "to_pandas_s": 0.0}


def _read_parquet(path: Path) -> tuple[pd.DataFrame, dict[str, float]]:
    t0 = time.perf_counter()
    table = pq.read_table(path)
    t1 = time.perf_counter()
    frame = table.to_pandas()
    return frame, {"read_s": t1 - t0, "to_pandas_s": time.perf_counter() - t1}


READERS: dict[str, Callable[[Path], tuple[pd.DataFrame, dict[str, float]]]] = {
    "csv": _read_csv,
    "parquet": _read_parquet,
}


def _one_pass(
    path: Path, fmt: str, feature_columns: Sequence[str], target_column: str
) -> tuple[PassStages, torch.Tensor, torch.Tensor]:
    frame, stages = READERS[fmt](path)
    t0 = time.perf_counter()
    # copy=True: pandas' copy-on-write may hand out a read-only view, which torch must not train on.
    features = frame[list(feature_columns)].to_numpy(dtype=np.float32, copy=True)
    target = frame[target_column].to_numpy(dtype=np.float32, copy=True)
    t1 = time.perf_counter()
    x = torch.from_numpy(features)
    y = torch.from_numpy(target)
    t2 = time.perf_counter()
    stages.update(to_numpy_s=t1 - t0, to_torch_s=t2 - t1)
    stages["total_s"] = stages["read_s"] + stages["to_pandas_s"] + stages["to_numpy_s"] + stages["to_torch_s"]
    return PassStages(**stages), x, y


@dataclass(frozen=True)
class FileToLoad:
    """One exported file and what its loaded matrix must be."""

    path: Path
    dataset: str
    format: str
    feature_columns: Sequence[str]
    target_column: str
    expected_matrix_sha256: str

    def __post_init__(self) -> None:
        if self.format not in READERS:
            raise ValueError(f"unknown format {self.format!r}; allowed: {', '.join(FORMATS)}")


def round_order(files: Sequence[FileToLoad], round_index: int, repeat: int) -> list[FileToLoad]:
    """Return the files of one timed round: A B ..., then reversed, alternating; odd repeats start reversed."""
    return list(files) if (round_index + repeat) % 2 == 0 else list(reversed(files))


def _file_load(spec: FileToLoad, runs: Sequence[PassStages], x: torch.Tensor, y: torch.Tensor) -> FileLoad:
    loaded = np.column_stack([x.numpy(), y.numpy()])
    matches = matrix_sha256(loaded) == spec.expected_matrix_sha256
    if not matches:
        raise ValueError(f"{spec.path}: the loaded matrix differs from the generated one; delete the export and re-run")
    return FileLoad(
        dataset=spec.dataset,
        format=spec.format,
        file=spec.path.name,
        file_bytes=spec.path.stat().st_size,
        rows=int(x.shape[0]),
        features=int(x.shape[1]),
        tensor_bytes=int(x.element_size() * x.nelement() + y.element_size() * y.nelement()),
        tensor_dtype=str(x.dtype),
        torch_shares_numpy_buffer=True,
        **{stage: statistics.median(getattr(run, stage) for run in runs) for stage in LOAD_STAGES},
        passes=len(runs),
        pass_stages=tuple(runs),
        matches_generated_data=matches,
    )


def measure_load_convert(
    files: Sequence[FileToLoad],
    passes: int = 5,
    *,
    repeat: int,
    envelope: Envelope,
) -> LoadConvertJob:
    """Time loading and converting the data files.

    One warm-up pass per file, then `passes` interleaved rounds; every loaded matrix must equal
    the generated data (checked on the last pass of each file, outside the clock).

    The record's wall interval (the timing job's `envelope`, opened before this is called) spans the
    whole measurement, warm-up included.
    """
    if not files:
        raise ValueError("no file to load")
    if passes < 1:
        raise ValueError(f"passes must be >= 1, got {passes}")
    keys = [(spec.dataset, spec.format) for spec in files]
    if len(set(keys)) != len(keys):
        raise ValueError(f"a (dataset, format) listed twice: {keys}")
    for spec in files:
        _one_pass(spec.path, spec.format, spec.feature_columns, spec.target_column)
    load_before = load_average()
    meter = ForeignCpuMeter().start()
    runs: dict[tuple[str, str], list[PassStages]] = {key: [] for key in keys}
    last: dict[tuple[str, str], tuple[torch.Tensor, torch.Tensor]] = {}
    for round_index in range(passes):
        for spec in round_order(files, round_index, repeat):
            stages, x, y = _one_pass(spec.path, spec.format, spec.feature_columns, spec.target_column)
            runs[(spec.dataset, spec.format)].append(stages)
            last[(spec.dataset, spec.format)] = (x, y)
    foreign = meter.stop()
    load_after = load_average()
    loads = tuple(_file_load(spec, runs[key], *last[key]) for spec, key in zip(files, keys))
    return envelope.record(
        LoadConvertJob,
        loads=loads,
        threads=torch.get_num_threads(),
        loadavg_before=tuple(load_before),
        loadavg_after=tuple(load_after),
        foreign_cpu_share=foreign.share,
        repeat=repeat,
    )
