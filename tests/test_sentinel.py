"""The drift sentinel: the fixed work timed in every job (measure.sentinel), the machine state read
beside it, its record (records.sentinel), the run's summary and flags (analyze.sentinel), and the
interleaved rounds a training job ticks it around (measure.training)."""

from __future__ import annotations

import os
import statistics
import sys
from types import SimpleNamespace

import pytest
import torch
from builders_training import environment

from accel_choice.analyze import aggregate, job_intervals, same_jobs
from accel_choice.analyze.bootstrap import spread_floor
from accel_choice.analyze.sentinel import summarize_sentinels
from accel_choice.analyze.stats import NoiseRules
from accel_choice.measure import contention, sentinel, steps, training
from accel_choice.records.sentinel import GpuState, SentinelReadings
from accel_choice.records.training_job import TrainingJob
from accel_choice.records.model import ModelSpec
from accel_choice.render import noise

CPU_WORKLOAD = sentinel.workload_name(torch.device("cpu"))

# --- measure.sentinel: the fixed work --------------------------------------------------------


@pytest.fixture(scope="module")
def one_thread():
    """Torch on one thread, as a timing job granted one core runs: the fixed work stays ~50 ms
    even while other processes hold the other core (two spinning threads would not)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_sentinel_times_the_fixed_work_on_the_cpu(one_thread):
    """Every tick is one positive reading; readings() keeps them in order with their median."""
    probe = sentinel.Sentinel(torch.device("cpu"))
    ticks = [probe.tick() for _ in range(3)]
    assert all(seconds > 0 for seconds in ticks)
    readings = probe.readings()
    assert readings.seconds == tuple(ticks)
    assert readings.median_s == statistics.median(ticks)
    assert readings.workload == CPU_WORKLOAD == "cpu: 96 x mm(256x256) fp32"
    assert readings.steal_share is None or readings.steal_share >= 0
    assert readings.gpu_start is None and readings.gpu_end is None


def test_workload_names_the_work_of_each_device():
    """The work is fixed per device kind, and its name says which."""
    assert sentinel.workload_name(torch.device("cuda", 1)) == "cuda: 20 x mm(4096x4096) fp32"


# --- measure.sentinel and measure.contention: machine state from fake files ------------------------


def test_steal_seconds_reads_the_eighth_column_of_proc_stat(tmp_path):
    """The aggregate cpu line's steal column (the 8th number) in ticks, turned into seconds."""
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 1000 10 0 5 300 0 0\ncpu0 50 0 25 500 5 0 2 150 0 0\n", encoding="ascii")
    assert contention.steal_seconds(str(stat)) == pytest.approx(300 / os.sysconf("SC_CLK_TCK"))


def test_steal_seconds_none_without_a_steal_column_or_a_file(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "psutil", None)  # without /proc/stat psutil would answer (test_contention.py)
    old = tmp_path / "stat"
    old.write_text("cpu  100 0 50 1000 10 0 5\n", encoding="ascii")  # a kernel without steal
    empty = tmp_path / "empty"
    empty.write_text("", encoding="ascii")
    assert contention.steal_seconds(str(old)) is None
    assert contention.steal_seconds(str(empty)) is None
    assert contention.steal_seconds(str(tmp_path / "missing")) is None


def _cpufreq(root, core: int, khz: int | None = None, governor: str | None = None) -> None:
    folder = root / f"cpu{core}" / "cpufreq"
    folder.mkdir(parents=True)
    if khz is not None:
        (folder / "scaling_cur_freq").write_text(f"{khz}\n", encoding="ascii")
    if governor is not None:
        (folder / "scaling_governor").write_text(f"{governor}\n", encoding="ascii")


def test_cpu_mhz_is_the_mean_of_the_cores_cpufreq_clocks(tmp_path):
    """cpufreq's kHz per core, averaged, in MHz; cpuinfo is not read when cpufreq answers."""
    _cpufreq(tmp_path, 0, 2_000_000, "performance")
    _cpufreq(tmp_path, 1, 3_000_000)
    (tmp_path / "cpuidle").mkdir()  # not a core
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("cpu MHz\t\t: 1000.000\n", encoding="ascii")
    assert sentinel.cpu_mhz(str(tmp_path), str(cpuinfo)) == pytest.approx(2500.0)
    assert sentinel.governor(str(tmp_path)) == "performance"


