"""Loaders yield identical batches; a timing job records what it claims and checks its invariants."""

from __future__ import annotations

import dataclasses
import math
import statistics

import pytest
import torch
from torch import nn

from accel_choice import records
from accel_choice.measure import datagen, finite, loaders, model, steps, training
from accel_choice.measure.rehearsal import REHEARSAL_STEPS
from accel_choice.records.model import ModelSpec

SEED = 20261020
ROWS, FEATURES, HIDDEN, LR, WARMUP, EPOCHS = 200, 8, 8, 1e-3, 3, 3
SPEC = ModelSpec(hidden=HIDDEN, lr=LR)


# --- loaders ----------------------------------------------------------------------------


def _tiny(rows: int = 100, features: int = 3):
    x = torch.arange(rows * features, dtype=torch.float32).reshape(rows, features)
    y = torch.arange(rows, dtype=torch.float32).reshape(-1, 1)
    return x, y


def _epoch(loader):
    return [(xb.clone(), yb.clone()) for xb, yb in loader]


@pytest.mark.parametrize("shuffle", [True, False])
def test_loaders_yield_identical_batches_with_partial_last(shuffle):
    x, y = _tiny()
    a = _epoch(loaders.make_loader("dataloader", x, y, 32, shuffle, SEED))
    b = _epoch(loaders.make_loader("fastpath", x, y, 32, shuffle, SEED))
    assert [len(xb) for xb, _ in a] == [32, 32, 32, 4]
    assert [len(xb) for xb, _ in b] == [32, 32, 32, 4]
    for (xa, ya), (xb, yb) in zip(a, b):
        assert xa.dtype == xb.dtype == torch.float32
        assert torch.equal(xa, xb)
        assert torch.equal(ya, yb)
    order = torch.cat([yb for _, yb in b]).flatten().long()
    assert sorted(order.tolist()) == list(range(100))  # every row exactly once
    # rows stay paired with their labels
    xs = torch.cat([xb for xb, _ in b])
    assert torch.equal(xs, x[order])
    if shuffle:
        assert order.tolist() != list(range(100))
    else:
        assert order.tolist() == list(range(100))


def test_loaders_with_flat_target():
    x, y = _tiny(50)
    a = _epoch(loaders.make_loader("dataloader", x, y.flatten(), 16, True, 3))
    b = _epoch(loaders.make_loader("fastpath", x, y.flatten(), 16, True, 3))
    assert all(torch.equal(ya, yb) and torch.equal(xa, xb) for (xa, ya), (xb, yb) in zip(a, b))
    assert len(a) == len(b) == 4


def test_loader_seed_changes_order_and_is_reproducible():
    x, y = _tiny()
    first = _epoch(loaders.make_loader("fastpath", x, y, 32, True, 1))
    again = _epoch(loaders.make_loader("fastpath", x, y, 32, True, 1))
    other = _epoch(loaders.make_loader("fastpath", x, y, 32, True, 2))
    assert all(torch.equal(a[1], b[1]) for a, b in zip(first, again))
    assert not all(torch.equal(a[1], b[1]) for a, b in zip(first, other))


def test_fastpath_len_counts_partial_batch():
    x, y = _tiny()
    assert len(loaders.make_loader("fastpath", x, y, 32, True, 0)) == 4
    assert len(loaders.make_loader("dataloader", x, y, 32, True, 0)) == 4


def test_unknown_loader_raises():
    x, y = _tiny()
    with pytest.raises(ValueError, match="unknown loader 'numpy'"):
        loaders.make_loader("numpy", x, y, 32, True, 0)


def test_loaders_diverge_only_after_the_first_pass():
    """The documented scope: identical first pass (the timed epoch); RandomSampler's extra draw shifts later ones."""
    x, y = _tiny()
    a = loaders.make_loader("dataloader", x, y, 32, True, SEED)
    b = loaders.make_loader("fastpath", x, y, 32, True, SEED)
    first_a, first_b = _epoch(a), _epoch(b)
    assert all(torch.equal(ya, yb) for (_, ya), (_, yb) in zip(first_a, first_b))
    second_a, second_b = _epoch(a), _epoch(b)
    assert not all(torch.equal(xa, xb) for (xa, _), (xb, _) in zip(second_a, second_b))


