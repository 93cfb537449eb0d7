"""timing.compile: torch.compile variants beside the eager ones, their compilation paid in the warm-up
(every batch shape, the partial last batch's too) and kept out of the timed epochs."""

from __future__ import annotations

import torch

from accel_choice.analyze import aggregate
from accel_choice.measure import steps, training
from accel_choice.render import formatting
from accel_choice.records.model import ModelSpec

ROWS, BATCH = 100, 32  # three full batches and a partial one of 4
SPEC = ModelSpec(hidden=8, lr=1e-2)


def data() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(ROWS, 6, generator=generator), (torch.rand(ROWS, generator=generator) > 0.5).float()


def counting_backend(calls: list[int]):
    def backend(graph_module, example_inputs):
        calls.append(len(example_inputs))
        return graph_module.forward

    return backend


def test_compiled_variants_are_cells_of_their_own_with_the_same_work(monkeypatch) -> None:
    monkeypatch.setattr(steps, "COMPILE_BACKEND", "eager")  # dynamo's tracing without code generation: fast
    torch._dynamo.reset()
    x, y = data()
    variants = steps.cpu_variants(["fastpath"], [False, True], batch_size=BATCH)
    records, _ = training.measure_training_job(x, y, variants, repeat=0, seed=1, spec=SPEC, warmup_steps=2, epochs=2)
    assert [(r.loader, r.compiled) for r in sorted(records, key=lambda r: r.compiled)] == [
        ("fastpath", False),
        ("fastpath", True),
    ]
    assert all(r.finite and r.samples == ROWS and r.steps == 4 for r in records)
    assert len({r.initial_weights_sha256 for r in records}) == 1
    compiled = next(r for r in records if r.compiled)
    # A compiled variant warms up over a whole epoch, every batch shape compiled before the clock.
    assert compiled.warmup_steps >= 4
    assert all(r.same_final_weights_across_variants for r in records)


def test_no_compilation_happens_inside_a_timed_epoch(monkeypatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(steps, "COMPILE_BACKEND", counting_backend(calls))
    torch._dynamo.reset()
    x, y = data()
    y = y.reshape(-1, 1)
    (variant,) = steps.cpu_variants(["fastpath"], [True], batch_size=BATCH)
    prepared = training.prepare_variant(variant, x, y, grad_scaler=True, seed=1, spec=SPEC, warmup_steps=2)
    compiled_in_warm_up = len(calls)
    assert compiled_in_warm_up >= 2  # the full batches' graph and the partial last batch's (or a dynamic one)
    timed = training.time_epoch(prepared)
    assert len(calls) == compiled_in_warm_up, "a timed epoch compiled again"
    assert timed["epoch"].samples == ROWS and timed["evaluation"].samples == ROWS


class Breaking(torch.nn.Module):
    """A model whose forward dynamo cannot trace whole: `print` breaks its graph."""

    def __init__(self, features: int):
        super().__init__()
        self.layer = torch.nn.Linear(features, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.layer(x)
        print("", end="")
        return hidden * 1.0


def test_a_compiled_record_names_its_mode_and_the_graph_breaks_its_job_met(monkeypatch) -> None:
    monkeypatch.setattr(steps, "COMPILE_BACKEND", "eager")
    torch._dynamo.reset()
    x, y = data()
    variants = steps.cpu_variants(["fastpath"], [False, True], batch_size=BATCH)
    records, _ = training.measure_training_job(x, y, variants, repeat=0, seed=1, spec=SPEC, warmup_steps=2, epochs=1)
    eager, compiled = sorted(records, key=lambda r: r.compiled)
    assert (eager.compile_mode, eager.graph_breaks) == (None, None)
    assert (compiled.compile_mode, compiled.graph_breaks) == ("default", 0)  # the MLP compiles whole

    torch._dynamo.reset()
    monkeypatch.setattr(training, "build", lambda spec, shape, seed: torch.manual_seed(seed) and Breaking(shape[0]))
    (variant,) = steps.cpu_variants(["fastpath"], [True], batch_size=BATCH)
    (broken,), _ = training.measure_training_job(x, y, [variant], repeat=0, seed=1, spec=SPEC, warmup_steps=2)
    assert broken.graph_breaks >= 1
    (cell,) = aggregate.aggregate_training([broken], ROWS)
    assert cell.graph_breaks == broken.graph_breaks
    assert f"**{cell.graph_breaks} graph break(s)**" in formatting.cell_flags(cell)


def test_the_compile_mode_reaches_torch_compile(monkeypatch) -> None:
    seen: list[object] = []
    real = torch.compile

    def compile_(model, **options):
        seen.append(options.get("mode"))
        return real(model, backend="eager")

    monkeypatch.setattr(steps.torch, "compile", compile_)
    torch._dynamo.reset()
    x, y = data()
    (variant,) = steps.cpu_variants(["fastpath"], [True], batch_size=BATCH)
    (record,), _ = training.measure_training_job(
        x, y, [variant], repeat=0, seed=1, spec=SPEC, warmup_steps=2, compile_mode="reduce-overhead"
    )
    assert record.compile_mode == "reduce-overhead" and set(seen) == {"reduce-overhead"}
    steps.Trainer(torch.nn.Linear(6, 1), SPEC, torch.device("cpu"), steps.Step(compiled=True))
    assert seen[-1] is None  # "default": torch's own default, no mode passed
