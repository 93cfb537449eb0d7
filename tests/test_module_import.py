"""The workflow imported into another project as a Snakemake module (docs/development.md#use-it-as-a-module).

Its library, schema, rules' scripts and environments are found from this checkout, not from the
importing project's folder (workflow.basedir there), and its jobs are those of a plain run; one of them
runs there. The time-budget test imports the module from the shared finished run's own checkout instead,
so that only what the budget adds runs (docs/development.md#use-it-as-a-module).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from workflow_runs import REPO, TINY, copy_of, planned_jobs, seeded, snakemake

pytestmark = pytest.mark.workflow

# Another project's Snakefile, as docs/development.md shows it: its own config file, handed to the module.
IMPORTER = """\
configfile: "{configfile}"


module accel_choice:
    snakefile:
        "{snakefile}"
    config:
        config


use rule * from accel_choice{renamed}
"""


def _project(folder: Path, renamed: str) -> Path:
    """A project folder that imports this checkout's Snakefile as a module, on the tiny config."""
    (folder / "config").mkdir(parents=True)
    (folder / "config/config.yaml").write_text(yaml.safe_dump(TINY))
    (folder / "Snakefile").write_text(
        IMPORTER.format(configfile="config/config.yaml", snakefile=REPO / "Snakefile", renamed=renamed)
    )
    return seeded(folder)


def _dry_run(project: Path, *args: str, dry: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            *(["-n"] if dry else []),
            "--cores",
            "4",
            "--directory",
            str(project),
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=project,
        timeout=300,
    )


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    """The jobs of a dry run of this checkout's Snakefile on the tiny config."""
    return planned_jobs(snakemake(seeded(tmp_path_factory.mktemp("plain")), TINY, "-n"))


@pytest.mark.parametrize("prefix", ["accel_choice_", ""], ids=["renamed", "as is"])
def test_imported_as_a_module_it_plans_the_jobs_of_a_plain_run(
    tmp_path: Path, plain: dict[str, int], prefix: str
) -> None:
    project = _project(tmp_path / "project", f" as {prefix}*" if prefix else "")
    result = _dry_run(project)
    output = result.stdout + result.stderr
    imported = planned_jobs(result)
    assert all(rule.startswith(prefix) for rule in imported), imported
    assert {rule.removeprefix(prefix): count for rule, count in imported.items()} == plain
    # Its jobs' code inputs are this checkout's library, not the project's folder.
    assert os.path.relpath(REPO / "workflow/scripts/accel_choice/__init__.py", project) in output
    assert not (project / "results").exists()
    # And a job runs there: its script and this checkout's library are found from the project's folder.
    ran = _dry_run(project, "results/config.yaml", dry=False)
    assert ran.returncode == 0, (ran.stdout + ran.stderr)[-3000:]
    assert yaml.safe_load((project / "results/config.yaml").read_text())["seed"] == TINY["seed"]


def test_a_bad_config_handed_to_the_module_fails_naming_the_key(tmp_path: Path) -> None:
    project = _project(tmp_path / "project", " as accel_choice_*")
    config = yaml.safe_load((project / "config/config.yaml").read_text())
    config["timing"]["repeats"] = 1
    (project / "config/config.yaml").write_text(yaml.safe_dump(config))
    result = _dry_run(project)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "config key timing.repeats: 1 is less than the minimum of 3" in output, output[-2000:]
    assert "Job stats" not in output


def test_a_time_budget_adds_jobs_where_the_first_screen_is_close(tmp_path: Path, pristine: Path) -> None:
    """timing.budget_s, the module's rules renamed: the first round weighs three jobs and adds one, the second stops
    at the budget. The added jobs' rules are found after the module was read; the report, the archive and the
    resource table show the added jobs, and a second run has nothing to do.

    The module is imported from a copy of the shared finished run's own checkout, over its results: its jobs and
    code inputs are the plain run's (nothing to do before the budget), so only the plan and what reads it run."""
    from accel_choice import records
    from accel_choice.analyze.resources import read_benchmark
    from accel_choice.records.timing_plan import TimingPlan
    from accel_choice.records.training import TrainingTable

    project = copy_of(pristine, tmp_path / "run")
    importer = ("--snakefile", "importer.smk")
    (project / "importer.smk").write_text(
        IMPORTER.format(configfile="budget.yaml", snakefile="Snakefile", renamed=" as accel_choice_*")
    )
    config = yaml.safe_load((project / "test-config.yaml").read_text())
    (project / "budget.yaml").write_text(yaml.safe_dump(config))
    assert "Nothing to be done" in _dry_run(project, *importer).stdout
    walls = [read_benchmark(path)["process_wall_s"] for path in project.glob("results/benchmarks/time_cpu_training/*")]
    assert len(walls) == TINY["timing"]["repeats"]
    # Room for one more job and not two (a target no interval reaches keeps the rule adding).
    config["timing"].update(budget_s=sum(walls) + 1.2 * sum(walls) / len(walls), target=0.001)
    (project / "budget.yaml").write_text(yaml.safe_dump(config))
    result = _dry_run(project, *importer, dry=False)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    results = project / "results"
    plans = [records.read(TimingPlan, results / f"timing/plan/round{r}.json") for r in (0, 1)]
    assert [(p.jobs, p.decision) for p in plans] == [(3, "add"), (4, "budget_spent")]
    assert {c.repeats for c in records.read(TrainingTable, results / "tables/cpu_training.json").table} == {4}
    assert "CPU training jobs: 4 (3 planned, 1 added)." in (results / "REPORT.md").read_text()
    manifest = (results / "MANIFEST.sha256").read_text()
    assert "timing/cpu/rep3.json" in manifest and "timing/plan/round1.json" in manifest
    assert "time_cpu_training/rep3" in (results / "tables/resources_per_job.csv").read_text()
    assert "Nothing to be done" in _dry_run(project, *importer).stdout
    # A smaller budget re-runs the rounds: the job it no longer wants stays in results/, out of the manifest.
    config["timing"]["budget_s"] = sum(walls) / 2
    (project / "budget.yaml").write_text(yaml.safe_dump(config))
    assert _dry_run(project, *importer, dry=False).returncode == 0
    assert records.read(TimingPlan, results / "timing/plan/round0.json").decision == "budget_spent"
    assert {c.repeats for c in records.read(TrainingTable, results / "tables/cpu_training.json").table} == {3}
    assert (results / "timing/cpu/rep3.json").exists()
    assert "timing/cpu/rep3.json" not in (results / "MANIFEST.sha256").read_text()
