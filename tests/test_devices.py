"""Device probe, fingerprint and plan; the accelerator settings of the configuration schema.

Runs on a CPU-only machine: the CUDA/MPS cases use synthetic probe records (tests/builders_data.py), never a
faked runtime.
"""

from __future__ import annotations

import copy
import json

import pytest
import torch
import yaml

from accel_choice import records
from accel_choice.io import atomic, config_checks
from accel_choice.measure import devices
from accel_choice.records import RecordError
from accel_choice.records.loads import DeviceProbe, VisibleDevices
from builders_data import cuda_device, data_environment, device_probe, visible_devices

CPU_ONLY = not torch.cuda.is_available() and not torch.backends.mps.is_available()
needs_cpu_only = pytest.mark.skipif(not CPU_ONLY, reason="asserts what a machine without CUDA/MPS reports")

H200 = cuda_device()
ONE_GPU = visible_devices()
NO_DEVICE = visible_devices(cuda_available=False)
MPS = visible_devices(cuda_available=False, mps_available=True, accelerator="mps")


def _two_gpus():
    return visible_devices(cuda_devices=(H200, cuda_device(index=1)))


# --- probe --------------------------------------------------------------------------------


@needs_cpu_only
def test_probe_on_this_machine_sees_no_accelerator():
    probed = devices.probe()
    assert probed.cuda_available is False
    assert probed.cuda_devices == ()
    assert probed.nvidia_driver is None
    assert probed.mps_available is False
    assert probed.accelerator is None
    assert probed.torch_version == torch.__version__
    assert probed.cuda_version == torch.version.cuda
    assert devices.fingerprint(probed) == "none"
    assert devices.measurable_device(probed) is None


def test_probe_record_has_the_keys_the_report_reads():
    assert set(records.to_json(devices.probe())) == {
        "torch_version",
        "cuda_available",
        "cuda_version",
        "cuda_devices",
        "nvidia_driver",
        "mps_available",
        "accelerator",
    }


def test_the_probe_file_is_the_probe_with_its_fingerprints(tmp_path):
    probed = devices.probe_record("auto", "planned", data_environment())
    assert probed.fingerprint == devices.fingerprint(devices.probe()) and probed.planned_fingerprint == "planned"
    atomic.write_record(tmp_path / "devices.json", probed)
    assert records.read(DeviceProbe, tmp_path / "devices.json") == probed
    written = atomic.read_json(tmp_path / "devices.json")  # flat, as the report and the planner read it
    assert list(written) == [
        "schema",
        "schema_version",
        *records.to_json(devices.probe()),
        "mode",
        "planned_fingerprint",
        "fingerprint",
        "environment",
    ]


def test_probe_invariants():
    with pytest.raises(ValueError, match="CUDA devices or a driver listed, but cuda_available is false"):
        visible_devices(cuda_available=False, cuda_devices=(H200,))
    with pytest.raises(ValueError, match=r"cuda_devices have the indexes \[1\], not 0..0"):
        visible_devices(cuda_devices=(cuda_device(index=1),))
    with pytest.raises(ValueError, match="Input should be 'auto', 'require' or 'off'"):
        device_probe(mode="turbo")


def test_a_damaged_probe_file_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "devices.json"
    data = records.to_json(device_probe(cuda_available=True, cuda_version="12.8", cuda_devices=(H200,)))
    data["cuda_devices"][0]["total_memory_bytes"] = "80GB"
    path.write_text(json.dumps(data))
    with pytest.raises(
        RecordError, match=r"devices\.json: cuda_devices\[0\]\.total_memory_bytes: Input should be a valid integer"
    ):
        records.read(DeviceProbe, path)


# --- fingerprint ----------------------------------------------------------------------------


def test_fingerprint_of_one_h200():
    assert (
        devices.fingerprint(ONE_GPU)
        == "cuda12.8:GPU-5a7a0c2d-91d4-4b1e-8f7b-2c9d3e4f5a6b:NVIDIA H200:9.0:150020390912;driver570.86.15"
    )


def test_fingerprint_of_no_device_and_of_mps():
    assert devices.fingerprint(NO_DEVICE) == "none"
    assert devices.fingerprint(MPS) == "mps"


def test_fingerprint_is_stable():
    again = copy.deepcopy(ONE_GPU)
    assert devices.fingerprint(again) == devices.fingerprint(ONE_GPU)
    # the same record read back from JSON with its keys in another order
    written = records.to_json(again)
    reordered = {k: written[k] for k in reversed(list(written))}
    reordered["cuda_devices"] = [{k: d[k] for k in reversed(list(d))} for d in written["cuda_devices"]]
    assert devices.fingerprint(records.from_json(VisibleDevices, reordered, "here")) == devices.fingerprint(ONE_GPU)
    assert devices.fingerprint(_two_gpus()) == devices.fingerprint(_two_gpus())


