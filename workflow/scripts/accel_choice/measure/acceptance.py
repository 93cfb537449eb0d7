"""The GPU acceptance: the project's own GPU measurement path, run once on a machine, checked.

    python workflow/scripts/gpu_acceptance.py              # on a CUDA machine: torch, numpy, pydantic
    python workflow/scripts/gpu_acceptance.py --device cpu # the same code on the CPU (CI)

It needs neither Snakemake nor pandas, pyarrow, scipy, matplotlib or pytest (docs/gpu.md): every
precision (fp32, fp16, bf16) × placement (resident, streamed, prefetched) at two batch sizes through
measure.training, a compiled variant and a CUDA-graph one (reduce-overhead), the copies (pageable and
pinned, two batch sizes), the probe, each epoch's own memory against the formulas' bound, and no host
synchronisation inside a warmed training step (torch's sync debug mode "error"). Each check holds or fails naming what was found;
an exception inside a check fails that check, not the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch

from accel_choice.analyze import theory
from accel_choice.io import envinfo
from accel_choice.measure import compile_counts, datagen, devices, placement, steps, training, transfer
from accel_choice.measure import model as models
from accel_choice.measure.job import Envelope
from accel_choice.records.acceptance import AcceptanceReport, Check, VariantRun
from accel_choice.records.model import ModelSpec
from accel_choice.records.training import TrainingRecord, Variant

SEED = 20261020
FEATURES, HIDDEN = 32, 48
SPEC = ModelSpec(hidden=HIDDEN, lr=1e-3)
WIDTHS = (FEATURES, HIDDEN, 1)
PRECISIONS, PLACEMENTS = ("fp32", "fp16", "bf16"), ("resident", "streamed", "prefetched")
BATCH_SIZES = (32, 512)
ROWS = {"cuda": 65_536, "cpu": 1_024}  # the CPU run checks the code, not the speed: small
WARMUP, EPOCHS = 10, 2
NO_DEVICE_ADVICE = "Run it on the GPU machine; --device cpu runs the same code on this CPU."
# Every timing job of the acceptance: one repeat, fp16 with its GradScaler, the acceptance's model.
JOB = dict(repeat=0, grad_scaler=True, seed=SEED, spec=SPEC, warmup_steps=WARMUP, epochs=EPOCHS)
# The caching allocator rounds every block up to 512 bytes; an epoch holds a few dozen small blocks
# (parameters, gradients, Adam's state, scalars) beyond what the formulas count.
ROUNDING_ALLOWANCE = 64 * 512


def steps_without_host_sync(
    x: torch.Tensor, y: torch.Tensor, precision: str, batch_size: int, device: torch.device
) -> torch.Tensor:
    """Run warmed resident training steps of `precision` under torch's sync debug mode.

    Warmed resident training steps of `precision`, run under torch's sync debug mode "error" on CUDA
    (any call that waits on the GPU raises): the per-step losses, on the device. A per-step sync (a
    GradScaler reading its inf flag with .item(), a loss read on the host) would time one precision
    with a cost the others do not pay. Off CUDA the same loop runs with nothing to synchronise."""
    (variant,) = steps.gpu_variants([precision], ["resident"], batch_size=batch_size, device=device.type)
    update = steps.step_of(variant, grad_scaler=True)
    x_device, y_device = x.to(device), y.reshape(-1, 1).to(device)
    trainer = steps.Trainer(models.build(SPEC, (x.shape[1],), SEED).to(device), SPEC, device, update)
    batches = list(placement.batches("resident", "fastpath", x, y, batch_size, True, SEED, device, x_device, y_device))
    for xb, yb in batches[:3]:  # Adam's state, the scaler's, first kernels: before the check
        trainer.step(xb, yb)
    devices.synchronize(device)
    losses = torch.full((len(batches),), float("nan"), device=device)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.set_sync_debug_mode("error")
    try:
        for index, (xb, yb) in enumerate(batches):
            losses[index] = trainer.step(xb, yb)
    finally:
        if cuda:
            torch.cuda.set_sync_debug_mode(0)
    devices.synchronize(device)
    return losses


# What a VariantRun copies from its TrainingRecord as it is.
COPIED = ("precision", "placement", "batch_size", "compiled", "compile_mode", "graph_breaks", "samples_per_s")


def variant_run(r: TrainingRecord, rows: int) -> VariantRun:
    return VariantRun(
        **{name: getattr(r, name) for name in COPIED},
        epoch_ms=r.epoch_s * 1e3,
        finite=r.finite,
        epoch_memory_bytes=r.epoch_memory_bytes,
        memory_bound_bytes=theory.memory_bound_bytes(WIDTHS, r.batch_size, rows, r.placement == "resident"),
    )


def memory_problems(runs: Sequence[VariantRun], rows: int) -> list[str]:
    """Return each run whose epoch's own memory is below what it must hold or above the formulas' bound."""
    adam, problems = theory.adam_fp32_bytes(WIDTHS), []
    for run in runs:
        floor = adam + (theory.input_bytes(rows, FEATURES + 1) if run.placement == "resident" else 0)
        held = run.epoch_memory_bytes
        if held is None or not floor <= held <= run.memory_bound_bytes + ROUNDING_ALLOWANCE:
            problems.append(f"{run.precision}/{run.placement} B={run.batch_size}: {held} not in [{floor}, bound]")
    return problems


def run(device_type: str, rows: int | None = None, compile_variant: bool = True) -> AcceptanceReport:
    """Run the acceptance on `device_type` ("cuda" or "cpu"); every check recorded, none raising."""
    started = time.perf_counter()
    cuda = device_type == "cuda"
    device = devices.require("cuda", "the GPU acceptance", NO_DEVICE_ADVICE) if cuda else torch.device(device_type)
    rows = rows or ROWS[device_type]
    data = datagen.make_benchmark(rows, FEATURES, 0.2, SEED)
    x, y = torch.from_numpy(data.features.copy()), torch.from_numpy(data.target.copy())
    checks: list[Check] = []
    runs: list[VariantRun] = []

    def check(name: str, test: Callable[[], tuple[bool, str]]) -> None:
        try:
            passed, found = test()
        except Exception as error:  # a check that cannot run has failed: say how
            passed, found = False, f"{type(error).__name__}: {error}"[:400]
        checks.append(Check(name=name, passed=passed, found=found))

    probed = devices.probe()
    check(
        "probe",
        lambda: (
            (bool(probed.cuda_devices), ", ".join(d.name for d in probed.cuda_devices))
            if cuda
            else (True, f"CPU run; CUDA visible: {probed.cuda_available}")
        ),
    )

    def timed(variants: list[Variant], compile_mode: str = "default") -> list[TrainingRecord]:
        """Run one timing job of `variants` (a GradScaler for fp16), its runs kept for the memory check."""
        records, _ = training.measure_training_job(x, y, variants, compile_mode=compile_mode, **JOB)
        runs.extend(variant_run(r, rows) for r in records)
        return records

    def variants() -> tuple[bool, str]:
        measured = []
        for batch_size in BATCH_SIZES:
            measured += timed(steps.gpu_variants(PRECISIONS, PLACEMENTS, batch_size=batch_size, device=device.type))
        broken = [f"{r.precision}/{r.placement} B={r.batch_size}" for r in measured if not r.finite]
        same_start = len({r.initial_weights_sha256 for r in measured}) == 1
        return not broken and same_start, f"{len(measured)} variants; non-finite: {broken or 'none'}"

    check("every precision and placement trains, finite, from the same weights", variants)

    def compiled(mode: str) -> tuple[bool, str]:
        """Check fp32 resident at the larger batch size compiled in `mode`.

        fp32 resident at the larger batch size compiled in `mode`, whole (no graph break); in a CUDA-graph
        mode on CUDA every graph captured and replayed (none skipped), on a CPU every one skipped (no graphs)."""
        skipped = compile_counts.cudagraph_skips()
        (record,) = timed(
            steps.gpu_variants(["fp32"], ["resident"], [True], batch_size=BATCH_SIZES[-1], device=device.type), mode
        )
        skipped = compile_counts.cudagraph_skips() - skipped
        graphs = mode in compile_counts.CUDA_GRAPH_MODES
        graphs_as_expected = not graphs or (skipped == 0 if cuda else skipped > 0)
        passed = record.finite and record.compiled and record.graph_breaks == 0 and graphs_as_expected
        found = f"epoch {record.epoch_s * 1e3:.3f} ms, {record.graph_breaks} graph breaks"
        return passed, found + (f", {skipped} graphs run without CUDA graphs" if graphs else "")

    if compile_variant:
        check("a compiled variant (torch.compile) trains whole", lambda: compiled("default"))
        check(
            "CUDA graphs (reduce-overhead) captured and replayed"
            if cuda
            else "reduce-overhead: no CUDA graphs on a CPU",
            lambda: compiled("reduce-overhead"),
        )
    if cuda:
        check("each epoch's own memory within the formulas' bound", lambda: _memory_bound(runs, rows))
    check("no host sync inside a warmed training step", lambda: _no_host_sync(x, y, device))
    check("copies: pageable and pinned, two batch sizes", lambda: _copies(x, device))
    return AcceptanceReport(
        device=device.type,
        rows=rows,
        seconds=time.perf_counter() - started,
        probe=probed,
        runs=tuple(runs),
        checks=tuple(checks),
        environment=envinfo.quick_environment(SEED),
    )


def _memory_bound(runs: Sequence[VariantRun], rows: int) -> tuple[bool, str]:
    problems = memory_problems([r for r in runs if not r.compiled], rows)
    return not problems, "; ".join(problems) or "every variant between its floor and its bound"


def _no_host_sync(x: torch.Tensor, y: torch.Tensor, device: torch.device) -> tuple[bool, str]:
    finite = {
        p: bool(torch.isfinite(steps_without_host_sync(x, y, p, BATCH_SIZES[-1], device)).all()) for p in PRECISIONS
    }
    how = "sync debug mode error" if device.type == "cuda" else "the same loop; nothing to synchronise on a CPU"
    return all(finite.values()), f"{how}; finite: {finite}"


def _copies(x: torch.Tensor, device: torch.device) -> tuple[bool, str]:
    made = transfer.measure_transfers(x, BATCH_SIZES, device, passes=5, repeat=0, envelope=Envelope(seed=SEED))
    kinds = {(c.what, c.memory) for c in made.copies}
    wanted = {(f"batch B={b}", memory) for b in BATCH_SIZES for memory in ("pageable", "pinned")}
    if device.type != "cuda":
        wanted = {(what, memory) for what, memory in wanted if memory == "pageable"}  # pinning is CUDA's
    rates = [c.gb_per_s for c in made.copies]
    ok = wanted <= kinds and all(rate is not None and rate > 0 for rate in rates)
    return ok, f"{len(made.copies)} copies, {min(rates):.2f}-{max(rates):.2f} GB/s"


def table(report: AcceptanceReport) -> str:
    """Render the report as text: one line per variant, then one per check."""
    lines = [
        f"accel-choice GPU acceptance on {report.device} ({report.rows} rows, {report.seconds:.1f} s)",
        f"{'precision':<9} {'placement':<10} {'B':>4} {'compiled':<15} {'epoch ms':>9} {'samples/s':>11} "
        f"{'finite':<6} {'epoch MiB':>9} {'bound MiB':>9}",
    ]
    for r in report.runs:
        held = "-" if r.epoch_memory_bytes is None else f"{r.epoch_memory_bytes / 2**20:.2f}"
        lines.append(
            f"{r.precision:<9} {r.placement:<10} {r.batch_size:>4} {r.compile_mode or 'no':<15} {r.epoch_ms:>9.3f} "
            f"{r.samples_per_s:>11.0f} {str(r.finite):<6} {held:>9} {r.memory_bound_bytes / 2**20:>9.2f}"
        )
    lines.append("")
    lines += [f"{'PASS' if c.passed else 'FAIL'}  {c.name}: {c.found}" for c in report.checks]
    failed = [c.name for c in report.checks if not c.passed]
    lines.append("all checks passed" if not failed else f"FAILED: {'; '.join(failed)}")
    return "\n".join(lines)
