"""Issue 44: any model a user brings is measured as training uses it, labelled with the precision it
computes in, and may not change torch's settings. One model per kind of layer users bring."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from accel_choice.measure import profile, steps, training
from accel_choice.measure.conditions import conditions, dtype_label
from accel_choice.measure.model import ModelError, build
from accel_choice.measure.model_checks import check_spec, epoch_batches
from accel_choice.records.model import ModelSpec
from builders_training import training_record

HEADER = "import torch\nfrom torch import nn\n\n"
# Each model takes samples of 8 features and returns one logit per sample.
KINDS = {
    "batch norm and dropout": "nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 1))",
    "layer norm": "nn.Sequential(nn.Linear(8, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, 1))",
    "group norm": "nn.Sequential(nn.Linear(8, 16), nn.GroupNorm(4, 16), nn.ReLU(), nn.Linear(16, 1))",
    "buffers": "Scaled()",
    "residual block": "Residual()",
    "embeddings": "FeatureEmbedding()",
    "conv and batch norm": "Conv()",
}
CLASSES = '''
class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.full((8,), 0.5))
        self.net = nn.Linear(8, 1)

    def forward(self, x):
        return self.net(x * self.scale)


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.block, self.head = nn.Linear(8, 16), nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 16)), nn.Linear(16, 1)

    def forward(self, x):
        h = self.embed(x)
        return self.head(h + self.block(h))


class FeatureEmbedding(nn.Module):
    """A tabular transformer's front: each feature's value scales that feature's embedding."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(8, 4)
        self.register_buffer("positions", torch.arange(8), persistent=False)
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        return self.head((x[:, :, None] * self.embedding(self.positions)).flatten(1))


class Conv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.norm, self.head = nn.Conv1d(1, 4, 3, padding=1), nn.BatchNorm1d(4), nn.Linear(32, 1)

    def forward(self, x):
        return self.head(torch.relu(self.norm(self.conv(x[:, None, :]))).flatten(1))
'''


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package `kinds` of factories under tmp_path, imported afresh for each test."""
    package = tmp_path / "kinds"
    package.mkdir()
    (package / "__init__.py").write_text("")
    factories = "".join(f"\n\ndef {_name(kind)}(shape):\n    return {made}\n" for kind, made in KINDS.items())
    (package / "layers.py").write_text(HEADER + CLASSES + factories)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    for name in [name for name in sys.modules if name.split(".")[0] == "kinds"]:
        del sys.modules[name]


def _name(kind: str) -> str:
    return kind.replace(" ", "_")


def _spec(path: Path, factory: str) -> ModelSpec:
    return ModelSpec(hidden=4, lr=1e-2, factory=factory, path=str(path))


def _write(path: Path, module: str, source: str) -> None:
    (path / "kinds" / f"{module}.py").write_text(HEADER + source)


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_of_layer_is_checked_counted_and_timed(models: Path, kind: str) -> None:
    spec = _spec(models, f"kinds.layers:{_name(kind)}")
    check_spec(spec, (8,), 0, "8 features", epoch_batches(50, [16, 32]))
    counted = profile.profile(spec, (8,), 50, [16, 32], 0)
    net = build(spec, (8,), 0)
    assert counted.buffer_bytes == sum(b.numel() * b.element_size() for b in net.buffers())
    assert (
        counted.state_bytes
        == counted.param_bytes + counted.grad_bytes + counted.buffer_bytes + counted.optimizer_state_bytes
    )
    assert (counted.param_dtype, counted.output_dtype, counted.compute_dtype) == ("fp32", "fp32", "fp32")
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(50, 8, generator=generator), torch.randint(0, 2, (50,), generator=generator).float()
    variants = steps.cpu_variants(["dataloader", "fastpath"], batch_size=16)
    records, _ = training.measure_training_job(x, y, variants, repeat=0, seed=3, spec=spec, warmup_steps=2, epochs=2)
    for r in records:
        assert r.finite and r.steps == 4 and r.same_final_weights_across_variants
        assert (r.param_dtype, r.output_dtype) == ("fp32", "fp32")


def test_batch_norm_is_counted_in_training_mode_at_the_timings_batch_sizes(models: Path) -> None:
    """A batch of one (the old profile's output probe) is what BatchNorm refuses in training."""
    counted = profile.profile(_spec(models, "kinds.layers:batch_norm_and_dropout"), (8,), 64, [2, 32], 0)
    assert counted.output_shape == (1,) and [r.batch_size for r in counted.table] == [2, 32]
    # running mean and variance of 16 channels (fp32) and the step count (int64)
    assert counted.buffer_bytes == 2 * 16 * 4 + 8


def test_a_last_batch_of_one_is_refused_at_parse_time_naming_rows_and_batch_size(models: Path) -> None:
    spec = _spec(models, "kinds.layers:batch_norm_and_dropout")
    assert epoch_batches(65, [16, 32]) == [
        (1, "the last batch of an epoch: data.benchmark.rows 65 in batches of 16 leave 1"),
        (16, "timing.batch_sizes 16"),
        (32, "timing.batch_sizes 32"),
    ]
    with pytest.raises(ModelError) as refused:
        check_spec(spec, (8,), 0, "8 features", epoch_batches(65, [16, 32]))
    message = str(refused.value)
    assert message.startswith("config key model.factory: kinds.layers:batch_norm_and_dropout failed a training step")
    assert "data.benchmark.rows 65 in batches of 16 leave 1" in message and "batch normalisation" in message
    assert "\n" not in message


PRECISIONS = {
    "fp64 parameters": ("nn.Linear(8, 1).double()", "parameters fp64"),
    "fp16 parameters": ("nn.Linear(8, 1).half()", "parameters fp16"),
    "fp64 inside": ("Widen()", "compute mixed: fp32, fp64"),
}
WIDEN = '''
class Widen(nn.Module):
    """fp32 parameters, fp64 work: the input and the weights cast up inside the forward."""

    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 1)

    def forward(self, x):
        return (x.double() @ self.net.weight.double().T).float() + self.net.bias