def _changed(**device_fields):
    return visible_devices(cuda_devices=(cuda_device(**device_fields),))


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(NO_DEVICE, id="device removed"),
        pytest.param(_changed(name="NVIDIA H100 80GB HBM3"), id="device swapped"),
        pytest.param(_changed(uuid="GPU-0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e"), id="identical-looking device swapped"),
        pytest.param(_changed(uuid=None), id="UUID no longer told"),
        pytest.param(_changed(capability="8.0"), id="capability"),
        pytest.param(_changed(total_memory_bytes=H200.total_memory_bytes // 7), id="memory (e.g. a MIG slice)"),
        pytest.param(visible_devices(nvidia_driver="580.65.06"), id="driver updated"),
        pytest.param(visible_devices(cuda_version="13.0"), id="CUDA build"),
        pytest.param(visible_devices(mps_available=True), id="mps added"),
    ],
)
def test_fingerprint_changes_with_the_devices(other):
    assert devices.fingerprint(other) != devices.fingerprint(ONE_GPU)


def test_a_second_device_the_jobs_never_use_changes_nothing():
    # The jobs run on torch.device("cuda"), the first visible device: a second one exposed beside
    # it (or hidden again) must not re-run every GPU job.
    assert devices.fingerprint(_two_gpus()) == devices.fingerprint(ONE_GPU)
    assert devices.fingerprint(_two_gpus()).count("NVIDIA H200") == 1


def test_the_driver_is_read_through_nvml_not_a_subprocess(monkeypatch):
    class FakeNvml:
        @staticmethod
        def nvmlInit():
            return None

        @staticmethod
        def nvmlSystemGetDriverVersion():
            return b"570.86.15"

    monkeypatch.setattr(devices, "nvml_library", lambda: FakeNvml)
    assert devices._nvidia_driver() == "570.86.15"

    class Broken(FakeNvml):
        @staticmethod
        def nvmlSystemGetDriverVersion():
            raise RuntimeError("NVML_ERROR_UNKNOWN")

    monkeypatch.setattr(devices, "nvml_library", lambda: Broken)
    assert devices._nvidia_driver() is None
    monkeypatch.setattr(devices, "nvml_library", lambda: None)
    assert devices._nvidia_driver() is None


def test_cuda_is_asked_the_nvml_way_and_only_for_the_question(monkeypatch):
    """Inside the question torch counts devices through NVML (the driver stays cold for the timed
    start-up); outside it the variable is as it was, so a CPU job's every Adam step (which asks
    torch.cuda.is_available()) does not pay an NVML device count."""
    import os

    monkeypatch.delenv(devices.NVML_CHECK, raising=False)
    seen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: seen.append(os.environ.get(devices.NVML_CHECK)) or False)
    assert devices.cuda_available() is False
    assert devices.probe().cuda_available is False
    with pytest.raises(devices.DeviceUnavailable):
        devices.require("cuda")
    assert seen == ["1", "1", "1"]
    assert devices.NVML_CHECK not in os.environ
    monkeypatch.setenv(devices.NVML_CHECK, "0")  # a user's own setting survives the question
    devices.cuda_available()
    assert os.environ[devices.NVML_CHECK] == "0"


# --- which device is measured, and the plan at parse time --------------------------------------


def test_measurable_device():
    assert devices.measurable_device(ONE_GPU) == "cuda"
    assert devices.measurable_device(MPS) == "mps"
    assert devices.measurable_device(visible_devices(mps_available=True)) == "cuda"  # CUDA first
    assert devices.measurable_device(NO_DEVICE) is None


def test_planned_device_off_does_not_probe(monkeypatch):
    def no_probe():
        raise AssertionError("accelerator: off must not probe (nor import a GPU runtime)")

    monkeypatch.setattr(devices, "probe", no_probe)
    assert devices.planned_device("off") == (None, "off")


@needs_cpu_only
def test_planned_device_here():
    assert devices.planned_device("auto") == (None, "none")
    assert devices.planned_device("require") == ("cuda", "require;none")


@pytest.mark.parametrize(
    ("probed", "auto", "require"),
    [
        (
            ONE_GPU,
            ("cuda", "cuda12.8:GPU-5a7a0c2d-91d4-4b1e-8f7b-2c9d3e4f5a6b:NVIDIA H200:9.0:150020390912;driver570.86.15"),
            (
                "cuda",
                "require;cuda12.8:GPU-5a7a0c2d-91d4-4b1e-8f7b-2c9d3e4f5a6b:NVIDIA H200:9.0:150020390912;driver570.86.15",
            ),
        ),
        (MPS, ("mps", "mps"), ("cuda", "require;mps")),
        (NO_DEVICE, (None, "none"), ("cuda", "require;none")),
    ],
    ids=["cuda", "mps", "none"],
)
def test_planned_device_from_a_probe(monkeypatch, probed, auto, require):
    monkeypatch.setattr(devices, "probe", lambda: probed)
    assert devices.planned_device("auto") == auto
    assert devices.planned_device("require") == require


