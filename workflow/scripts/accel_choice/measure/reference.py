"""The reference a training cell is checked against (issue 25, accuracy; GPU cells: issue 42 item 5): the
plain loop a user writes - `zero_grad`, forward, loss, `backward`, `step` over the same loader - timed by
`torch.utils.benchmark.Timer`, not by this project's clock, in the same timing job as the cell and
interleaved with its epochs (measure.training.measure_interleaved). A cell's epoch over its reference
(analyze.aggregate.versus_reference) is what the harness adds to, or takes from, the user's loop:
1.0 is an accurate harness, whatever the machine. The CPU cells have one, and so has a GPU job's eager fp32
resident variant: its model and data on the device, batches sliced there, as a user's loop has them.

The Timer reads `clock(device)`: the device synchronised, then `time.perf_counter()` (torch's own default
synchronises whichever accelerator `torch.accelerator` sees, CUDA included, and would start CUDA in a CPU
job on a GPU machine; this one touches only the variant's device).

The reference shares only the model, optimizer and loss factories and the loader with the pipeline
(the same work); its loop, its state and its clock are its own. Like a user's loop it trains on from
epoch to epoch (the pipeline starts each timed epoch from the seeded weights: the same shapes, so
the same work). `Timer.timeit(number)` warms up by running the statement twice, then times `number`
runs and reports their mean: a job times the reference once, in its middle round (measure.training),
beside the variant's own epoch of that round, as the mean of EPOCHS epochs (one epoch alone moved the
per-job ratio by up to 15 % on a quiet 2-core VM; the pipeline's side is a median of the job's epochs).

The Timer's two warm-up runs are short: WARM_BATCHES batches each, not whole epochs. The variant's kernels
are warm already; the loop's own first-call costs (Adam's state, the allocator) fall in the first batch.
Whole warm-up epochs were 2 of every 5 reference epochs: about 0.8 s of a default CPU job's 14 s.

`ReferenceStep` is another reference: one fixed training loop, the same in every CPU job whatever the
config, timed once per round after the sentinel's tick. A cell's job median over its median takes out
what the job's speed did to both (analyze.variance.job_tables with `relative`, issue 45 item 2).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
from torch.utils import benchmark

from accel_choice.measure.devices import synchronize
from accel_choice.measure.loaders import make_loader
from accel_choice.measure.threads import at_threads
from accel_choice.measure.model import build, build_model, make_loss, make_optimizer, outputs
from accel_choice.measure.placement import placed
from accel_choice.records.launch import launch_checked
from accel_choice.records.model import ModelSpec
from accel_choice.records.sentinel import ReferenceStepReadings
from accel_choice.records.training import Variant

EPOCHS = 3  # timed epochs of a reference per job (after the Timer's two warm-up runs)
# Timer.timeit(number) runs the statement max(number // 100, 2) times untimed first (torch 2.13); each of
# those runs is a short pass of WARM_BATCHES batches (tests/test_reference.py counts the passes).
TIMER_WARMUPS, WARM_BATCHES = max(EPOCHS // 100, 2), 4


def has_reference(variant: Variant) -> bool:
    """Say whether a variant has a plain-loop reference.

    Variants with a plain-loop reference: eager fp32 on host data (the CPU cells) and eager fp32 resident
    on the device (a GPU job's, records.launch.launch_checked). Autocast, a scaler, streamed or prefetched
    batches and a compiled forward are not a plain loop's."""
    on_host = variant.device == "cpu" and variant.placement == "host"
    return (on_host and variant.precision == "fp32" and not variant.compiled) or launch_checked(variant)


def clock(device: torch.device) -> Callable[[], float]:
    """`time.perf_counter()` read after the device's queued work is done (a no-op wait on the CPU)."""

    def read() -> float:
        synchronize(device)
        return time.perf_counter()

    return read


def plain_epoch(
    variant: Variant, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec, seed: int
) -> Callable[[int | None], None]:
    """Return the plain loop over `variant`'s loader: one epoch a call, or its first `batches` batches.

    The plain loop over `variant`'s loader (x, y host tensors, y as the loss takes it), on the variant's
    device: a resident variant's data copied there first, its batches sliced there."""
    device = torch.device(variant.device)
    model = build(spec, x.shape[1:], seed).to(device)
    optimizer = make_optimizer(model, spec.lr, device, spec.optimizer)
    loss_fn = make_loss(spec)
    loader = make_loader(variant.loader, *placed(variant, x, y), variant.batch_size, shuffle=True, seed=seed)
    model.train()

    def epoch(batches: int | None = None) -> None:
        for step, (xb, yb) in enumerate(loader):
            if step == batches:
                break
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(outputs(spec, model(xb), yb), yb)
            loss.backward()
            optimizer.step()

    return epoch


class Reference:
    """The plain loop of one variant under a Timer; `time()` is its seconds per epoch."""

    def __init__(self, variant: Variant, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec, seed: int):
        if not has_reference(variant):
            raise ValueError(f"{variant.name}: only eager fp32 host or resident variants have a plain-loop reference")
        loop = plain_epoch(variant, x, y, spec, seed)
        self.passes: list[int | None] = []  # each call's batches: WARM_BATCHES for a warm-up, None for an epoch
        self.started = 0  # where this time() call's passes begin

        def epoch() -> None:
            batches = WARM_BATCHES if len(self.passes) - self.started < TIMER_WARMUPS else None
            self.passes.append(batches)
            loop(batches)

        self.timer = benchmark.Timer(
            stmt="epoch()",
            timer=clock(torch.device(variant.device)),
            globals={"epoch": epoch},
            num_threads=variant.threads,
            label="plain loop",
            description=variant.name,
        )

    def time(self) -> float:
        """Return the plain loop's seconds per epoch.

        Seconds per epoch, the mean of EPOCHS (torch.utils.benchmark with `clock`: the device synchronised
        before each `time.perf_counter` read, none inside the loop; torch's threads set to the variant's).
        Stops the job if the Timer warmed up other than TIMER_WARMUPS times: a timed run would be a short pass."""
        self.started = len(self.passes)
        seconds = float(self.timer.timeit(number=EPOCHS).median)
        made = self.passes[self.started :]
        if made != [WARM_BATCHES] * TIMER_WARMUPS + [None] * EPOCHS:
            raise RuntimeError(
                f"torch.utils.benchmark.Timer ran the plain loop {len(made)} times for {EPOCHS} timed epochs, "
                f"not {TIMER_WARMUPS} warm-ups first: measure/reference.py's TIMER_WARMUPS no longer matches torch"
            )
        return seconds


# The fixed reference step (issue 45 item 2): one small training loop every CPU job times once per
# round. Fixed whatever the config says: the textbook MLP 32→48→1, Adam (lr 1e-3), BCE on logits,
# STEP_BATCH rows a step sliced in order from seeded data. Dispatch-bound like the default workload's step,
# which the matmul sentinel is not. It runs on one thread in every job, as the sentinel does: the same work
# whatever the job's thread counts (at two threads the pool's second thread spins, docs/measurement.md).
STEP_SHAPE = (32, 48, 1)  # features, hidden, outputs
STEP_ROWS, STEP_BATCH, STEP_COUNT = 2048, 32, 64  # seeded rows, rows a step, steps timed per round


class ReferenceStep:
    """The fixed reference step: `prepare()` builds and warms it up; `time()` times STEP_COUNT steps
    once, the model training on from pass to pass (the same shapes, the same work)."""

    def __init__(self, seed: int = 0, threads: int = 1):
        self.seed, self.threads, self.seconds = seed, threads, []
        self.prepared = False

    def prepare(self) -> None:
        """Build the seeded data, model and optimizer, and run one untimed pass.

        First-call costs (Adam's state, the allocator) stay out of every reading. A timing job calls it after its start-up is timed."""
        features, hidden, _ = STEP_SHAPE  # build_model's MLP has the one output
        generator = torch.Generator().manual_seed(self.seed)
        self.x = torch.randn(STEP_ROWS, features, generator=generator)
        self.y = (self.x @ torch.randn(features, 1, generator=generator) > 0).float()
        self.model = build_model(features, hidden, self.seed)  # seeded, as the timing's textbook MLP
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.loss_fn = torch.nn.BCEWithLogitsLoss()
        self.prepared = True
        self.rehearse()

    @staticmethod
    def workload() -> str:
        return "mlp {}-{}-{} adam bce: {} steps of B={}".format(*STEP_SHAPE, STEP_COUNT, STEP_BATCH)

    def _run(self) -> None:
        x, y, model, optimizer, loss_fn = self.x, self.y, self.model, self.optimizer, self.loss_fn
        for k in range(STEP_COUNT):
            start = (k * STEP_BATCH) % STEP_ROWS
            xb, yb = x[start : start + STEP_BATCH], y[start : start + STEP_BATCH]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()

    def rehearse(self) -> None:
        """Run one pass untimed at its thread count: prepare()'s warm-up, and what settles a switch to it
        (measure.threads.switch_to)."""
        if not self.prepared:
            raise ValueError("the reference step is rehearsed after prepare() only")
        with at_threads(self.threads):
            self._run()

    def time(self) -> float:
        """Seconds for STEP_COUNT steps, one reading (the CPU: no device to synchronise)."""
        if not self.prepared:
            raise ValueError("the reference step is timed after prepare() only")
        with at_threads(self.threads):  # the same threads in every job, whatever its cells' counts
            t0 = time.perf_counter()
            self._run()
            seconds = time.perf_counter() - t0
        self.seconds.append(seconds)
        return seconds

    def readings(self) -> ReferenceStepReadings:
        return ReferenceStepReadings(
            workload=self.workload(),
            threads=self.threads,
            seconds=tuple(self.seconds),
            median_s=statistics.median(self.seconds),
        )