'''


@pytest.mark.parametrize("case", list(PRECISIONS))
def test_a_model_that_is_not_fp32_is_refused_naming_what_it_computes_in(models: Path, case: str) -> None:
    made, words = PRECISIONS[case]
    _write(models, "precisions", WIDEN + f"\n\ndef build(shape):\n    return {made}\n")
    spec = _spec(models, "kinds.precisions:build")
    for run in (
        lambda: check_spec(spec, (8,), 0, "8 features", epoch_batches(32, [16])),
        lambda: profile.profile(spec, (8,), 32, [16], 0),  # the job refuses it too
    ):
        with pytest.raises(ModelError) as refused:
            run()
        message = str(refused.value)
        assert message.startswith("config key model.factory: kinds.precisions:build computes in another precision")
        assert words in message, message


def test_a_record_of_an_fp32_variant_with_lower_precision_outputs_is_refused() -> None:
    assert training_record().output_dtype == "fp32"
    with pytest.raises(ValueError, match="an fp32 variant returned bf16 outputs"):
        training_record(output_dtype="bf16")


def test_dtype_labels() -> None:
    assert dtype_label([torch.float32, torch.float32]) == "fp32"
    assert dtype_label([torch.bfloat16, torch.float32, torch.int64]) == "mixed: bf16, fp32"
    assert dtype_label([torch.int64]) == "none"


SETTINGS = {
    "threads in the factory": ("torch.set_num_threads(7)\n    return nn.Linear(8, 1)", "set torch's threads to 7"),
    "default dtype": (
        "torch.set_default_dtype(torch.float64)\n    return nn.Linear(8, 1).float()",
        "set torch's default dtype to torch.float64 (was torch.float32)",
    ),
    "deterministic algorithms": (
        "torch.use_deterministic_algorithms(True)\n    return nn.Linear(8, 1)",
        "set torch's deterministic algorithms to True (was False)",
    ),
    "matmul precision": (
        "torch.set_float32_matmul_precision('medium')\n    return nn.Linear(8, 1)",
        "set torch's float32 matmul precision to medium",
    ),
    "default device": (
        "torch.set_default_device('cpu')\n    return nn.Linear(8, 1)",
        "set torch's default device to cpu (was none)",
    ),
    "autocast": (
        "torch.set_autocast_enabled('cpu', True)\n    return nn.Linear(8, 1)",
        "set torch's CPU autocast to True (was False)",
    ),
    "threads in the forward": ("return Busy()", "kinds.settings:build's model, run on a batch, set torch's threads"),
}
BUSY = """
class Busy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 1)

    def forward(self, x):
        torch.set_num_threads(5)
        return self.net(x)
"""


@pytest.mark.parametrize("case", list(SETTINGS))
def test_a_model_that_changes_torchs_settings_is_refused_in_one_line_and_they_are_put_back(
    models: Path, case: str, restore_logging_and_threads: None
) -> None:
    body, words = SETTINGS[case]
    _write(models, "settings", BUSY + f"\n\ndef build(shape):\n    {body}\n")
    before = conditions()
    with pytest.raises(ModelError) as refused:
        check_spec(_spec(models, "kinds.settings:build"), (8,), 0, "8 features", epoch_batches(32, [16]))
    message = str(refused.value)
    assert message.startswith("config key model.factory: kinds.settings:build") and words in message, message
    assert "\n" not in message and "docs/own-model.md" in message
    assert conditions() == before


def test_a_factory_that_changes_a_setting_and_raises_leaves_the_settings_as_they_were(
    models: Path, restore_logging_and_threads: None
) -> None:
    _write(models, "raising", "\n\ndef build(shape):\n    torch.set_num_threads(3)\n    raise KeyError('width')\n")
    before = conditions()
    with pytest.raises(ModelError, match="raised KeyError"):
        check_spec(_spec(models, "kinds.raising:build"), (8,), 0, "8 features", epoch_batches(32, [16]))
    assert conditions() == before


def test_a_model_the_jobs_cannot_copy_is_refused_naming_the_factory(models: Path) -> None:
    _write(
        models,
        "locked",
        "import threading\n\n\nclass Locked(nn.Linear):\n    def __init__(self):\n        super().__init__(8, 1)\n"
        "        self.lock = threading.Lock()\n\n\ndef build(shape):\n    return Locked()\n",
    )
    with pytest.raises(ModelError) as refused:
        check_spec(_spec(models, "kinds.locked:build"), (8,), 0, "8 features", epoch_batches(32, [16]))
    assert str(refused.value).startswith("config key model.factory: kinds.locked:build cannot be copied (TypeError")
