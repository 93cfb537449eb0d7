"""Records vouched for by their job's log (records/ledger.py): a record changed after its job is refused."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from accel_choice import records
from accel_choice.io import atomic, runtime
from accel_choice.records import RecordError
from accel_choice.records.environment import EnvironmentReport
from builders_training import environment, environment_report


@pytest.fixture()
def written(tmp_path, restore_logging_and_threads):
    """results/env/report.json written by a job that logs to results/logs/env.log; the record and its log."""
    record, log = tmp_path / "results" / "env" / "report.json", tmp_path / "results" / "logs" / "env.log"
    log.parent.mkdir(parents=True)
    with runtime.job(log, threads=1):
        atomic.write_record(record, environment_report())
        assert records.read(EnvironmentReport, record) == environment_report()  # the job reads its own
    return record, log


def test_a_job_names_its_log_in_the_record_and_vouches_for_the_bytes_in_it(written):
    record, log = written
    data = json.loads(record.read_text())
    assert list(data)[:3] == ["schema", "schema_version", "log"] and data["log"] == "../logs/env.log"
    assert records.ledger.line(record, log, record.read_bytes()) in log.read_text()
    assert "record written: ../env/report.json sha256 " in log.read_text()
    assert records.read(EnvironmentReport, record) == environment_report()


def test_a_value_edited_by_hand_is_refused_naming_the_file_and_the_log(written):
    record, log = written
    edited = record.read_text().replace('"python_version": "3.12.1"', '"python_version": "3.12.2"')
    assert edited != record.read_text()
    record.write_text(edited)
    with pytest.raises(RecordError) as refused:
        records.read(EnvironmentReport, record)  # outside a job too: the record names its log
    message = str(refused.value)
    assert message.startswith(f"{record}: its bytes (sha256 ")
    assert "are not what its job wrote (sha256 " in message and str(log) in message
    assert message.endswith(
        "measure it again: delete it and re-run the workflow (snakemake --cores 4 makes it again, from its job)"
    )


def test_a_record_without_its_log_key_is_refused_inside_a_job_only(written, tmp_path):
    record, _ = written
    data = json.loads(record.read_text())
    del data["log"]
    record.write_text(json.dumps(data))
    assert records.read(EnvironmentReport, record) == environment_report()  # built by hand, read in a test
    with runtime.job(tmp_path / "reader.log", threads=1):
        with pytest.raises(RecordError, match="names no job log that vouches for it"):
            records.read(EnvironmentReport, record)
    assert records.read(EnvironmentReport, record) == environment_report()  # the job's rule ends with it


@pytest.mark.parametrize("damage", ["deleted", "other line"])
def test_a_log_that_does_not_vouch_for_the_record_is_refused(written, damage):
    record, log = written
    if damage == "deleted":
        log.unlink()
    else:
        log.write_text(
            log.read_text().replace("record written: ../env/report.json", "record written: ../env/other.json")
        )
    says = "cannot be read" if damage == "deleted" else "has no line for it"
    with pytest.raises(RecordError, match=f"its job's log .*env.log {'.*' if damage == 'deleted' else ''}{says}"):
        records.read(EnvironmentReport, record)


def test_a_results_folder_copied_elsewhere_still_reads(written, tmp_path):
    record, _ = written
    copy = shutil.copytree(tmp_path / "results", tmp_path / "archive" / "run1")
    assert records.read(EnvironmentReport, copy / "env" / "report.json") == environment_report()


def test_a_record_copied_over_by_another_jobs_record_is_refused(written, tmp_path, restore_logging_and_threads):
    record, _ = written
    other = tmp_path / "elsewhere" / "report.json"
    with runtime.job(tmp_path / "other.log", threads=1):
        atomic.write_record(other, environment_report(environment(python_version="3.12.9")))  # another run's
    data = json.loads(other.read_text())
    data["log"] = json.loads(record.read_text())["log"]  # the same content, claiming the first job's log
    record.write_text(json.dumps(data, indent=2) + "\n")
    with pytest.raises(RecordError, match="are not what its job wrote"):
        records.read(EnvironmentReport, record)


# --- a record that does not add up is refused wherever it was written -------------------------


def _job(**changes):
    from builders_training import training_record

    from accel_choice.records.training_job import TrainingJob
    from builders_planner import sentinel_readings

    fields = dict(
        records=(training_record(epoch_s=0.2, epoch_cpu_s=0.19),),
        wall_interval=(1000.0, 1001.0),
        environment=environment(logical_cores=2, affinity_cores=2),
        sentinel=sentinel_readings(),
    )
    return TrainingJob(**(fields | changes))


def test_the_issues_hand_edit_does_not_add_up_even_without_its_log():
    """Epochs divided by 10, their CPU time left as measured: more CPU time than the cores give in the edited epoch.
    (A record stores the raw epochs once: no median or throughput beside them is left to disagree. So without its
    log, such an edit shows only where the CPU time outruns the cores: a 1-thread job on many cores would pass; the
    log, records.ledger, catches it there.)"""
    from builders_training import training_record

    from accel_choice.records.training_job import TrainingJob

    measured = records.to_json(_job(records=(training_record(epoch_s=0.2, epoch_cpu_s=0.19),)))
    measured["records"][0]["epoch_s_each"] = [0.02]
    with pytest.raises(
        RecordError, match=r"epoch_cpu_s 0\.19 is more CPU time than 2 core\(s\) give in its wall epoch_s 0\.02"
    ):
        records.from_json(TrainingJob, measured, "t1.rep0.json")


def test_a_job_whose_epochs_outlast_its_wall_interval_or_whose_cpu_outruns_its_cores_is_refused():
    from builders_training import training_record

    _job()  # as measured
    with pytest.raises(ValueError, match=r"add up to 2\.205 s, more than the job's wall interval \(1 s\)"):
        _job(records=(training_record(epoch_s=2.2),))
    with pytest.raises(
        ValueError, match=r"epoch_cpu_s 0\.5 is more CPU time than 2 core\(s\) give in its wall epoch_s 0\.2"
    ):
        _job(records=(training_record(epoch_s=0.2, epoch_cpu_s=0.5),))
    _job(records=(training_record(epoch_s=0.2, epoch_cpu_s=0.39),))  # two cores busy: possible


def test_a_job_is_one_process_every_thread_count_and_batch_size_each_variant_once():
    """A CPU job times every thread count and batch size of one repeat; records of two jobs in one file are refused."""
    from builders_training import training_record

    assert [r.batch_size for r in _job(records=(training_record(), training_record(batch_size=64))).records] == [32, 64]
    both = _job(records=(training_record(), training_record(batch_size=64, threads=2))).records
    assert [(r.batch_size, r.threads) for r in both] == [(32, 1), (64, 2)]
    with pytest.raises(ValueError, match="one job's records share a device and repeat"):
        _job(records=(training_record(), training_record(repeat=1)))
    with pytest.raises(ValueError, match="each variant once"):
        _job(records=(training_record(), training_record()))


def _version_before(written: dict, version: int) -> dict:
    """A job file as the version before raw times were stored once wrote it: each record's medians, throughput and
    throughput invariant beside its raw times."""
    import statistics

    older = json.loads(json.dumps(written)) | {"schema_version": version}
    for r in older["records"]:
        epoch = statistics.median(r["epoch_s_each"])
        r |= {"epoch_s": epoch, "eval_s": statistics.median(r["eval_s_each"]), "samples_per_s": r["samples"] / epoch}
        r["invariants"]["samples_per_s_eq_samples_over_epoch_s"] = True
    return older


@pytest.mark.parametrize("kind", ["training", "grid"])
def test_an_archived_job_of_the_version_before_is_read_and_one_that_does_not_add_up_is_named(kind):
    """training-job 12 and planner-grid-job 7 stored a median and a throughput beside the raw times: an archived run
    stays readable (records.upgrades, training-job 12 through 13), and a file whose stored median is not its raw
    times' is refused."""
    from builders_planner import grid_job
    from builders_training import training_record

    job = _job(records=(training_record(epoch_s=0.2, epoch_cpu_s=0.19, epoch_s_each=(0.2, 0.3, 0.1)),))
    job = job if kind == "training" else grid_job()
    before = 12 if kind == "training" else 7  # training-job 13 only let a job hold one count
    older = _version_before(records.to_json(job), before)
    assert records.from_json(type(job), older, "rep0.json") == job
    older["records"][0]["epoch_s"] *= 0.5  # the hand edit of issue 28, on the older version
    with pytest.raises(
        RecordError, match=r"rep0\.json: .* version \d+: records\[0\]\.epoch_s [\d.]+ is not the median"
    ):
        records.from_json(type(job), older, "rep0.json")
    older["records"][0]["epoch_s_each"] = "0.2"  # raw times that are no list of times: named, no traceback
    with pytest.raises(RecordError, match=r"records\[0\]: its raw times and samples cannot be read"):
        records.from_json(type(job), older, "rep0.json")
    older["schema_version"] -= 1  # one version further back: no upgrade, refused as before
    with pytest.raises(RecordError, match="this workflow reads"):
        records.from_json(type(job), older, "rep0.json")