def test_cpu_mhz_falls_back_to_cpuinfo(tmp_path):
    """A VM without cpufreq: the mean of /proc/cpuinfo's "cpu MHz" lines; no governor."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\ncpu MHz\t\t: 2400.000\nmodel name\t: Test\n\nprocessor\t: 1\ncpu MHz\t\t: 2600.000\n",
        encoding="ascii",
    )
    assert sentinel.cpu_mhz(str(tmp_path / "sys"), str(cpuinfo)) == pytest.approx(2500.0)
    assert sentinel.governor(str(tmp_path / "sys")) is None


def test_cpu_mhz_none_when_nothing_is_readable(tmp_path):
    assert sentinel.cpu_mhz(str(tmp_path / "sys"), str(tmp_path / "cpuinfo")) is None
    zero = tmp_path / "zero"
    zero.write_text("cpu MHz\t\t: 0.000\n", encoding="ascii")
    assert sentinel.cpu_mhz(str(tmp_path / "sys"), str(zero)) is None  # a zero clock is no clock


# --- measure.sentinel: the GPU through a fake NVML -------------------------------------------------


class FakeNvmlError(Exception):
    pass


class FakeNvml:
    """Enough of pynvml for gpu_state: the memory clock query is not supported."""

    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, reasons: int = 0x20 | 0x4 | 0x1, new_reasons_api: bool = True):
        self.reasons = reasons
        self.new_reasons_api = new_reasons_api
        self.asked_uuid: list[str] = []
        self.asked_bus: list[str] = []
        self.asked_index: list[int] = []

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        self.asked_uuid.append(uuid)
        return "handle"

    def nvmlDeviceGetHandleByPciBusId(self, bus: str) -> str:
        self.asked_bus.append(bus)
        return "handle"

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        self.asked_index.append(index)
        return "handle"

    def nvmlDeviceGetClockInfo(self, handle: str, kind: int) -> int:
        assert handle == "handle"
        if kind == self.NVML_CLOCK_MEM:
            raise FakeNvmlError("NVML_ERROR_NOT_SUPPORTED")
        return 1980

    def nvmlDeviceGetTemperature(self, handle: str, sensor: int) -> int:
        return 65

    def nvmlDeviceGetPowerUsage(self, handle: str) -> int:
        return 350_500  # milliwatts

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:
        if not self.new_reasons_api:
            raise AttributeError("an older driver: only the throttle-reasons call")
        return self.reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: str) -> int:
        return self.reasons


def test_the_fake_speaks_pynvml():
    """Every NVML call the fake answers exists in the pinned nvidia-ml-py under that name: a
    misspelt call would be swallowed as "not supported" on a real GPU."""
    import pynvml

    called = [name for name in vars(FakeNvml) if name.startswith("nvml")]
    assert called and [name for name in called if not hasattr(pynvml, name)] == []


def test_gpu_state_finds_the_device_by_its_uuid(monkeypatch):
    monkeypatch.setattr(
        torch.cuda,
        "get_device_properties",
        lambda index: SimpleNamespace(uuid="5a7a0c2d-91d4-4b1e-8f7b-2c9d3e4f5a6b", pci_bus_id=0x3B),
    )
    nvml = FakeNvml()
    assert sentinel.gpu_state(torch.device("cuda", 0), nvml) is not None
    assert nvml.asked_uuid == ["GPU-5a7a0c2d-91d4-4b1e-8f7b-2c9d3e4f5a6b"] and nvml.asked_bus == []


def test_gpu_state_reads_what_nvml_answers(monkeypatch):
    """Answered queries fill their fields, the unsupported one is None, the mask is decoded by name
    (0x1, GPU idle, is no reason), and the handle is found by torch's PCI bus id."""
    monkeypatch.setattr(
        torch.cuda,
        "get_device_properties",
        lambda index: SimpleNamespace(pci_bus_id=0x3B, pci_domain_id=0, pci_device_id=0),
    )
    nvml = FakeNvml()
    state = sentinel.gpu_state(torch.device("cuda", 0), nvml)
    assert state == GpuState(
        sm_clock_mhz=1980,
        memory_clock_mhz=None,
        temperature_c=65,
        power_w=350.5,
        clocks_event_reasons=0x25,
        reasons=("sw_power_cap", "sw_thermal_slowdown"),
    )
    assert nvml.asked_bus == ["00000000:3B:00.0"]
    assert nvml.asked_index == []


