"""Time the load and conversion path, stage by stage, for one file.

CSV:     pandas.read_csv                      -> DataFrame -> numpy float32 -> torch.float32
Parquet: pyarrow.parquet.read_table -> to_pandas -> DataFrame -> numpy float32 -> torch.float32

One untimed pass first (page cache, lazy imports, first allocations), then `passes` timed
passes; a stage's time in the record (a LoadConvertRecord) is its median over those passes (each pass is kept),
because a millisecond-long read is at the mercy of a single scheduler hiccup.
The numpy stage makes one owned, writable float32 copy; `torch.from_numpy` then shares
that buffer, so the torch stage costs no copy. The record says so rather than hiding a
copy in another stage.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import torch

from accel_choice.measure.contention import ForeignCpuMeter
from accel_choice.io.dataio import matrix_sha256
from accel_choice.measure.training import load_average
from accel_choice.records.environment import Environment
from accel_choice.records.loads import LOAD_STAGES, LoadConvertRecord, PassStages

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


def measure_load_convert(
    path: str | os.PathLike[str],
    fmt: str,
    feature_columns: Sequence[str],
    target_column: str,
    expected_matrix_sha256: str,
    passes: int = 5,
    *,
    dataset: str,
    repeat: int,
    environment: Environment,
) -> LoadConvertRecord:
    """One warm-up pass, then `passes` timed ones; the loaded tensors must equal the generated data.

    The record's wall interval spans the whole measurement, warm-up included.
    """
    if fmt not in READERS:
        raise ValueError(f"unknown format {fmt!r}; allowed: {', '.join(FORMATS)}")
    if passes < 1:
        raise ValueError(f"passes must be >= 1, got {passes}")
    path = Path(path)
    started = time.time()
    _one_pass(path, fmt, feature_columns, target_column)
    load_before = load_average()
    meter = ForeignCpuMeter().start()
    timed = [_one_pass(path, fmt, feature_columns, target_column) for _ in range(passes)]
    foreign = meter.stop()
    load_after = load_average()
    runs = [stages for stages, _, _ in timed]
    _, x, y = timed[-1]
    loaded = np.column_stack([x.numpy(), y.numpy()])
    matches = matrix_sha256(loaded) == expected_matrix_sha256
    if not matches:
        raise ValueError(f"{path}: the loaded matrix differs from the generated one; delete the export and re-run")
    return LoadConvertRecord(
        format=fmt,
        file=path.name,
        file_bytes=path.stat().st_size,
        rows=int(x.shape[0]),
        features=int(x.shape[1]),
        tensor_bytes=int(x.element_size() * x.nelement() + y.element_size() * y.nelement()),
        tensor_dtype=str(x.dtype),
        torch_shares_numpy_buffer=True,
        **{stage: statistics.median(getattr(run, stage) for run in runs) for stage in LOAD_STAGES},
        passes=passes,
        pass_stages=tuple(runs),
        matches_generated_data=matches,
        threads=torch.get_num_threads(),
        loadavg_before=tuple(load_before),
        loadavg_after=tuple(load_after),
        foreign_cpu_share=foreign.share,
        dataset=dataset,
        repeat=repeat,
        wall_interval=(started, time.time()),
        environment=environment,
    )