# --- timing job -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data():
    dataset = datagen.make_benchmark(ROWS, FEATURES, 0.2, SEED)
    return torch.from_numpy(dataset.features.copy()), torch.from_numpy(dataset.target.copy())


def _job(data, batch_size: int, repeat: int, loader_kinds=loaders.LOADERS):
    x, y = data
    return training.measure_training_job(
        x,
        y,
        steps.cpu_variants(loader_kinds, batch_size=batch_size),
        repeat=repeat,
        seed=SEED,
        spec=ModelSpec(hidden=HIDDEN, lr=LR),
        warmup_steps=WARMUP,
        epochs=EPOCHS,
    )[0]


@pytest.fixture(scope="module")
def job_b64_r0(data):
    return _job(data, 64, 0)


@pytest.fixture(scope="module")
def job_b64_r1(data):
    return _job(data, 64, 1)


@pytest.fixture(scope="module")
def job_b32_r0(data):
    return _job(data, 32, 0)


def test_job_has_one_record_per_loader(job_b64_r0):
    assert [r.loader for r in job_b64_r0] == ["dataloader", "fastpath"]
    assert [r.position_in_job for r in job_b64_r0] == [0, 1]
    assert all(r.repeat == 0 for r in job_b64_r0)


def test_odd_repeat_reverses_loader_order(job_b64_r1):
    assert [r.loader for r in job_b64_r1] == ["fastpath", "dataloader"]
    assert [r.position_in_job for r in job_b64_r1] == [0, 1]
    assert all(r.repeat == 1 for r in job_b64_r1)


@pytest.mark.parametrize("fixture", ["job_b64_r0", "job_b64_r1", "job_b32_r0"])
def test_record_counts_and_invariants(fixture, request):
    for r in request.getfixturevalue(fixture):
        b = r.batch_size
        assert r.samples == ROWS
        assert r.eval_samples == ROWS
        assert r.steps == math.ceil(ROWS / b)
        assert r.epoch_s > 0 and r.eval_s > 0 and r.epoch_cpu_s >= 0
        assert r.samples_per_s == pytest.approx(r.samples / r.epoch_s, rel=1e-12)
        assert dataclasses.asdict(r.invariants) == {
            "samples_eq_rows": True,
            "eval_samples_eq_rows": True,
            "steps_eq_ceil_rows_over_batch": True,
        }
        assert r.finite is True
        assert math.isfinite(r.final_loss) and math.isfinite(r.mean_train_loss) and math.isfinite(r.eval_loss)
        assert 0.0 <= r.eval_accuracy <= 1.0
        assert r.device == "cpu"
        assert r.warmup_steps == WARMUP
        assert r.warmup_first_step_s > 0 and r.warmup_steady_step_s > 0
        assert r.rehearsal_steps == min(
            REHEARSAL_STEPS, r.steps
        )  # untimed updates before each epoch, no more than it has


def test_steps_for_batch_32(job_b32_r0):
    assert {r.steps for r in job_b32_r0} == {7}  # 6 full batches and one of 8


def test_same_final_weights_across_variants(job_b64_r0, job_b64_r1, job_b32_r0):
    for job in (job_b64_r0, job_b64_r1, job_b32_r0):
        assert len({r.final_weights_sha256 for r in job}) == 1
        assert all(r.same_final_weights_across_variants is True for r in job)
    # the loader order does not change the result either
    assert job_b64_r0[0].final_weights_sha256 == job_b64_r1[0].final_weights_sha256


def test_training_changes_the_weights(job_b64_r0):
    r = job_b64_r0[0]
    assert r.final_weights_sha256 != r.initial_weights_sha256


def test_initial_weights_identical_across_batch_sizes_and_equal_fresh_model(job_b64_r0, job_b64_r1, job_b32_r0):
    fresh = model.state_sha256(model.build_model(FEATURES, HIDDEN, SEED))
    shas = {r.initial_weights_sha256 for job in (job_b64_r0, job_b64_r1, job_b32_r0) for r in job}
    assert shas == {fresh}
    assert model.state_sha256(model.build_model(FEATURES, HIDDEN, SEED + 1)) != fresh