def test_gpu_state_by_index_and_with_the_older_throttle_call(monkeypatch):
    """Without torch's PCI id the handle comes by index; an older driver's throttle call still
    gives the reasons; no reason bit set gives an empty tuple, not None."""

    def no_properties(index):
        raise RuntimeError("no CUDA here")

    monkeypatch.setattr(torch.cuda, "get_device_properties", no_properties)
    nvml = FakeNvml(reasons=0x40 | 0x8, new_reasons_api=False)
    state = sentinel.gpu_state(torch.device("cuda", 2), nvml)
    assert nvml.asked_index == [2]
    assert state.clocks_event_reasons == 0x48
    assert state.reasons == ("hw_slowdown", "hw_thermal_slowdown")
    idle = sentinel.gpu_state(torch.device("cuda", 2), FakeNvml(reasons=0x1))
    assert idle.clocks_event_reasons == 1
    assert idle.reasons == ()


def test_gpu_state_none_on_a_cpu():
    """A CPU job has no GPU state, whatever NVML would say."""
    assert sentinel.gpu_state(torch.device("cpu"), FakeNvml()) is None


# --- records.sentinel ---------------------------------------------------------------------------


def _readings(median_s: float, *, steal: float | None = None, workload: str = CPU_WORKLOAD, **gpu) -> SentinelReadings:
    return SentinelReadings(
        workload=workload,
        seconds=(median_s * 0.99, median_s, median_s * 1.02),
        median_s=median_s,
        steal_share=steal,
        cpu_mhz=(2500.0, 2500.0),
        governor=None,
        **gpu,
    )


def test_readings_refuse_a_median_that_is_not_the_median():
    with pytest.raises(ValueError, match="median"):
        SentinelReadings(
            workload=CPU_WORKLOAD,
            seconds=(0.04, 0.05, 0.09),
            median_s=0.06,  # the mean, not the median
            steal_share=None,
            cpu_mhz=None,
            governor=None,
        )
    even = SentinelReadings(
        workload=CPU_WORKLOAD, seconds=(0.04, 0.05), median_s=0.045, steal_share=None, cpu_mhz=None, governor=None
    )
    assert even.median_s == 0.045


def test_readings_refuse_no_timing():
    with pytest.raises(ValueError):
        SentinelReadings(
            workload=CPU_WORKLOAD, seconds=(), median_s=0.05, steal_share=None, cpu_mhz=None, governor=None
        )


# --- analyze.sentinel ------------------------------------------------------------------------------


def test_a_job_at_another_speed_is_flagged_and_left_out_of_the_floor():
    """Sentinels ~50 ms and one at 80 ms: that job alone is flagged, with its ratio to the run median,
    and the noise floor is the spread of the other jobs."""
    medians = {"bs64.rep0": 0.050, "bs64.rep1": 0.049, "bs64.rep2": 0.080, "bs64.rep3": 0.051, "bs64.rep4": 0.050}
    summary = summarize_sentinels([(label, _readings(m)) for label, m in medians.items()], NoiseRules())
    assert summary.workload == CPU_WORKLOAD
    assert summary.run_median_s == 0.050
    assert summary.flagged == 1
    rows = {row.job: row for row in summary.jobs}
    assert rows["bs64.rep2"].over_run_median == pytest.approx(1.6)
    assert rows["bs64.rep2"].reasons == ("machine speed changed during this job (sentinel 1.60x the run median)",)
    assert all(not row.reasons for label, row in rows.items() if label != "bs64.rep2")
    clean = [0.050, 0.049, 0.051, 0.050]
    assert summary.noise_floor == pytest.approx(spread_floor(clean))
    assert summary.noise_floor < spread_floor(list(medians.values())) / 5
    assert summary.tolerance == NoiseRules().sentinel_tolerance
    assert summary.confidence == NoiseRules().confidence


