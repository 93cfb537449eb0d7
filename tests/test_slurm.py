"""The workflow on a real Slurm: profiles/slurm through snakemake-executor-plugin-slurm.

A single-node cluster (tests/slurm/cluster.py: munged, MariaDB, slurmdbd, slurmctld, slurmd from
Debian's packages, on 127.0.0.1, as root) runs the tiny config of tests/test_workflow.py (one batch
size) with `--executor slurm --workflow-profile profiles/slurm`, and beside it one GPU job with
`accelerator: require` on the node's fake GPU. On 2 cores: bring-up 3-8 s, the runs ~3.5 min
(each Slurm job ~10 s, the timing jobs one at a time on the one node).

Skipped where it cannot run (not root, Slurm packages or the plugin missing), except in CI
(CI=true; .ci/run installs the packages), where that is a failure. Every step has a time limit,
so a fault fails instead of hanging, and every daemon is stopped by its PID, also on failure.

`python -m pytest -m slurm -s tests/test_slurm.py` prints the bring-up and run times and the
job list (node, partition, CPUs and GPU of each job).
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import test_workflow
import yaml
from test_workflow import planned_jobs

sys.path.insert(0, str(Path(__file__).resolve().parent / "slurm"))
from cluster import APT_PACKAGES, ClusterError, SlurmCluster, clean_env, foreign_config, missing_tools  # noqa: E402

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "profiles" / "slurm"
IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}
# The tiny config of tests/test_workflow.py, narrowed to one batch size and one file format:
# a Slurm job costs ~10 s here whatever it does (three Python start-ups: the job's Snakemake, the
# job step's Snakemake, the script), and on one node the timing jobs run one after another.
# accelerator stays auto: no GPU here, so no GPU jobs, and the run must pass.
TINY = copy.deepcopy(test_workflow.TINY)
TINY["timing"].update(batch_sizes=[16], formats=["parquet"])
TINY["selection"] = {
    **TINY.get("selection", {}),
    "batch_sizes": [16],
    "max_epochs": 30,
    "seeds": 3,
    "seed_batch_size": 16,
}
TINY["gradient_variance"] = {"batch_sizes": [1, 16], "draws": 200}


def timing_rules() -> set[str]:
    """Rules that take the whole timing_slot (timing_slot=TIMING_JOB) in workflow/rules/*.smk."""
    rules = set()
    for path in (REPO / "workflow" / "rules").glob("*.smk"):
        for block in re.split(r"^rule ", path.read_text(), flags=re.MULTILINE)[1:]:
            if re.search(r"^\s+timing_slot=TIMING_JOB", block, flags=re.MULTILINE):
                rules.add(block.split(":", 1)[0].strip())
    return rules


TIMING_RULES = timing_rules()
# A guard against a hung run, not a speed test: on the 2-core CI machine the tiny run through Slurm
# took 572.7 s for its 31 jobs on 2026-12-01, the GPU request beside it (each job parses the
# workflow twice, in the job step and in the job, and takes 15-25 s).
RUN_TIMEOUT_S = 900
GPU_TARGET = "results/timing/gpu/transfer.rep0.json"
SACCT_FIELDS = (
    "JobID",
    "Comment",
    "Partition",
    "NodeList",
    "AllocCPUS",
    "ReqTRES",
    "AllocTRES",
    "State",
    "Start",
    "End",
)


def why_not_here() -> str | None:
    if sys.platform != "linux" or os.geteuid() != 0:
        return "a test cluster needs root on Linux"
    if missing := missing_tools():
        return f"Slurm is not installed ({', '.join(missing)} missing; apt-get install {' '.join(APT_PACKAGES)})"
    if found := foreign_config():
        return f"{found} belongs to a real Slurm installation; the test cluster does not touch it"
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        return "snakemake-executor-plugin-slurm is not installed (pip install -r envs/requirements.txt)"
    return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    if reason := why_not_here():
        if IN_CI:
            pytest.fail(f"CI must run the Slurm test: {reason}")
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start(timeout=120)
    except ClusterError as error:
        pytest.fail(f"the test cluster did not start: {error}\n{cluster.logs()}")
    yield cluster
    cluster.stop()
    assert cluster.alive() == [], f"daemons still running after stop: {cluster.alive()}"


class Run:
    """One `snakemake --executor slurm --workflow-profile profiles/slurm` in the background."""

    def __init__(self, workdir: Path, config: dict, *args: str) -> None:
        self.workdir = workdir
        config_path = workdir / "test-config.yaml"
        config_path.write_text(yaml.safe_dump(config))
        self.log = workdir / "snakemake-slurm.log"
        command = [
            sys.executable,
            "-m",
            "snakemake",
            *args,
            "--snakefile",
            str(REPO / "Snakefile"),
            "--directory",
            str(workdir),
            "--configfile",
            str(config_path),
            "--executor",
            "slurm",
            "--workflow-profile",
            str(PROFILE),
            # First status check 2 s after a submission instead of the profile's 20.
            "--slurm-init-seconds-before-status-checks",
            "2",
        ]
        self.started = time.monotonic()
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir, env=clean_env()
            )

    def wait(self, deadline: float) -> None:
        try:
            self.proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.proc.kill()  # its Slurm jobs are cancelled when the cluster stops
            self.proc.wait(timeout=30)
            pytest.fail(f"snakemake --executor slurm ran past its time limit:\n{self.log.read_text()[-6000:]}")
        self.seconds = time.monotonic() - self.started
        self.returncode = self.proc.returncode
        self.output = self.log.read_text()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    @property
    def job_ids(self) -> list[str]:
        return re.findall(r"submitted with SLURM jobid (\d+)", self.log.read_text())


def plan(workdir: Path, config: dict, *targets: str) -> dict[str, int]:
    """Rule -> job count Snakemake plans (a local dry run); `all` is a target rule Snakemake does itself."""
    config_path = workdir / "plan-config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            *targets,
            "--snakefile",
            str(REPO / "Snakefile"),
            "--directory",
            str(workdir),
            "--configfile",
            str(config_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=workdir,
        env=clean_env(),
    )
    counts = planned_jobs(result)
    counts.pop("all", None)
    return counts


def count_rules(rows: list[dict[str, str]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["rule"]] = counts.get(row["rule"], 0) + 1
    return counts


def sacct(cluster: SlurmCluster, job_ids: list[str]) -> list[dict[str, str]]:
    """One row per job (allocation only, no steps), from the accounting database."""
    out = cluster.run("sacct", "-X", "-P", "-n", "-j", ",".join(job_ids), "-o", ",".join(SACCT_FIELDS)).stdout
    rows = [dict(zip(SACCT_FIELDS, line.split("|"))) for line in out.splitlines() if line.strip()]
    for row in rows:
        match = re.match(r"rule_(\w+?)(?:_wildcards_(.*))?$", row["Comment"])
        row["rule"], row["wildcards"] = (match.group(1), match.group(2) or "") if match else ("?", "")
    return rows


def gpus(row: dict[str, str], field: str = "AllocTRES") -> int:
    match = re.search(r"gres/gpu=(\d+)", row[field])
    return int(match.group(1)) if match else 0


def job_table(rows: list[dict[str, str]]) -> str:
    lines = [
        f"{'slurm id':>8}  {'rule':<22} {'wildcards':<20} {'partition':<9} {'node':<8} cpus gpus(req/got) "
        f"{'state':<10} start     end"
    ]
    for row in rows:
        lines.append(
            f"{row['JobID']:>8}  {row['rule']:<22} {row['wildcards']:<20} {row['Partition']:<9} "
            f"{row['NodeList']:<8} {row['AllocCPUS']:>4} {gpus(row, 'ReqTRES'):>6}/{gpus(row):<6} "
            f"{row['State']:<10} {row['Start'][-8:]}  {row['End'][-8:]}"
        )
    return "\n".join(lines)


@pytest.fixture(scope="module")
def runs(cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory):
    """The tiny run (must pass) and, beside it, one GPU job on the fake GPU (fails by design).

    The GPU run asks, with `accelerator: require`, for one transfer job (a timing job with gpu=1)
    and what it needs: the probe (then gpu=1 too), the data, its export. No CUDA behind the fake
    GPU, so the transfer job fails, but only after Slurm placed it. Both run at once, into the same
    queue, so the exclusivity checks below cover the jobs of two workflows.
    """
    cpu_dir, gpu_dir = tmp_path_factory.mktemp("tiny-slurm"), tmp_path_factory.mktemp("gpu-slurm")
    gpu_config = dict(TINY, accelerator="require")
    planned = {"cpu": plan(cpu_dir, TINY), "gpu": plan(gpu_dir, gpu_config, GPU_TARGET)}
    deadline = time.monotonic() + RUN_TIMEOUT_S
    started = {"gpu": Run(gpu_dir, gpu_config, "--verbose", GPU_TARGET)}
    try:
        started["cpu"] = Run(cpu_dir, TINY)
        for run in started.values():
            run.wait(deadline)
    finally:
        for run in started.values():
            run.kill()
    cpu, gpu = started["cpu"], started["gpu"]
    assert cpu.returncode == 0, cpu.output[-6000:] + cluster.logs()
    assert cpu.job_ids and gpu.job_ids, "no job went through sbatch"
    rows = {name: sacct(cluster, run.job_ids) for name, run in started.items()}
    print(
        f"\nbring-up {cluster.timings['bring_up_s']:.1f} s "
        f"({', '.join(f'{k} {v:.1f}' for k, v in cluster.timings.items() if k != 'bring_up_s')})"
        f"\ntiny run through Slurm {cpu.seconds:.1f} s, {len(cpu.job_ids)} jobs\n{job_table(rows['cpu'])}"
        f"\nGPU request beside it {gpu.seconds:.1f} s (fails by design: no CUDA behind the fake GPU)\n"
        f"{job_table(rows['gpu'])}"
    )
    return {"cpu": cpu, "gpu": gpu}, rows, planned


def test_the_profile_gives_every_timing_rule_its_node() -> None:
    # Needs no cluster: a new timing rule must be added to the profile's set-resources.
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert {"time_load_convert", "time_cpu_training", "time_transfer", "time_gpu_training"} <= TIMING_RULES
    for rule in sorted(TIMING_RULES):
        assert "--exclusive" in profile["set-resources"].get(rule, {}).get("slurm_extra", ""), rule
    for rule in ("time_transfer", "time_gpu_training"):
        assert profile["set-resources"][rule]["gpu"] == 1
    assert "timing_slot" not in profile.get("resources", {}), "a global limit would serialise the whole cluster"


def test_cluster_is_up_with_a_gpu_node(cluster: SlurmCluster) -> None:
    assert cluster.timings["bring_up_s"] < 60
    node = cluster.run("scontrol", "show", "node", cluster.host).stdout
    assert "Gres=gpu:1" in node, node
    assert [name for name, _ in cluster.alive()] == ["munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd"]


def test_tiny_run_through_slurm_writes_the_lab_report(runs) -> None:
    workdir = runs[0]["cpu"].workdir
    report = (workdir / "results" / "REPORT.md").read_text()
    assert "**Verdict: CPU.**" in report
    assert "the GPU plan is theoretical and no speedup is claimed" in report
    assert (workdir / "results/figures/decision.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(list((workdir / "results/timing/cpu").glob("*.json"))) == 1 * 3


def test_every_planned_job_ran_as_a_slurm_job_on_the_cpu_partition(cluster: SlurmCluster, runs) -> None:
    _, rows, planned = runs
    assert {"time_load_convert", "time_cpu_training", "report"} <= set(planned["cpu"])
    # Every job Snakemake planned (but the target rule `all`) went through sbatch, once.
    assert count_rules(rows["cpu"]) == planned["cpu"]
    for row in rows["cpu"]:
        assert row["State"] == "COMPLETED", row
        assert row["NodeList"] == cluster.host, row
        assert row["Partition"] == "cpu", row
        # None asked for a GPU (an exclusive job is given the whole node, its GRES included).
        assert gpus(row, "ReqTRES") == 0, row


def test_timing_jobs_had_their_node_to_themselves(cluster: SlurmCluster, runs) -> None:
    started, rows, _ = runs
    every = rows["cpu"] + rows["gpu"]
    assert any(row["rule"] in TIMING_RULES for row in rows["gpu"])
    # --exclusive: a timing job is given every CPU of its node although it asks for one ...
    for row in every:
        expected = cluster.cpus if row["rule"] in TIMING_RULES else 1
        assert int(row["AllocCPUS"]) == expected, row

    # ... so no other job, of either workflow, ran on that node while it did (Slurm's clock has
    # 1 s steps) ...
    def interval(row):
        return datetime.fromisoformat(row["Start"]), datetime.fromisoformat(row["End"])

    for timing in (row for row in every if row["rule"] in TIMING_RULES):
        start, end = interval(timing)
        for other in every:
            if other is not timing and other["NodeList"] == timing["NodeList"]:
                other_start, other_end = interval(other)
                assert other_end <= start or other_start >= end, (timing, other)
    # ... and the measurements themselves never overlapped (the records' own wall intervals).
    records = (started["cpu"].workdir / "results/timing").rglob("*.json")
    intervals = sorted(json.loads(path.read_text())["wall_interval"] for path in records)
    timed = [row for row in rows["cpu"] if row["rule"] in {"time_load_convert", "time_cpu_training", "time_cost_model"}]
    assert len(intervals) == len(timed)
    for (_, end), (start, _) in zip(intervals, intervals[1:]):
        assert start >= end


def test_gpu_job_asks_for_a_gpu_and_lands_on_the_gpu_node(cluster: SlurmCluster, runs) -> None:
    started, rows, planned = runs
    gpu = started["gpu"]
    assert gpu.returncode != 0, "the GPU job cannot succeed without CUDA"
    assert planned["gpu"] == {"generate_benchmark": 1, "export_data": 1, "probe_devices": 1, "time_transfer": 1}
    assert count_rules(rows["gpu"]) == planned["gpu"], rows["gpu"]
    by_rule = {row["rule"]: row for row in rows["gpu"]}
    # The request: sbatch --gpus=1 in the gpu partition, the transfer job with the node to itself.
    submit = [line for line in gpu.output.splitlines() if "sbatch call:" in line and "rule_time_transfer" in line]
    assert submit and "--gpus=1" in submit[0] and " -p gpu " in submit[0] and "--exclusive" in submit[0], submit
    # What Slurm did with it: the jobs planned for the GPU asked for and got the node's GPU ...
    for rule in ("probe_devices", "time_transfer"):
        row = by_rule[rule]
        assert row["Partition"] == "gpu" and row["NodeList"] == cluster.host, row
        assert gpus(row, "ReqTRES") == 1 and gpus(row, "AllocTRES") == 1, row
    # ... the others stayed on the CPU partition.
    for rule in ("generate_benchmark", "export_data"):
        assert by_rule[rule]["Partition"] == "cpu" and gpus(by_rule[rule], "ReqTRES") == 0
    assert by_rule["probe_devices"]["State"] == "COMPLETED"
    assert by_rule["time_transfer"]["State"] == "FAILED"
    log = (gpu.workdir / "results/logs/time_transfer/rep0.log").read_text()
    assert "DeviceUnavailable: this job needs a CUDA device, but none is visible" in log
    assert not (gpu.workdir / GPU_TARGET).exists()


def test_a_second_cluster_leaves_the_running_one_alone(tmp_path: Path, cluster: SlurmCluster) -> None:
    # /etc/slurm/slurm.conf is shared by every cluster on the machine: a second one is refused,
    # starts nothing and removes nothing. (The module's own cluster is stopped, by PID, in its
    # fixture's finalizer, which checks that no daemon is left.)
    before = cluster.alive()
    config = Path("/etc/slurm/slurm.conf").read_text()
    second = SlurmCluster(tmp_path)
    with pytest.raises(ClusterError, match="another test cluster"):
        second.start(timeout=30)
    second.stop()
    assert second.alive() == [] and cluster.alive() == before
    assert Path("/etc/slurm/slurm.conf").read_text() == config
