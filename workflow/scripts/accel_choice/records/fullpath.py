"""tables' full path per epoch (analyze.fullpath): one row per file format and training variant, the
load, conversion, copies, training and evaluation added up, with its one-off costs per job."""

from __future__ import annotations

import math

from accel_choice.records import NonNegativeSeconds, Positive, Seconds, ordered, record
from accel_choice.records.training import Variant


@record
class FullPathRow(Variant):
    """One epoch's full path for one file format and training variant (sums of medians).

    load + convert + transfer + train + eval = total; total_min/max add the spread of training,
    evaluation and the copies to the load medians; startup_s is the process's one-off start-up (on
    a GPU the context and first-step costs). What a longer job repeats every epoch is per_epoch_s
    (train + eval, streamed copies inside train); what it pays once is one_off_s (load, convert,
    the resident and prediction copies, start-up). `one_off_s_jobs` are the one-off costs of each of the
    training cell's jobs, from raw times: its own start-up plus the load, conversion and copies of the
    data-path jobs of the same repeat (analyze.fullpath.one_off_jobs), so an interval over the jobs carries
    their spread too.
    """

    format: str
    load_s: NonNegativeSeconds
    convert_s: NonNegativeSeconds
    transfer_s: NonNegativeSeconds
    train_s: Seconds
    eval_s: Seconds
    total_s: Seconds
    total_min_s: Seconds
    total_max_s: Seconds
    startup_s: NonNegativeSeconds
    total_with_startup_s: Seconds
    per_epoch_s: Seconds
    one_off_s: NonNegativeSeconds
    one_off_s_jobs: tuple[NonNegativeSeconds, ...]  # one per job of the training cell, in repeat order
    train_share: Positive
    noisy: bool

    def __post_init__(self) -> None:
        ordered(self.total_min_s, self.total_s, self.total_max_s, "total_min_s total_s total_max_s")
        if not self.one_off_s_jobs:
            raise ValueError("one_off_s_jobs is empty: a full path of no timing job")
        parts = {
            "total_with_startup_s": (self.total_with_startup_s, self.total_s + self.startup_s),
            "per_epoch_s": (self.per_epoch_s, self.train_s + self.eval_s),
            "one_off_s": (self.one_off_s, self.load_s + self.convert_s + self.transfer_s + self.startup_s),
        }
        for name, (value, expected) in parts.items():
            if not math.isclose(value, expected, rel_tol=1e-9, abs_tol=1e-12):
                raise ValueError(f"{name} {value!r} is not the sum of its parts ({expected!r})")