def test_a_faster_job_is_flagged_too():
    """Off the run median either way: 35 ms against 50 ms is 0.70x."""
    jobs = [("a", _readings(0.050)), ("b", _readings(0.050)), ("c", _readings(0.035))]
    summary = summarize_sentinels(jobs, NoiseRules())
    assert summary.jobs[2].reasons == ("machine speed changed during this job (sentinel 0.70x the run median)",)
    assert summary.noise_floor is None  # two clean jobs are too few for a spread


def test_steal_and_gpu_throttling_are_flagged():
    """Steal above the rule, with its number; GPU reasons from the start and end readings, once each."""
    throttled = {"sw_power_cap": 0x4, "hw_slowdown": 0x8}

    def gpu(*names):
        return GpuState(
            sm_clock_mhz=1500,
            memory_clock_mhz=None,
            temperature_c=80,
            power_w=300.0,
            clocks_event_reasons=sum(throttled[n] for n in names),
            reasons=tuple(names),
        )

    rules = NoiseRules()
    jobs = [
        ("clean", _readings(0.050, steal=0.01)),
        ("at-rule", _readings(0.050, steal=rules.steal_share)),
        ("steal", _readings(0.050, steal=0.3)),
        ("gpu", _readings(0.050, gpu_start=gpu("sw_power_cap"), gpu_end=gpu("hw_slowdown", "sw_power_cap"))),
        ("cool", _readings(0.050, gpu_start=gpu(), gpu_end=gpu())),
    ]
    summary = summarize_sentinels(jobs, rules)
    reasons = {row.job: row.reasons for row in summary.jobs}
    assert reasons["steal"] == ("the hypervisor stole 0.30 cores during the job (> 0.1)",)
    assert reasons["gpu"] == ("GPU clocks held down (hw_slowdown, sw_power_cap)",)
    assert reasons["clean"] == reasons["at-rule"] == reasons["cool"] == ()
    assert summary.flagged == 2
    assert summary.noise_floor == 0.0  # three clean jobs, all at 50 ms


def test_sentinels_of_different_workloads_are_not_compared():
    jobs = [("cpu", _readings(0.05)), ("gpu", _readings(0.05, workload=sentinel.workload_name(torch.device("cuda"))))]
    with pytest.raises(ValueError, match="different workloads"):
        summarize_sentinels(jobs, NoiseRules())
    with pytest.raises(ValueError):
        summarize_sentinels([], NoiseRules())


def test_fewer_than_three_clean_jobs_give_no_floor():
    """Three jobs, one flagged: two clean medians are no spread to speak of."""
    jobs = [("a", _readings(0.050)), ("b", _readings(0.052)), ("c", _readings(0.090))]
    summary = summarize_sentinels(jobs, NoiseRules())
    assert summary.flagged == 1
    assert summary.noise_floor is None


# --- measure.training: the interleaved rounds --------------------------------------------------------


def test_epoch_order_alternates_rounds_and_repeats():
    """A B, B A, A B, B A in repeat 0; B first in repeat 1; every variant `epochs` times."""
    assert training.epoch_order(["A", "B"], 4, 0) == [0, 1, 1, 0, 0, 1, 1, 0]
    assert training.epoch_order(["A", "B"], 4, 1) == [1, 0, 0, 1, 1, 0, 0, 1]
    assert training.epoch_order(["A", "B"], 4, 2) == training.epoch_order(["A", "B"], 4, 0)
    three = training.epoch_order(["A", "B", "C"], 3, 1)
    assert three == [2, 1, 0, 0, 1, 2, 2, 1, 0]
    assert all(three.count(index) == 3 for index in range(3))
    assert training.epoch_order(["A"], 2, 1) == [0, 0]


