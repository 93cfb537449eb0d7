"""Repeats -> medians with spread for the data path: load/convert stages per format, host↔device copies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from accel_choice.analyze.aggregate import FOREIGN_CPU_SHARE, LOADAVG_RISE, _contaminated, _group, _median
from accel_choice.analyze.stats import NOISE_IQR_RATIO, OUTLIER_FACTOR, summarize

LOAD_KEYS = ("dataset", "format", "repeat", "rows", "file_bytes", "read_s", "to_pandas_s", "to_numpy_s", "to_torch_s",
             "total_s", "loadavg_before", "loadavg_after")
TRANSFER_KEYS = ("device", "repeat", "context_startup_s", "copies")


LOAD_STAGES = ("read_s", "to_pandas_s", "to_numpy_s", "to_torch_s", "total_s")


def aggregate_load_convert(
    records: Sequence[dict[str, Any]],
    noise_iqr_ratio: float = NOISE_IQR_RATIO,
    outlier_factor: float = OUTLIER_FACTOR,
    foreign_cpu_share: float = FOREIGN_CPU_SHARE,
    loadavg_rise: float = LOADAVG_RISE,
) -> list[dict[str, Any]]:
    """One row per (dataset, format): each stage's median over repeats, with spread of the total."""
    if not records:
        raise ValueError("no load/convert records to aggregate")
    table = []
    for (dataset, fmt), group in _group(records, ("dataset", "format")).items():
        row: dict[str, Any] = {
            "dataset": dataset,
            "format": fmt,
            "repeats": len(group),
            "rows": group[0]["rows"],
            "file_bytes": group[0]["file_bytes"],
            "tensor_bytes": group[0]["tensor_bytes"],
        }
        for stage in LOAD_STAGES:
            row[f"{stage}_median"] = _median([r[stage] for r in group])
        total = summarize([r["total_s"] for r in group], noise_iqr_ratio, outlier_factor)
        row.update(
            total_s_min=total["min"],
            total_s_max=total["max"],
            total_s_iqr=total["iqr"],
            noisy=total["noisy"],
            noise_reasons=total["noise_reasons"],
            mb_per_s=row["file_bytes"] / row["total_s_median"] / 1e6,
            contaminated=_contaminated(group, foreign_cpu_share, loadavg_rise),
        )
        table.append(row)
    return table


def aggregate_transfers(jobs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per copy (what, direction, memory): median seconds over repeats, min, max, GB/s from
    the median; and the fixed costs, context start-up and pinning, with their spread."""
    if not jobs:
        raise ValueError("no transfer records to aggregate")
    copies = [dict(c, repeat=job["repeat"]) for job in jobs for c in job["copies"]]
    table = []
    for (what, direction, memory), group in _group(copies, ("what", "direction", "memory")).items():
        seconds = summarize([c["seconds"] for c in group])
        table.append(
            {
                "what": what,
                "direction": direction,
                "memory": memory,
                "bytes": group[0]["bytes"],
                "repeats": len(group),
                "seconds_median": seconds["median"],
                "seconds_min": seconds["min"],
                "seconds_max": seconds["max"],
                "gb_per_s": group[0]["bytes"] / seconds["median"] / 1e9,
                "noisy": seconds["noisy"],
            }
        )
    startup = summarize([job["context_startup_s"] for job in jobs])
    pins = [job["pin_memory_s"] for job in jobs if job["pin_memory_s"] is not None]
    return {
        "device": jobs[0]["device"],
        "copies": sorted(table, key=lambda r: (r["direction"], r["memory"], r["bytes"])),
        "context_startup_s": {k: startup[k] for k in ("median", "min", "max")},
        "pin_memory_s_median": _median(pins) if pins else None,
    }