@pytest.mark.parametrize("mode", ["turbo", "", "AUTO", False, None])
def test_planned_device_rejects_other_modes(mode):
    with pytest.raises(ValueError, match="accelerator must be one of auto, require, off"):
        devices.planned_device(mode)


@needs_cpu_only
def test_require_cuda_fails_clearly_here():
    with pytest.raises(devices.DeviceUnavailable) as info:
        devices.require("cuda")
    message = str(info.value)
    assert "needs a CUDA device, but none is visible" in message
    assert "accelerator: require" in message
    assert "accelerator: auto" in message  # how to proceed: measure only where a GPU is visible ...
    assert "or off for none" in message  # ... or not at all
    assert isinstance(info.value, RuntimeError)


@needs_cpu_only
def test_require_mps_fails_here():
    with pytest.raises(devices.DeviceUnavailable, match="needs a MPS device"):
        devices.require("mps")


def test_cpu_helpers_are_no_ops():
    cpu = torch.device("cpu")
    assert devices.synchronize(cpu) is None
    assert devices.reset_peak_memory(cpu) is None
    assert devices.peak_memory_bytes(cpu) is None


# --- configuration: accelerator and gpu keys -------------------------------------------------


@pytest.fixture(scope="module")
def schema(repo):
    with open(repo / "workflow" / "schemas" / "config.schema.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_yaml_off_is_read_as_false_and_normalized():
    config = yaml.safe_load("accelerator: off\n")
    assert config == {"accelerator": False}  # the YAML 1.1 trap normalize_config is for
    config_checks.normalize_config(config)
    assert config == {"accelerator": "off"}


@pytest.mark.parametrize("value", ["auto", "require", "off", "turbo"])
def test_normalize_leaves_strings_alone(value):
    config = {"accelerator": value}
    config_checks.normalize_config(config)
    assert config == {"accelerator": value}


def test_normalize_without_the_key():
    config = {"seed": 1}
    config_checks.normalize_config(config)
    assert config == {"seed": 1}


def test_schema_accepts_the_accelerator_settings(schema):
    for mode in ("auto", "require", "off"):
        assert config_checks.schema_errors({"accelerator": mode}, schema) == []
    good_gpu = {
        "precisions": ["bf16"],
        "placements": ["streamed"],
        "grad_scaler": False,
        "speedup_threshold": 1,
        "transfer_passes": 1,
    }
    assert config_checks.schema_errors({"gpu": good_gpu}, schema) == []


def test_schema_accepts_normalized_yaml_off(schema):
    config = yaml.safe_load("accelerator: off\n")
    assert config_checks.schema_errors(config, schema)  # unnormalized False is refused ...
    config_checks.normalize_config(config)
    assert config_checks.schema_errors(config, schema) == []  # ... normalized it passes


@pytest.mark.parametrize(
    ("config", "key", "allowed"),
    [
        ({"accelerator": "turbo"}, "config key accelerator:", "allowed: one of auto, require, off"),
        ({"gpu": {"precisions": ["fp8"]}}, "config key gpu.precisions[0]:", "allowed: one of fp32, fp16, bf16"),
        ({"gpu": {"placements": ["pinned"]}}, "config key gpu.placements[0]:", "allowed: one of resident, streamed"),
        ({"gpu": {"speedup_threshold": 0.9}}, "config key gpu.speedup_threshold:", "allowed: a number >= 1"),
        ({"gpu": {"transfer_passes": 0}}, "config key gpu.transfer_passes:", "allowed: an integer >= 1"),
        ({"gpu": {"precisions": []}}, "config key gpu.precisions:", "allowed: a list of at least 1"),
        ({"gpu": {"placement": ["resident"]}}, "config key gpu:", "unknown key(s) placement"),
    ],
    ids=["accelerator", "precision", "placement", "threshold", "passes", "no precision", "typo"],
)
def test_schema_names_the_bad_gpu_key(schema, config, key, allowed):
    (message,) = config_checks.schema_errors(config, schema)
    assert message.startswith(key)
    assert allowed in message


def test_schema_reports_every_bad_gpu_key_at_once(schema):
    config = {
        "accelerator": "turbo",
        "gpu": {"precisions": ["fp8"], "placements": ["pinned"], "speedup_threshold": 0.5},
    }
    messages = config_checks.schema_errors(config, schema)
    assert [m.split(":")[0] for m in messages] == [
        "config key accelerator",
        "config key gpu.placements[0]",
        "config key gpu.precisions[0]",
        "config key gpu.speedup_threshold",
    ]
    assert "'turbo'" in messages[0] and "'pinned'" in messages[1] and "'fp8'" in messages[2] and "0.5" in messages[3]


def test_check_schema_raises_config_error(tmp_path, repo):
    with pytest.raises(config_checks.ConfigError, match=r"gpu\.speedup_threshold"):
        config_checks.check_schema(
            {"gpu": {"speedup_threshold": 0.5}}, repo / "workflow" / "schemas" / "config.schema.yaml"
        )