EPOCHS = 3
ROWS = 64


@pytest.fixture(scope="module")
def jobs(one_thread):
    """Three real CPU timing jobs (repeats 0-2) of both loaders on 64 random rows, as TrainingJobs."""
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(ROWS, 5, generator=generator)
    y = (torch.rand(ROWS, generator=generator) > 0.5).float()
    made = []
    for repeat in range(3):
        records, readings = training.measure_training_job(
            x,
            y,
            steps.cpu_variants(["dataloader", "fastpath"], batch_size=16),
            repeat=repeat,
            seed=1,
            spec=ModelSpec(hidden=4, lr=1e-3),
            warmup_steps=2,
            epochs=EPOCHS,
        )
        made.append(
            TrainingJob(
                records=tuple(records),
                wall_interval=(1000.0 + repeat, 1000.5 + repeat),
                environment=environment(),
                sentinel=readings,
            )
        )
    return made


def test_a_training_job_keeps_every_epoch_and_ticks_the_sentinel_around_each_round(jobs):
    """Each variant's record holds its 3 epochs and evaluations with their medians, the variants
    ended on the same weights, and the sentinel ticked at the start and after each round (epochs + 1)."""
    for repeat, job in enumerate(jobs):
        assert [r.loader for r in job.records] == (
            ["dataloader", "fastpath"] if repeat % 2 == 0 else ["fastpath", "dataloader"]
        )
        for record in job.records:
            assert record.repeat == repeat
            assert len(record.epoch_s_each) == EPOCHS
            assert len(record.eval_s_each) == EPOCHS
            assert record.epoch_s == statistics.median(record.epoch_s_each)
            assert record.eval_s == statistics.median(record.eval_s_each)
            assert record.samples == record.eval_samples == ROWS
            assert record.same_final_weights_across_variants is True
        assert len({r.final_weights_sha256 for r in job.records}) == 1
        assert len(job.sentinel.seconds) == EPOCHS + 1
        assert job.sentinel.median_s == statistics.median(job.sentinel.seconds)
        assert job.sentinel.workload == CPU_WORKLOAD


def test_the_aggregate_of_real_jobs_has_intervals_and_the_run_sentinel(jobs):
    """training_table over three real jobs: one cell per loader, each point inside its interval and
    the geometric mean of its jobs' medians, and the run's sentinel summarising the three jobs."""
    table = aggregate.training_table(jobs, ROWS, NoiseRules(), environment())
    assert [cell.loader for cell in table.table] == ["dataloader", "fastpath"]
    for cell in table.table:
        assert cell.repeats == 3
        assert cell.epoch_s.low <= cell.epoch_s.point <= cell.epoch_s.high
        assert cell.eval_s.low <= cell.eval_s.point <= cell.eval_s.high
        mine = [next(r for r in job.records if r.loader == cell.loader) for job in jobs]
        assert cell.epoch_s_jobs == tuple(r.epoch_s_each for r in mine)
        assert cell.epoch_s.point == pytest.approx(
            statistics.geometric_mean([statistics.median(r.epoch_s_each) for r in mine])
        )
    dataloader = table.table[0]
    ratio = dataloader.epoch_s_over_fastpath
    assert ratio.low <= ratio.point <= ratio.high and ratio.method == same_jobs.ALONE
    assert table.sentinel.workload == CPU_WORKLOAD
    assert [row.job for row in table.sentinel.jobs] == ["rep0", "rep1", "rep2"]
    assert table.sentinel.run_median_s == statistics.median(job.sentinel.median_s for job in jobs)
    assert table.non_finite == ()


def test_the_sentinel_holds_nothing_on_its_device_between_ticks(one_thread, monkeypatch):
    """Its operands live on the host; a tick copies them to the device before the clock starts and
    drops them after, so a timed epoch's peak memory is the epoch's own (issue 26)."""
    probe = sentinel.Sentinel(torch.device("cpu"))
    assert probe.a.device.type == probe.b.device.type == "cpu" and probe.held_on_device() == ()
    during = []
    run = probe._run
    monkeypatch.setattr(probe, "_run", lambda iterations: (during.append(probe.held_on_device()), run(iterations)))
    assert probe.tick() > 0
    assert [len(held) for held in during] == [2] and probe.held_on_device() == ()
    with pytest.raises(RuntimeError, match="inside _on_device"):
        run(1)


