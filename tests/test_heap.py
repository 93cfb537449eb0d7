"""The timed rounds run in a frozen heap (measure.heap): no full collection of the job's objects inside an epoch."""

from __future__ import annotations

import gc

import pytest
import torch

from accel_choice.measure import steps, training
from accel_choice.measure.heap import frozen_heap
from accel_choice.records.model import ModelSpec


def test_frozen_heap_freezes_what_is_alive_and_unfreezes_after() -> None:
    assert gc.get_freeze_count() == 0  # nothing of the test run's own is frozen
    with frozen_heap() as frozen:
        assert frozen > 0 and gc.get_freeze_count() > 0  # an object freed since leaves the count
        with pytest.raises(RuntimeError, match="frozen already"):
            with frozen_heap():
                pass
        assert gc.get_freeze_count() > 0  # the refused inner block thawed nothing
    assert gc.get_freeze_count() == 0


def test_frozen_heap_unfreezes_when_the_block_fails() -> None:
    try:
        with frozen_heap():
            raise KeyError("a timed epoch failed")
    except KeyError:
        pass
    assert gc.get_freeze_count() == 0


def test_every_timed_epoch_runs_in_a_frozen_heap_and_the_warm_ups_do_not(monkeypatch) -> None:
    generator = torch.Generator().manual_seed(4)
    x, y = torch.randn(64, 5, generator=generator), (torch.rand(64, generator=generator) > 0.5).float()
    frozen: dict[str, list[int]] = {"warm-up": [], "epoch": []}
    real_epoch, real_warm = training.time_epoch, training.warm_up

    def epoch(prepared):
        frozen["epoch"].append(gc.get_freeze_count())
        return real_epoch(prepared)

    def warm(*args, **kwargs):
        frozen["warm-up"].append(gc.get_freeze_count())
        return real_warm(*args, **kwargs)

    monkeypatch.setattr(training, "time_epoch", epoch)
    monkeypatch.setattr(training, "warm_up", warm)
    training.measure_training_job(
        x,
        y,
        steps.cpu_variants(["fastpath", "dataloader"], batch_size=16, threads=1),
        repeat=0,
        seed=4,
        spec=ModelSpec(hidden=4, lr=1e-3),
        warmup_steps=1,
        epochs=2,
    )
    assert frozen["warm-up"] == [0, 0] and len(frozen["epoch"]) == 4 and min(frozen["epoch"]) > 0
    assert gc.get_freeze_count() == 0