def test_warm_up_does_not_touch_the_timed_model(data, job_b64_r0):
    """The timed epoch starts from the seeded weights and a fresh Adam: replaying it without a warm-up
    gives the same final weights bit for bit."""
    x, y = data
    y = y.reshape(-1, 1)
    net = model.build_model(FEATURES, HIDDEN, SEED)
    optimizer = model.make_optimizer(net, LR)
    loss_fn = nn.BCEWithLogitsLoss()
    for xb, yb in loaders.make_loader("fastpath", x, y, 64, True, SEED):
        optimizer.zero_grad(set_to_none=True)
        loss_fn(net(xb), yb).backward()
        optimizer.step()
    assert model.state_sha256(net) == job_b64_r0[0].final_weights_sha256


def test_warm_up_runs_on_a_copy():
    x, y = _tiny(40, 4)
    x = x / 100
    y = (y > 20).float()
    net = model.build_model(4, 5, 0)
    before = model.state_sha256(net)
    result = steps.warm_up(
        net, SPEC, steps.Step(), torch.device("cpu"), loaders.make_loader("fastpath", x, y, 16, True, 0), 7
    )
    assert result.steps == 7  # cycles past the 3 batches of one epoch
    assert result.first_step_s > 0 and result.steady_step_s > 0
    assert model.state_sha256(net) == before


def test_warm_up_also_runs_the_evaluation_on_at_most_its_steps_batches(monkeypatch):
    x, y = _tiny(40, 4)
    x = x / 100
    y = (y > 20).float()
    seen = []
    real = steps.evaluate

    def spy(trainer, batches):
        batches = list(batches)
        seen.append(len(batches))
        return real(trainer, batches)

    monkeypatch.setattr(steps, "evaluate", spy)
    net = model.build_model(4, 5, 0)
    loader = loaders.make_loader("fastpath", x, y, 8, False, 0)  # 5 batches
    steps.warm_up(net, SPEC, steps.Step(), torch.device("cpu"), loader, 3, eval_batches=loader)
    assert seen == [3]


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_priming_creates_the_optimizer_state_and_changes_no_result(precision):
    x, y = _tiny(40, 4)
    x = x / 100
    y = ((y > 20).float()).reshape(-1, 1)
    (variant,) = steps.gpu_variants([precision], ["host"], batch_size=16, device="cpu")
    update = steps.step_of(variant, grad_scaler=True)

    def epoch(primed):
        net = model.build_model(4, 5, 0)
        trainer = steps.Trainer(net, SPEC, torch.device("cpu"), update)
        if primed:
            before = model.state_sha256(net)
            trainer.prime()
            assert model.state_sha256(net) == before  # one Adam step on zero gradients moves nothing
            assert len(trainer.optimizer.state) == len(list(net.parameters()))
            assert all(float(s["step"]) == 0 for s in trainer.optimizer.state.values())
            assert all(p.grad is None for p in net.parameters())
            if update.scaler:
                assert trainer.scaler._scale is not None  # created before the clock, not in step 1
        result = steps.train_epoch(trainer, loaders.make_loader("fastpath", x, y, 16, True, 0), 3)
        return model.state_sha256(net), result.last_loss

    assert epoch(primed=True) == epoch(primed=False)  # the same trajectory, bit for bit


def test_the_optimizer_is_fused_on_the_cpu_and_on_cuda_and_its_implementation_is_named():
    """The same implementation on both sides of the comparison (issue 26): torch has fused Adam,
    AdamW and SGD for the CPU and CUDA; without a device, torch's default, named as such."""
    net = model.build_model(4, 5, 0)
    assert model.make_optimizer(net, LR).defaults["fused"] is None
    assert model.optimizer_impl(model.make_optimizer(net, LR)) == "Adam for-loop"
    for kind, name in (("adam", "Adam"), ("adamw", "AdamW"), ("sgd", "SGD")):
        cpu = model.make_optimizer(net, LR, torch.device("cpu"), kind)
        assert cpu.defaults["fused"] is True and model.optimizer_impl(cpu) == f"{name} fused"
    assert model.make_optimizer(net, LR, torch.device("cuda")).defaults["fused"] is True
    plain = torch.optim.Adam(net.parameters(), lr=LR, foreach=True)
    assert model.optimizer_impl(plain) == "Adam foreach"
    # a fused CPU step works: a gradient moves the weights
    fused = model.make_optimizer(net, LR, torch.device("cpu"))
    before = model.state_sha256(net)
    net(torch.randn(3, 4)).sum().backward()
    fused.step()
    assert model.state_sha256(net) != before