# --- a GPU job's host sentinel (issue 26: host drift slows a launch-bound model unseen by the GPU) ----------


def test_a_host_sentinel_times_the_cpu_work_after_every_tick(one_thread):
    """The GPU path's host readings, run on the CPU (its twin): one host reading per tick, kept in the readings."""
    probe = sentinel.Sentinel(torch.device("cpu"), host=True)
    ticks = [probe.tick() for _ in range(3)]
    readings = probe.readings()
    assert readings.seconds == tuple(ticks)
    assert len(readings.host_seconds) == 3 and all(s > 0 for s in readings.host_seconds)
    assert readings.host_median_s == statistics.median(readings.host_seconds)
    cpu_only = sentinel.Sentinel(torch.device("cpu"))
    cpu_only.tick()
    assert cpu_only.readings().host_seconds is None and cpu_only.host is None


def test_readings_refuse_host_readings_that_are_not_one_per_tick():
    with pytest.raises(ValueError, match="2 host_seconds for 3 ticks"):
        _readings(0.05, host_seconds=(0.03, 0.03))


def test_a_job_whose_host_ran_at_another_speed_is_flagged_and_warned():
    steady = [(f"bs64.rep{r}", _readings(0.05, host_seconds=(0.030, 0.030, 0.031))) for r in range(4)]
    slow_host = ("bs64.rep4", _readings(0.05, host_seconds=(0.045, 0.046, 0.045)))
    summary = summarize_sentinels([*steady, slow_host], NoiseRules())
    assert summary.host_run_median_s == pytest.approx(0.030)
    assert summary.jobs[4].reasons == ("the host's speed changed during this job (host sentinel 1.50x the run median)",)
    assert not any(row.reasons for row in summary.jobs[:4])
    from accel_choice.analyze.stats import job_warnings

    moving = _readings(0.05, host_seconds=(0.030, 0.031, 0.045))
    assert job_warnings([], moving, NoiseRules()) == ["its host sentinel readings moved 1.50x within the job (> 1.25x)"]
    assert "CPU's fixed work on its host" in noise.noise_floor_section([("GPU", summary)])


def test_sentinel_covariate_removes_the_job_speed_the_sentinel_shares(tmp_path, capsys):
    """benchmarks/sentinel_covariate.py, whose real-run table docs/statistics.md quotes: the analysis of covariance
    recovers a ratio whose jobs moved with their sentinel, and a folder of one thread count is named, not read."""
    import importlib.util
    from pathlib import Path

    import numpy as np
    from test_compare import make_results

    repo = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("sentinel_covariate", repo / "benchmarks" / "sentinel_covariate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    rng = np.random.default_rng(3)
    sa, sb = rng.normal(0, 0.1, 4), rng.normal(0, 0.1, 4)  # each job's log sentinel: the machine's speed
    ya, yb = 2 * sa + rng.normal(0, 0.005, 4), np.log(1.2) + 2 * sb + rng.normal(0, 0.005, 4)
    fitted = module.adjusted_ratio(ya, sa, yb, sb)
    welch = job_intervals.ratio_interval([[v] for v in np.exp(ya)], [[v] for v in np.exp(yb)])
    assert fitted.ratio == pytest.approx(1.2, rel=0.02) and fitted.slope == pytest.approx(2, rel=0.05)
    assert fitted.half_width < 0.02 < welch.half_width_ratio
    with pytest.raises(ValueError, match="no degree of freedom"):
        module.adjusted_ratio(ya[:1], sa[:1], yb[:1], sb[:1])
    assert module.main([str(make_results(tmp_path, "one"))]) == 0
    assert "one thread count, or under 3 jobs a side" in capsys.readouterr().out