@pytest.mark.parametrize("kind", ["training", "grid", "table"])
def test_a_file_from_before_the_rehearsal_reads_as_none_rehearsed(kind):
    """training-job 15, planner-grid-job 8 and training-table 12 timed every epoch cold (measure.rehearsal):
    each record and cell is read with rehearsal_steps 0; a file whose records are no list is named."""
    from builders_planner import grid_job
    from builders_training import training_cell, training_record

    from accel_choice.analyze.sentinel import summarize_sentinels
    from accel_choice.analyze.stats import NoiseRules
    from accel_choice.records.training import TrainingTable

    if kind == "table":
        current = TrainingTable(
            table=(training_cell(), training_cell(batch_size=64)),
            non_finite=(),
            sentinel=summarize_sentinels([("rep0", grid_job().sentinel)], NoiseRules()),
            host_memory_bytes=None,
            environment=environment(),
        )
        items = "table"
    else:
        current = _job(records=(training_record(),)) if kind == "training" else grid_job()
        items = "records"
    older = records.to_json(current) | {"schema_version": type(current).VERSION - 1}
    for item in older[items]:
        del item["rehearsal_steps"]
    read = records.from_json(type(current), older, "old.json")
    assert [item.rehearsal_steps for item in getattr(read, items)] == [0] * len(older[items])
    assert read == dataclasses.replace(
        current, **{items: tuple(dataclasses.replace(item, rehearsal_steps=0) for item in getattr(current, items))}
    )
    older[items] = "not a list"
    with pytest.raises(RecordError, match=f"{items}: a list of records or cells"):
        records.from_json(type(current), older, "old.json")


def test_a_job_of_one_thread_count_from_version_13_is_read_as_it_was():
    """training-job 13 held one thread count a job: a job of version 14 may, so its fields are read unchanged."""
    from builders_training import training_record

    job = _job(records=(training_record(threads=2), training_record(threads=2, batch_size=64)))
    older = records.to_json(job) | {"schema_version": 13}
    assert records.from_json(type(job), older, "t2.rep0.json") == job