def test_the_start_up_runs_to_the_first_step_and_adds_each_later_variants_own_first_step(job_b64_r0):
    """The first variant warmed (loaders.LOADERS order: the DataLoader) carries the process's one-off
    start-up: from before the first device call to the end of its first warm-up step, less a steady
    step, so at least that step's excess; the next variant adds its own first step's excess."""
    first = next(r for r in job_b64_r0 if r.loader == loaders.LOADERS[0])
    later = next(r for r in job_b64_r0 if r.loader == loaders.LOADERS[1])
    assert first.startup_s >= first.warmup_first_step_s - first.warmup_steady_step_s
    assert later.startup_s == pytest.approx(
        first.startup_s + max(later.warmup_first_step_s - later.warmup_steady_step_s, 0.0), rel=1e-12
    )
    assert all(r.context_startup_s is None for r in job_b64_r0)  # no runtime to start on the CPU


def test_threads_and_loadavg_recorded(job_b64_r0):
    for r in job_b64_r0:
        assert r.threads == torch.get_num_threads()
        for loadavg in (r.loadavg_before, r.loadavg_after):
            assert isinstance(loadavg, tuple) and len(loadavg) == 3
            assert all(isinstance(v, float) and v >= 0 for v in loadavg)


def test_single_loader_job(data):
    measured = _job(data, 100, 0, ["fastpath"])
    assert len(measured) == 1
    assert measured[0].steps == 2
    assert measured[0].same_final_weights_across_variants is True


def test_a_cpu_job_times_every_batch_size_interleaved_and_compares_weights_within_one(data):
    """One CPU job per thread count and repeat: every batch size and loader in one process, in rounds over all
    of them; the same final weights are asked of the loaders of one batch size only (another takes other steps)."""
    x, y = data
    variants = [v for size in (32, 64) for v in steps.cpu_variants(loaders.LOADERS, batch_size=size)]
    measured, sentinel = training.measure_training_job(
        x, y, variants, repeat=1, seed=SEED, spec=ModelSpec(hidden=HIDDEN, lr=LR), warmup_steps=WARMUP, epochs=EPOCHS
    )
    assert sorted((r.batch_size, r.loader) for r in measured) == sorted((v.batch_size, v.loader) for v in variants)
    assert [r.position_in_job for r in measured] == [0, 1, 2, 3]  # repeat 1 starts its first round the other way
    assert [(r.batch_size, r.loader) for r in measured][0] == (64, "fastpath")
    assert all(r.same_final_weights_across_variants for r in measured)
    assert len({r.final_weights_sha256 for r in measured}) == 2  # one per batch size
    assert len(sentinel.seconds) == EPOCHS + 1  # at the start, after each round: around every variant's epochs
    with pytest.raises(ValueError, match="on one device"):
        training.measure_training_job(
            x,
            y,
            [variants[0], dataclasses.replace(variants[1], device="meta")],
            repeat=0,
            seed=SEED,
            spec=ModelSpec(hidden=HIDDEN, lr=LR),
            warmup_steps=WARMUP,
        )


def test_batch_over_the_rows_raises(data):
    with pytest.raises(ValueError, match=f"batch size {ROWS + 1} must be between 1 and the data's {ROWS} rows"):
        _job(data, ROWS + 1, 0)


@pytest.mark.parametrize("batch_size", [0, -32])
def test_batch_under_one_is_no_variant(data, batch_size):
    with pytest.raises(ValueError, match="batch_size\n  Input should be greater than or equal to 1"):
        _job(data, batch_size, 0)


