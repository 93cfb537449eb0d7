"""What each job cost: Snakemake's `benchmark:` sample of the whole process beside the job's own
timing of its script body (the last line of its log), per job and per rule.

Memory is in MiB (Snakemake's max_rss and getrusage's peak both, whatever the "mb" in the names);
null where a value was not taken (NA in the benchmark file, no body line in a failed job's log).
"""

from __future__ import annotations

from accel_choice.records import Count, NonNegative, NonNegativeSeconds, PositiveCount, record
from accel_choice.records.environment import Environment


@record
class JobResources:
    """One benchmarked job: the process as Snakemake sampled it, and the body as the job timed it."""

    rule: str
    job: str
    process_wall_s: NonNegativeSeconds | None
    max_rss_mb: NonNegative | None
    process_cpu_s: NonNegativeSeconds | None
    mean_load: NonNegative | None
    body_wall_s: NonNegativeSeconds | None
    body_cpu_s: NonNegativeSeconds | None
    peak_rss_mb: NonNegative | None
    outside_body_s: float | None  # process wall - body wall; null unless both are known
    rss_sampled: bool  # the benchmark took a memory sample above 0

    def __post_init__(self) -> None:
        known = self.process_wall_s is not None and self.body_wall_s is not None
        if known != (self.outside_body_s is not None):
            raise ValueError(
                f"outside_body_s is {self.outside_body_s!r} with process_wall_s {self.process_wall_s!r} "
                f"and body_wall_s {self.body_wall_s!r}"
            )
        if self.rss_sampled != (self.max_rss_mb is not None and self.max_rss_mb > 0):
            raise ValueError(f"rss_sampled is {self.rss_sampled} with max_rss_mb {self.max_rss_mb!r}")


@record
class RuleResources:
    """One rule's jobs together: count, summed and median wall times, the memory seen."""

    rule: str
    jobs: PositiveCount
    process_wall_total_s: NonNegativeSeconds
    process_wall_median_s: NonNegativeSeconds | None
    body_wall_median_s: NonNegativeSeconds | None
    outside_body_median_s: float | None
    max_rss_mb_sampled: NonNegative | None
    jobs_without_rss_sample: Count
    peak_rss_mb_kernel: NonNegative | None

    def __post_init__(self) -> None:
        if self.jobs_without_rss_sample > self.jobs:
            raise ValueError(f"{self.jobs_without_rss_sample} jobs without an RSS sample of {self.jobs}")


@record(schema="resource-table", version=3)
class ResourceTable:
    """tables/resources.json: one line per rule (first-seen order) and one per benchmarked job."""

    rules: tuple[RuleResources, ...]
    jobs: tuple[JobResources, ...]
    environment: Environment

    def __post_init__(self) -> None:
        counted = sum(rule.jobs for rule in self.rules)
        if counted != len(self.jobs):
            raise ValueError(f"the rules count {counted} jobs, the table lists {len(self.jobs)}")
        names = [rule.rule for rule in self.rules]
        if len(set(names)) != len(names):
            raise ValueError(f"a rule is summarised twice: {names}")
