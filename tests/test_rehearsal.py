"""measure.rehearsal: untimed updates before a timed epoch leave nothing the epoch could see."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from accel_choice.measure.model import state_sha256
from accel_choice.measure.rehearsal import REHEARSAL_STEPS, rehearse
from accel_choice.measure.steps import Step, Trainer, train_epoch
from accel_choice.records.model import ModelSpec

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"))]


def _batches(device: str, steps: int = 12, size: int = 16) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(steps * size, 8, generator=generator)
    y = (x[:, :1] > 0).float()
    return [(x[i : i + size].to(device), y[i : i + size].to(device)) for i in range(0, len(x), size)]


def _trainer(device: str, optimizer: str, precision: str = "fp32") -> Trainer:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 1))
    spec = ModelSpec(hidden=16, lr=0.05, optimizer=optimizer)
    update = Step(precision=precision, scaler=precision == "fp16")
    trainer = Trainer(model.to(device), spec, torch.device(device), update)
    trainer.prime()
    return trainer


def _optimizer_state(trainer: Trainer) -> list[dict[str, object]]:
    return [
        {key: value.clone() if torch.is_tensor(value) else value for key, value in state.items()}
        for state in trainer.optimizer.state.values()
    ]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("optimizer", ["adam", "adamw", "sgd"])
def test_a_rehearsal_puts_back_weights_buffers_optimizer_gradients_and_random_streams(device, optimizer):
    trainer = _trainer(device, optimizer)
    weights, state = state_sha256(trainer.model), _optimizer_state(trainer)
    random = torch.get_rng_state()
    assert rehearse(trainer, _batches(device)) == REHEARSAL_STEPS
    assert state_sha256(trainer.model) == weights  # BatchNorm's running statistics too
    after = _optimizer_state(trainer)
    assert [sorted(s) for s in after] == [sorted(s) for s in state]
    for old, new in zip(state, after):
        for key, value in old.items():
            assert torch.equal(new[key], value) if torch.is_tensor(value) else new[key] == value
    assert all(p.grad is None for p in trainer.model.parameters())
    assert torch.equal(torch.get_rng_state(), random)  # dropout's masks in the epoch are the ones it would draw


@pytest.mark.parametrize("device", DEVICES)
def test_the_epoch_after_a_rehearsal_does_the_same_work_as_without(device):
    """The same final weights, loss and steps, with dropout and BatchNorm: the rehearsal changed nothing timed."""
    results = []
    for steps in (0, REHEARSAL_STEPS, 100):
        trainer = _trainer(device, "adam")
        torch.manual_seed(11)  # the epoch's dropout masks
        ran = rehearse(trainer, _batches(device), steps)
        epoch = train_epoch(trainer, _batches(device), 12)
        results.append((ran, state_sha256(trainer.model), epoch.steps, epoch.last_loss))
    assert [r[0] for r in results] == [0, REHEARSAL_STEPS, 12]  # at most the batches there are
    assert len({r[1:] for r in results}) == 1


@pytest.mark.parametrize("device", DEVICES)
def test_a_rehearsal_puts_the_scalers_scale_and_growth_back(device):
    trainer = _trainer(device, "adam", precision="fp16")
    trainer.scaler.update(new_scale=1024.0)  # a scale the rehearsal's updates would grow or halve
    scale = trainer.scaler.state_dict()
    rehearse(trainer, _batches(device), 12)
    assert trainer.scaler.state_dict() == scale


@pytest.mark.parametrize("device", DEVICES)
def test_an_epochs_memory_peak_starts_after_the_rehearsal(device, monkeypatch):
    """The rehearsal's copies of weights and state are not the epoch's own memory (records' epoch_memory_bytes)."""
    from accel_choice.measure import datagen, steps, training

    calls: list[str] = []
    monkeypatch.setattr(training, "reset_peak_memory", lambda d: calls.append("reset"))
    rehearsed = training.rehearse
    monkeypatch.setattr(training, "rehearse", lambda *a, **k: calls.append("rehearse") or rehearsed(*a, **k))
    data = datagen.make_benchmark(64, 8, 0.2, 1)
    x, y = torch.from_numpy(data.features.copy()), torch.from_numpy(data.target.copy())
    (variant,) = (
        steps.cpu_variants(["fastpath"], batch_size=16)
        if device == "cpu"
        else steps.gpu_variants(["fp32"], ["resident"], batch_size=16)
    )
    spec = ModelSpec(hidden=8, lr=1e-3)
    y = training.targets(spec, y)
    prepared = training.prepare_variant(variant, x, y, grad_scaler=True, seed=1, spec=spec, warmup_steps=2)
    result = training.time_epoch(prepared)
    assert calls == ["reset", "rehearse", "reset"] and result["rehearsal_steps"] == 4  # 64 rows: 4 batches of 16


class _Counted(nn.Module):
    """A model with a non-persistent buffer its forward changes, and a record of the mode each forward ran in."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        self.register_buffer("seen", torch.zeros(()), persistent=False)
        self.modes: list[bool] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen += 1
        self.modes.append(self.training)
        return self.body(x)


@pytest.mark.parametrize("device", DEVICES)
def test_a_rehearsal_trains_as_the_epoch_does_and_puts_back_buffers_a_state_dict_leaves_out(device):
    model = _Counted().to(device).eval()  # a factory may hand the model over in eval mode
    trainer = Trainer(model, ModelSpec(hidden=16, lr=0.05), torch.device(device))
    trainer.prime()
    assert rehearse(trainer, _batches(device)) == REHEARSAL_STEPS
    assert model.modes == [True] * REHEARSAL_STEPS  # the timed epoch trains: so does its rehearsal
    assert float(model.seen) == 0.0


def test_the_planner_refuses_grid_epochs_timed_cold_beside_rehearsed_ones():
    """analyze.planner_fit: an archived grid job (read as rehearsal_steps 0) is not fitted with rehearsed ones."""
    import dataclasses

    from builders_planner import grid_job

    from accel_choice.analyze.planner_fit import one_rehearsal

    rehearsed = list(grid_job().records)
    assert one_rehearsal(rehearsed) == rehearsed
    cold = [dataclasses.replace(r, rehearsal_steps=0) for r in rehearsed]
    assert one_rehearsal(cold) == cold
    with pytest.raises(ValueError, match="mix epochs timed cold"):
        one_rehearsal(rehearsed + cold)