def test_batch_equal_to_data_is_one_step(data):
    measured = _job(data, ROWS, 0, ["dataloader"])
    assert measured[0].steps == 1 and measured[0].samples == ROWS


# --- check_invariants on doctored records -----------------------------------------------


def _doctored(record, **changes):
    r = records.to_json(record)
    r.update(changes)
    return r


def test_check_invariants_accepts_real_record(job_b64_r0):
    assert all(training.check_invariants(records.to_json(job_b64_r0[0]), ROWS).values())


def test_check_invariants_samples_not_rows(job_b64_r0):
    r = job_b64_r0[0]
    bad = _doctored(r, samples=ROWS - 8)
    with pytest.raises(training.InvariantError, match="samples_eq_rows"):
        training.check_invariants(bad, ROWS)
    # the invariant is relative to the rows the job was given
    with pytest.raises(training.InvariantError):
        training.check_invariants(records.to_json(r), ROWS + 1)


def test_check_invariants_eval_samples(job_b64_r0):
    with pytest.raises(training.InvariantError, match="eval_samples_eq_rows"):
        training.check_invariants(_doctored(job_b64_r0[0], eval_samples=ROWS - 1), ROWS)


def test_check_invariants_steps(job_b64_r0):
    with pytest.raises(training.InvariantError, match="steps_eq_ceil_rows_over_batch"):
        training.check_invariants(_doctored(job_b64_r0[0], steps=3), ROWS)


def test_a_record_stores_the_raw_times_once_and_derives_its_median_and_throughput(job_b64_r0):
    """The textbook's second invariant, samples_per_s == samples / epoch_s, holds by construction: the JSON holds
    every timed epoch and evaluation, and no median or throughput beside them; one written beside them is refused."""
    r = job_b64_r0[0]
    written = records.to_json(r)
    assert {"epoch_s", "eval_s", "samples_per_s"}.isdisjoint(written)
    assert len(written["epoch_s_each"]) == len(written["eval_s_each"]) >= 1
    assert r.epoch_s == statistics.median(r.epoch_s_each) and r.eval_s == statistics.median(r.eval_s_each)
    assert r.samples_per_s == r.samples / r.epoch_s
    with pytest.raises(Exception, match="samples_per_s"):
        records.from_json(type(r), {**written, "samples_per_s": r.samples_per_s}, "a record")


def test_invariant_error_is_an_assertion_error():
    assert issubclass(training.InvariantError, AssertionError)


def test_a_model_never_finite_stops_its_first_timing_job_with_the_reason(data):
    """NaN in every sample: every variant is non-finite from its first timed step, so the job (and the
    run) stops with one line naming the keys, instead of every timing job recording NaNs."""
    x, y = data
    with pytest.raises(
        finite.NeverFinite,
        match=r"batch size 64: the loss or the weights were not finite from the first timed step in each of its 2 variant\(s\).*model\.lr",
    ):
        _job((torch.full_like(x, math.nan), y), 64, 0)


def test_a_model_that_diverges_after_finite_steps_is_measured_and_marked(data):
    x, y = data
    measured = training.measure_training_job(
        x,
        y,
        steps.cpu_variants(loaders.LOADERS, batch_size=64),
        repeat=0,
        seed=SEED,
        spec=ModelSpec(hidden=HIDDEN, lr=1e20),
        warmup_steps=WARMUP,
        epochs=EPOCHS,
    )[0]
    assert all(not r.finite and r.nonfinite_step >= 1 for r in measured)


def test_a_job_times_only_cpu_variants_beside_its_own():
    x, y = torch.randn(64, 8), torch.randint(0, 2, (64,)).float()
    cpu = steps.cpu_variants(["fastpath"], batch_size=16, threads=1)
    on_gpu = steps.gpu_variants(["fp32"], ["resident"], batch_size=16, device="cuda", threads=1)
    with pytest.raises(ValueError, match=r"a job times CPU variants beside its device's, got \['cuda'\]"):
        training.measure_training_job(
            x, y, cpu, repeat=0, seed=1, spec=ModelSpec(hidden=8, lr=1e-3), warmup_steps=1, beside=on_gpu
        )
