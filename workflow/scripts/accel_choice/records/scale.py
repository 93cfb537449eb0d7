"""The streaming study's records (exercise 4 measured, docs/scale.md): a streamed dataset's manifest,
one timing job's stages per dataset size, the training step's own rate, and the table that puts them
together with the scale scenario.

Rates are bytes or samples per second of a whole pass over the dataset; each is an Estimate
(records.estimate) whose interval is the percentile interval of the pass's chunks (row groups)
resampled. A table row spells an estimate as its columns (records.estimate.columns).
"""

from __future__ import annotations

from typing import Any, Literal

from accel_choice.records import Count, NonNegative, NonNegativeSeconds, Positive, PositiveCount, Seconds, record
from accel_choice.records.environment import Environment
from accel_choice.records.estimate import PositiveEstimate, flat_row
from accel_choice.records.sentinel import SentinelReadings

Format = Literal["parquet", "npy"]
Cache = Literal["cold", "warm"]
# How a cold read was made cold: the page cache dropped (root: /proc/sys/vm/drop_caches), the file's
# pages evicted (posix_fadvise DONTNEED), or not at all (the read is reported warm).
CacheDrop = Literal["drop_caches", "fadvise", "none"]
Stage = Literal["storage", "decode", "convert", "reader", "train", "copy"]
Bound = Literal["storage-bound", "compute-bound", "copy-bound"]


# --- the dataset on disk: <scratch>/<format>/dataset.json ---------------------------------------


@record
class DatasetPart:
    name: str  # part-00000.parquet, part-00000.npy
    rows: PositiveCount
    bytes: PositiveCount
    units: PositiveCount  # row groups (Parquet) or windows of row_group_rows (npy)


@record(schema="scale-dataset")
class StreamedDataset:
    """A dataset written as parts, each whole before it is named (written to a temporary name and
    renamed); what a reader checks every part against before it reads one."""

    format: Format
    features: PositiveCount
    row_group_rows: PositiveCount
    compression: str  # Parquet's codec; "none" for .npy
    seed: Count
    parts: tuple[DatasetPart, ...]

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.parts)

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.parts)


# --- one timing job: timing/scale/{format}.json ------------------------------------------------


@record
class Rate:
    """One pass: `amount` (bytes or samples) in `seconds` over `chunks` timed chunks; `per_s`: its point
    amount / seconds, its interval over the pass's chunks resampled (one pass: `jobs` 1)."""

    amount: Positive  # bytes, or samples
    seconds: Seconds
    per_s: PositiveEstimate
    chunks: PositiveCount


@record
class ReaderPass:
    """The streaming reader (measure.streaming) over the whole dataset: torch batches of `batch_size`,
    read by `workers` DataLoader worker processes (0: in the training process) or a pool of as many
    threads (`kind` "threads")."""

    workers: Count
    cache: Cache
    kind: Literal["processes", "threads"]
    samples: Rate  # samples per second the reader sustained
    storage_bytes: Count  # read from storage during the pass (/proc/vmstat pgpgin)


@record
class SizeMeasurement:
    """Every stage timed at one dataset size."""

    target_gb: Positive
    rows: PositiveCount
    file_bytes: PositiveCount
    parts: PositiveCount
    generate_s: Seconds  # writing the parts this size added (not a measured stage)
    fits_page_cache: bool  # the files are smaller than the memory available when the size was written
    cold_read: Rate  # raw bytes from storage, the page cache dropped first
    cold_storage_bytes: Count
    warm_read: Rate  # the same bytes again, straight after
    warm_storage_bytes: Count
    decode: Rate | None  # file bytes (from the page cache) → numpy; null where the files do not fit in it
    convert: Rate | None  # numpy → torch batches (float32 features and target)
    readers: tuple[ReaderPass, ...]  # cold, and warm where the files fit in the page cache
    peak_rss_bytes: PositiveCount  # the job's own peak resident set while this size was measured
    workers_peak_rss_bytes: Count  # the largest reader worker's peak so far (0: no worker has run)
    # While this size was measured, in cores on average (null: no /proc/stat): other processes' user
    # CPU (the reader's workers and the kernel's reclaim are the job's own), and the hypervisor's steal.
    foreign_cpu_share: NonNegative | None
    steal_share: NonNegative | None


