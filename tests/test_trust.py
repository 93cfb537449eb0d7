"""A run that was bad says so first (issue 25, item 5): the flagged timing jobs counted, a contaminated run's
measured outcomes undecided, the banner and the one command that re-measures only the flagged jobs."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from test_decision_report import (  # noqa: F401 - fixtures used by name
    GPU_PROBE,
    _gpu_case,
    _verdict,
    full_path_rows,
    load_table,
    train_records,
    train_table,
)

from accel_choice.analyze import aggregate, stats, trust
from accel_choice.analyze.sentinel import summarize_sentinels
from accel_choice.analyze.stats import NoiseRules
from accel_choice.records.decision import RunTrust, Verdict
from accel_choice.records.sentinel import SentinelReadings
from accel_choice.records.training import Contamination, TrainingTable
from accel_choice.render import decision as words
from accel_choice.render import noise
from builders_training import environment

WORKLOAD = "cpu: 64 x mm(256x256) fp32"


def _table(cells, speeds: dict[str, float]) -> TrainingTable:
    """A CPU training table whose sentinel timed one job per label at `speeds` (1.0: the run's speed)."""
    readings = [
        (
            label,
            SentinelReadings(
                workload=WORKLOAD, seconds=(0.01 * s,), median_s=0.01 * s, steal_share=0.0, cpu_mhz=None, governor=None
            ),
        )
        for label, s in speeds.items()
    ]
    return TrainingTable(
        table=tuple(cells),
        non_finite=(),
        sentinel=summarize_sentinels(readings, NoiseRules()),
        host_memory_bytes=None,
        environment=environment(),
    )


@pytest.fixture(scope="module")
def cells(request):
    from test_decision_report import EPOCHS, ROWS, _train_record

    records = [_train_record(b, loader, i, t) for (b, loader), runs in EPOCHS.items() for i, t in enumerate(runs)]
    return aggregate.aggregate_training(records, ROWS)


def _busy(cells, repeats):
    """The cells with their B=32 jobs of `repeats` beside other processes' CPU."""
    reason = ("other processes used 1.20 cores",)
    found = tuple(Contamination(repeat=r, reasons=reason) for r in repeats)
    return [dataclasses.replace(cell, contaminated=found) if cell.batch_size == 32 else cell for cell in cells]


LABELS = [f"rep{r}" for r in range(3)]  # three repeats: one CPU job each, every thread count


def test_a_quiet_run_has_no_flagged_job(cells):
    found = trust.run_trust([("cpu", _table(cells, dict.fromkeys(LABELS, 1.0)))], 0.25)
    assert found == RunTrust(jobs=3, flagged=(), limit=0.25, contaminated=False)
    assert noise.trust_banner(found) == "All 3 timing jobs ran clean (no job flagged)."


def test_flagged_jobs_are_counted_once_with_every_reason_and_their_records(cells):
    speeds = dict.fromkeys(LABELS, 1.0) | {"rep1": 1.6}  # the machine ran 1.6x slower in that job
    busy = [
        dataclasses.replace(cell, contaminated=(Contamination(repeat=1, reasons=("other processes used 1.20 cores",)),))
        if cell.batch_size == 32
        else cell
        for cell in cells
    ]
    found = trust.run_trust([("cpu", _table(busy, speeds))], 0.4)
    (job,) = found.flagged  # one job, both of its cells (loaders) and the sentinel naming it
    assert job.job == "rep1" and job.record == "results/timing/cpu/rep1.json"
    assert any("sentinel" in reason for reason in job.reasons)
    assert "other processes used 1.20 cores" in job.reasons
    assert not found.contaminated  # 1 of 3 is not more than 40 %
    assert noise.trust_banner(found).startswith("1 of 3 timing jobs were flagged (by the machine's speed (sentinel) 1")
    assert trust.run_trust([("cpu", _table(busy, speeds))], 0.25).contaminated  # but more than 25 %


def test_a_flagged_repeat_of_the_cpu_timed_beside_the_gpu_flags_its_gpu_job(cells):
    # A GPU table whose jobs also timed the CPU (TrainingTable.beside): a busy neighbour seen by the CPU's cell
    # in bs32.rep2 flags that GPU job, whose paired per-epoch speedup rests on it.
    gpu = [
        dataclasses.replace(cell, device="cuda", placement="streamed") for cell in cells if cell.loader == "fastpath"
    ]
    beside = [c for c in _busy(cells, [2]) if c.loader == "fastpath"]
    labels = [f"bs{b}.rep{r}" for b in sorted({c.batch_size for c in gpu}) for r in range(3)]
    table = dataclasses.replace(_table(gpu, dict.fromkeys(labels, 1.0)), beside=tuple(beside))
    (job,) = trust.run_trust([("gpu", table)], 0.25).flagged
    assert (job.table, job.job, job.reasons) == ("gpu", "bs32.rep2", ("other processes used 1.20 cores",))
    assert trust.run_trust([("gpu", dataclasses.replace(table, beside=()))], 0.25).flagged == ()


def test_a_run_with_more_flagged_jobs_than_allowed_is_contaminated_and_says_how_to_remeasure(cells):
    speeds = dict.fromkeys(LABELS, 1.0) | {"rep0": 2.0, "rep2": 0.5}
    found = trust.run_trust([("cpu", _table(cells, speeds))], 0.25)
    assert [j.job for j in found.flagged] == ["rep0", "rep2"] and found.contaminated
    command = trust.remeasure_command(found)
    assert command == (
        "snakemake --cores 4 --force results/timing/cpu/rep0.json results/timing/cpu/rep2.json && snakemake --cores 4"
    )
    # every job flagged (a busy machine throughout): the rule, re-run whole, instead of a line of every record
    everyone = trust.run_trust([("cpu", _table(_busy(cells, (0, 1, 2)), speeds))], 0.25)
    assert len(everyone.flagged) == everyone.jobs == 3
    assert trust.remeasure_command(everyone) == "snakemake --cores 4 --forcerun time_cpu_training"
    banner = noise.trust_banner(found)
    assert banner.startswith("**This run was contaminated: 2 of 3 timing jobs were flagged, over the 25% allowed")
    assert "(aggregate.bad_run_share). Its measured figures are unreliable.**" in banner and command not in banner
    assert noise.remeasure_line(found) == f"Re-measure the flagged jobs on a quiet machine: `{command}`"
    # the reasons, counted by kind, and what the contamination leaves undecided: under the flags, said once
    flags = noise.flags_section(cells, [], [], found, NoiseRules())
    assert "| the machine's speed (sentinel) | timing jobs | 2 of 3 | rep0, rep2 |" in flags
    assert "Every outcome resting on its timings is undecided: a measured speedup, the fastest CPU" in flags


def test_every_flag_of_a_busy_run_is_counted_in_one_table_by_reason(cells):
    # a busy run: 2 of 3 jobs at another machine speed, and two beside other processes' CPU;
    # the report folds the per-job and per-repeat lists into one row per reason (issue 27, item 1)
    speeds = dict.fromkeys(LABELS, 1.0) | {"rep0": 1.6, "rep2": 0.5}
    busy = _busy(cells, (0, 1))
    found = trust.run_trust([("cpu", _table(busy, speeds))], 0.25)
    text = noise.flags_section(busy, [], [], found, NoiseRules())
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| flag")]
    assert rows[:2] == [
        "| the machine's speed (sentinel) | timing jobs | 2 of 3 | rep0, rep2 |",
        "| other processes' CPU | timing jobs | 2 of 3 | rep0, rep1 |",
    ]
    assert "repeat 1: other processes" not in text  # no per-repeat list
    quiet = trust.run_trust([("cpu", _table(cells, dict.fromkeys(LABELS, 1.0)))], 0.25)
    clean = [dataclasses.replace(cell, noisy=False, noise_reasons=()) for cell in cells]
    assert "Nothing was flagged" in noise.flags_section(clean, [], [], quiet, NoiseRules())


def test_a_record_claiming_a_clean_run_with_too_many_flagged_jobs_is_refused():
    job = trust.FlaggedJob(table="cpu", job="rep0", record="results/timing/cpu/rep0.json", reasons=("x",))
    with pytest.raises(ValueError, match="contaminated False with 1 of 2 flagged"):
        RunTrust(jobs=2, flagged=(job,), limit=0.25, contaminated=False)


def test_a_contaminated_run_leaves_a_measured_speedup_undecided_and_says_so_first(cells, train_records, load_table):  # noqa: F811
    table, rows, _ = _gpu_case(train_records, load_table, "gpu_wins")
    clean = _verdict(table, rows, probe=GPU_PROBE)
    assert (clean.outcome, clean.reason) == ("GPU", "gpu_pays_off")
    speeds = dict.fromkeys(LABELS, 1.0) | {"rep0": 2.0, "rep2": 0.5}
    bad = trust.run_trust([("cpu", _table(cells, speeds))], 0.25)
    v = _verdict(table, rows, probe=GPU_PROBE, trust=bad)
    assert (v.device, v.outcome, v.reason) == ("CPU", "undecided", "run_contaminated")
    assert v.scaling is not None and v.scaling.growth == "undecided"
    said = words.headline(v)
    assert said.startswith("**This run was contaminated: 2 of 3 timing jobs were flagged")
    assert f"\n\n{noise.remeasure_line(bad)}\n\n**Verdict: CPU.** " in said  # the command, then the verdict
    assert ": undecided, the run was contaminated, so this speedup is not evidence." in said
    assert "(16× the samples): overhead or work, undecided." in said
    assert "- Fastest CPU configuration: undecided; by its point, fastpath B=512 on 1 thread" in said
    assert "Tied with it" not in said  # no ties in a contaminated run
    # the reasons below the decision sheet say the same, in full
    assert ": undecided, the run was contaminated (see above)." in words.reasons_section(v)
    assert "Which CPU configuration is fastest is undecided: the run was contaminated (see above); by its point" in (
        words.reasons_section(v)
    )
    with pytest.raises(ValueError, match="reason gpu_pays_off with a contaminated run"):
        dataclasses.replace(clean, trust=bad)
    # A clean run says so on the first screen too, under the verdict (issue 27 item 1)
    quiet = trust.run_trust([("cpu", _table(cells, dict.fromkeys(LABELS, 1.0)))], 0.25)
    said = words.headline(_verdict(table, rows, probe=GPU_PROBE, trust=quiet))
    assert said.startswith("**Verdict: GPU.**") and said.endswith("\n\nAll 3 timing jobs ran clean (no job flagged).")
    # with the noise floor as a line of its own under the verdict (its section says what it rests on)
    floor = _verdict(table, rows, probe=GPU_PROBE, trust=quiet).noise_floor
    assert (
        (f"\n- Noise floor ±{floor:.1%}: smaller differences are not evidence.\n" in said)
        if floor is not None
        else ("\n- No noise floor could be stated: every small difference is unproven.\n" in said)
    )
    # a run with a flagged job says so above the verdict
    one = trust.run_trust([("cpu", _table(cells, dict.fromkeys(LABELS, 1.0) | {"rep0": 2.0}))], 0.4)
    assert len(one.flagged) == 1 and not one.contaminated
    said = words.headline(dataclasses.replace(_verdict(table, rows, probe=GPU_PROBE, trust=one), noise_floor=0.05))
    assert said.startswith("1 of 3 timing jobs were flagged (by the machine's speed (sentinel) 1): kept in the tables")
    assert "- Noise floor ±5.0%: smaller differences are not evidence." in said
    none = dataclasses.replace(_verdict(table, rows, probe=GPU_PROBE, trust=quiet), noise_floor=None)
    assert "- No noise floor could be stated: every small difference is unproven." in words.headline(none)


def test_without_a_gpu_a_contaminated_run_keeps_its_cpu_verdict_and_says_its_figures_are_unreliable(
    cells,
    train_table,  # noqa: F811
    full_path_rows,  # noqa: F811
):
    speeds = dict(zip(LABELS, (0.5, 1.0, 2.0)))  # two jobs far from the run's median speed, every one busy
    bad = trust.run_trust([("cpu", _table(_busy(cells, (0, 1, 2)), speeds))], 0.25)
    v = _verdict(train_table, full_path_rows, trust=bad)
    assert (v.device, v.outcome, v.reason) == ("CPU", "CPU", "no_gpu_visible")
    assert len(bad.flagged) == 3 and bad.contaminated
    assert isinstance(v, Verdict) and "Its measured figures are unreliable.**" in words.headline(v)
    assert "--forcerun time_cpu_training`" in words.headline(v)  # every job flagged: the rule, re-run whole


def test_a_run_ends_by_saying_its_verdict_its_trust_and_where_the_report_is(cells, train_table, full_path_rows):  # noqa: F811
    from accel_choice.records.decision import Decision
    from accel_choice.render.run_end import end_of_run

    speeds = dict.fromkeys(LABELS, 1.0) | {"rep0": 2.0, "rep2": 0.5}
    verdict = _verdict(train_table, full_path_rows, trust=trust.run_trust([("cpu", _table(cells, speeds))], 0.25))
    decided = Decision(
        verdict=verdict, sheet=(), full_path=tuple(full_path_rows), gpu_memory=(), environment=environment()
    )
    lines = end_of_run(decided, "results").splitlines()
    assert lines[0].startswith("accel-choice verdict: CPU. No CUDA device was visible")  # the outcome said once
    assert lines[1].startswith("This run was contaminated: 2 of 3 timing jobs were flagged") and "**" not in lines[1]
    assert lines[1].endswith(
        " Re-measure the flagged jobs on a quiet machine: `snakemake --cores 4 --force "
        "results/timing/cpu/rep0.json results/timing/cpu/rep2.json && snakemake --cores 4`"
    )
    assert (
        lines[2]
        == "Report: results/REPORT.md (tables in results/tables/, the decision figure results/figures/decision.png)."
    )
    assert lines[3] == "Check the archive later: .venv/bin/accel-choice verify results"


def test_a_timing_job_names_what_it_saw_of_other_work_as_it_finishes(caplog: pytest.LogCaptureFixture) -> None:
    # issue 27 item 4: a contaminated job logs a WARNING with its reason as it finishes (the run-wide
    # sentinel comparison waits for aggregation); these are the reasons it logs
    from types import SimpleNamespace

    def job(foreign, rise, threads=1):
        return SimpleNamespace(
            foreign_cpu_share=foreign, loadavg_before=(0.5,), loadavg_after=(0.5 + rise,), threads=threads
        )

    def readings(*seconds, steal=0.0):
        return SentinelReadings(
            workload=WORKLOAD,
            seconds=seconds,
            median_s=sorted(seconds)[len(seconds) // 2],
            steal_share=steal,
            cpu_mhz=None,
            governor=None,
        )

    rules = NoiseRules()
    assert stats.job_warnings([job(0.01, 0.1), job(0.02, 0.0)], readings(0.010, 0.011, 0.0105), rules) == []
    said = stats.job_warnings([job(1.20, 0.0), job(1.20, 0.0)], readings(0.010, 0.016, 0.011, steal=0.3), rules)
    assert said == [
        "other processes used 1.20 cores during the job (> 0.25)",  # once, though both records saw it
        "the hypervisor stole 0.30 cores during the job (> 0.1)",
        "its sentinel readings moved 1.60x within the job (> 1.25x)",
    ]
    # a 2-thread job may raise the load by 1 more than a 1-thread job: 1.4 is within its 0.5 + 1
    assert stats.job_warnings([job(0.0, 1.4, threads=2)], None, rules) == []
    assert stats.job_warnings([job(0.0, 1.6, threads=2)], None, rules) == ["1-min load average rose by 1.60 (> 1.5)"]
    # The timing scripts log each reason as one WARNING line
    log = logging.getLogger("accel_choice.test_job_warnings")
    with caplog.at_level(logging.INFO, logger=log.name):
        stats.log_job_warnings(log, [job(1.20, 0.0)], None, rules)
        stats.log_job_warnings(log, [job(0.01, 0.0)], None, rules)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            "this timing job may have measured the machine, not the code: other processes used 1.20 cores "
            "during the job (> 0.25)",
        )
    ]


def test_a_training_job_logs_its_warnings_then_a_line_per_variant(caplog):
    from builders_training import training_record

    log = logging.getLogger("accel_choice.test_training_job_log")
    records = [
        training_record(epoch_s=0.02, foreign_cpu_share=1.2),
        training_record(loader="dataloader", finite=False, epoch_s=0.03),
    ]
    with caplog.at_level(logging.INFO, logger=log.name):
        stats.log_training_job(log, records, None, NoiseRules())
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            "this timing job may have measured the machine, not the code: other processes used 1.20 cores "
            "during the job (> 0.25)",
        ),
        ("INFO", "cpu fastpath 1 thread B=32: epoch 20.00 ms, 102400 samples/s, eval 5.00 ms"),
        ("INFO", "cpu dataloader 1 thread B=32: epoch 30.00 ms, 68267 samples/s, eval 5.00 ms, not finite from step 3"),
    ]