@record(schema="scale-job", version=5)
class ScaleJob:
    """timing/scale/{format}.json: one format, dataset sizes growing to the configured maximum, with the
    job's drift sentinel timed at the start and after each size (`sentinel.seconds[i + 1]` after
    `sizes[i]`). The node's memory, which the page cache is judged against, is its environment's
    `host_memory_bytes` (known: the study reads /proc/meminfo)."""

    format: Format
    features: PositiveCount
    batch_size: PositiveCount
    row_group_rows: PositiveCount
    compression: str
    cache_drop: CacheDrop
    sizes: tuple[SizeMeasurement, ...]
    environment: Environment
    sentinel: SentinelReadings

    def __post_init__(self) -> None:
        if self.environment.host_memory_bytes is None:
            raise ValueError("environment.host_memory_bytes is null: the study needs the node's memory")
        targets = [s.target_gb for s in self.sizes]
        if not targets or targets != sorted(set(targets)):
            raise ValueError(f"sizes must grow, found {targets}")
        if len(self.sentinel.seconds) != len(self.sizes) + 1:
            raise ValueError(
                f"the sentinel is timed at the start and after each of the {len(self.sizes)} sizes, "
                f"found {len(self.sentinel.seconds)} timings"
            )


# --- the training step's own rate: timing/scale/step.{device}.json -----------------------------


@record(schema="scale-step", version=5)
class StepRate:
    """Training steps of features → hidden → 1 on in-memory batches: what the model could take in.
    On a GPU `copy` is the batch's host→device copy alone (pinned), each batch copied once. The drift
    sentinel is timed before and after."""

    device: str
    features: PositiveCount
    hidden: PositiveCount
    batch_size: PositiveCount
    threads: PositiveCount
    train: Rate  # samples per second
    copy: Rate | None  # bytes per second host → device; null on the CPU
    environment: Environment
    foreign_cpu_share: NonNegative | None  # other processes' CPU while the rates were timed, in cores
    sentinel: SentinelReadings


# --- tables/scale.json ---------------------------------------------------------------------------


@record
class Bottleneck:
    """One format, size and worker count on one device: the slowest stage of the streamed epoch."""

    format: Format
    target_gb: Positive
    file_bytes: PositiveCount
    workers: Count
    kind: Literal["processes", "threads"]
    device: str
    reader_samples_per_s: PositiveEstimate  # cold
    train_samples_per_s: Positive  # what the device takes in: its step's rate, or its copy's where slower
    stage: Literal["reader", "train", "copy"]
    slower_by: PositiveEstimate  # the other stage's rate over this one's
    decided: bool  # the interval of slower_by lies wholly above 1

    def __post_init__(self) -> None:
        if self.decided != (self.slower_by.low > 1):
            raise ValueError(f"decided {self.decided} with slower_by.low {self.slower_by.low}")

    def table_row(self) -> dict[str, Any]:
        """Return one row of tables/scale.csv: the fields, each estimate as its columns (records.estimate.columns)."""
        return flat_row(self, ("reader_samples_per_s", "slower_by"))


@record
class BusyPart:
    """A part of the study that shared the machine, and why; kept in every table and flagged."""

    job: str  # "parquet", "npy", "step cpu"
    target_gb: Positive | None  # the size; null: the whole job
    reasons: tuple[str, ...]


@record
class StorageScenario:
    """The scale scenario (planner.scenario) with the measured reader: each device's streamed epoch."""

    device: str
    compute_s: NonNegativeSeconds  # the cost model's epoch (the assumed GPU's where none was measured)
    copy_s: NonNegativeSeconds  # host → device of every row, 0 on the CPU
    storage_s: PositiveEstimate  # the scenario's bytes at the measured sustained reader rate
    epoch_s: Seconds  # the slowest of the three where the reader overlaps the step (workers), else their sum
    bound: Bound
    source: Literal["fitted", "assumed", "profile"]


@record(schema="scale", version=4)
class ScaleTable:
    """tables/scale.json: the streaming study summarised: bottlenecks, bends, the scenario with storage."""

    bottlenecks: tuple[Bottleneck, ...]
    best_format: Format
    best_workers: Count
    best_kind: Literal["processes", "threads"]
    sustained_gb_per_s: PositiveEstimate  # the best reader, cold, at the largest size: GB of the file per second
    largest_gb: Positive
    beyond_page_cache: bool  # the largest size did not fit in the page cache
    cache_drop: CacheDrop
    bend_gb: Positive | None  # the first size whose warm read no longer came from the page cache
    bend_by: Literal["storage", "timing"] | None  # seen in the bytes read from storage, or in timings only
    cold_verified: bool  # every cold pass read most of its files from storage (/proc/vmstat)
    host_memory_bytes: PositiveCount
    peak_rss_growth: NonNegative  # the largest format's growth: peak RSS at its largest size over the size before
    peak_rss_added_bytes: int  # ... and the largest rise in bytes (negative: it fell)
    scenario_bytes: PositiveCount
    scenario: tuple[StorageScenario, ...]
    fp16_storage_s: Seconds  # the same bytes halved (fp16 storage), at the measured rate
    workers_gain: Positive | None  # the best reader's rate over its rate with 0 workers (null: it has 0)
    busy: tuple[BusyPart, ...]  # sizes and jobs that shared the machine (empty: none did)
    foreign_cpu_limit: NonNegative  # the rules they were judged by (analyze.stats.NoiseRules)
    steal_limit: NonNegative
    sentinel_tolerance: Positive
