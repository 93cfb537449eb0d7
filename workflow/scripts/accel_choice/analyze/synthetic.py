"""Draw synthetic runs: a cell's jobs of epochs, or one thread count's job table, from a design's components.

The components are analyze.variance's (job, interaction, drift, round, epoch) and its slow tail. A design may
instead carry measured jobs (`Blocks`): all that happened inside each job, resampled whole. The harness
(analyze.calibration and the modules beside it) counts what the project's functions make of these draws.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from accel_choice.analyze import variance


@dataclass(frozen=True, eq=False)
class Blocks:
    """Measured jobs' insides, [job, thread count, variant, round] log times less each cell's median (variance.within_job).

    A synthetic job takes one measured job's whole block: its rounds, drift, epoch noise, slow epochs and bursts,
    with their order in time. Each cell's median over its rounds is 0, so a drawn cell's true time is its scale.
    A normal model of these (`Design`'s sds and tail) missed runs whose slow epochs come in bursts over several
    variants of a round (docs/statistics.md, "Resampled jobs")."""

    logs: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        """Return the measured run's thread counts and cells a thread count: the shape the harness draws."""
        return self.logs.shape[1], self.logs.shape[2]

    def draw(self, rng: np.random.Generator, jobs: int, variants: int, rounds: int) -> np.ndarray:
        """Return `jobs` blocks [job, variant, round], each a different measured job's.

        `variants` is every thread count's cells (one job timed them all) or one thread count's (each thread
        count's block then a job of its own). `rounds` must be the measured jobs' rounds. A block drawn twice in
        one run would make two of its jobs agree more than real jobs do: its intervals would be too narrow."""
        n, counts, cells, measured = self.logs.shape
        if rounds != measured:
            raise ValueError(f"the resampled jobs timed {measured} rounds: a design of {rounds} cannot draw them")
        if variants == counts * cells:
            pool = self.logs.reshape(n, counts * cells, measured)
        elif variants == cells:
            pool = self.logs.reshape(n * counts, cells, measured)
        else:
            raise ValueError(
                f"the resampled jobs timed {counts} thread counts × {cells} cells: a design of {variants} cannot draw them"
            )
        if jobs > len(pool):
            what = "jobs" if len(pool) == n else f"thread-count blocks ({n} jobs × {counts})"
            raise ValueError(
                f"the components hold {len(pool)} measured {what}: a draw of {jobs} at once (a pair draws both "
                "runs' jobs together) would repeat some; draw fewer jobs (--jobs, --most), or pool more runs' "
                "jobs with variance_components.py"
            )
        return pool[rng.choice(len(pool), size=jobs, replace=False)]


@dataclass(frozen=True)
class Design:
    """The shape of a synthetic run's cells."""

    jobs: int
    sigma_job: float  # log-normal spread of a job's speed (0.2: one job 20 % off is usual)
    epochs: int = 5
    sigma_epoch: float = 0.05
    sigma_interaction: float = 0.0  # a cell's own job-to-job deviation, beyond the job's shift
    sigma_drift: float = 0.0  # the job's trend per round, every cell alike
    sigma_round: float = 0.0  # a round's shift beyond the trend, every cell alike
    tail_share: float = 0.0  # the share of epochs that run slow beyond the bulk (analyze.variance.tail)
    tail_log: float = 0.0  # a slow epoch's mean log excess beyond the bulk's edge (an exponential's mean)
    tail_clip: float = 3.0  # the bulk's edge, in the epoch's own sds
    blocks: Blocks | None = None  # measured jobs' insides: drawn instead of drift, round, epoch and tail


DEFAULT_SHAPE = (2, 10)  # the default configuration's thread counts and cells a thread count (config/config.yaml)


def run_shape(design: Design) -> tuple[int, int]:
    """Return the thread counts and cells a thread count to draw: the resampled jobs', else DEFAULT_SHAPE."""
    return DEFAULT_SHAPE if design.blocks is None else design.blocks.shape


def sides(draw: Callable[[Design], Any], design: Design) -> tuple[Any, Any]:
    """Return two runs of `design`, `draw`n apart (job tables [job, variant, round], in lists as `draw` nests them).

    With measured jobs (`blocks`), one draw of twice the jobs is split in two, so that no measured job is in both
    runs, as two real runs share no process. Without, the two draws come one after the other."""
    if design.blocks is None:
        return draw(design), draw(design)
    both = draw(replace(design, jobs=2 * design.jobs))
    return _jobs(both, slice(None, design.jobs)), _jobs(both, slice(design.jobs, None))


def _jobs(tables: Any, part: slice) -> Any:
    """Return `part` of every job table's jobs, the tables nested in lists as drawn."""
    return tables[part] if isinstance(tables, np.ndarray) else [_jobs(t, part) for t in tables]


def slow_epochs(rng: np.random.Generator, design: Design, shape: tuple[int, ...], sigma: Any = None) -> np.ndarray:
    """Draw each epoch's log excess: 0, or with probability `tail_share` the bulk's edge plus an exponential.

    The edge is `tail_clip` times the epoch's sd (`sigma`, broadcast to `shape`; the design's where None), so a
    slow epoch lands beyond the bulk, as analyze.variance.tail found it; the exponential's mean is `tail_log`."""
    if not design.tail_share:
        return np.zeros(shape)
    edge = design.tail_clip * (design.sigma_epoch if sigma is None else sigma)
    slow = rng.random(shape) < design.tail_share
    return np.where(slow, edge + rng.exponential(design.tail_log, shape), 0.0)


def simulate(rng: np.random.Generator, design: Design, scale: float = 1.0) -> list[list[float]]:
    """Simulate one cell: `design.jobs` jobs of `design.epochs` epoch times, true median `scale`."""
    effects = rng.lognormal(0.0, design.sigma_job, size=design.jobs)
    return [list(scale * effect * rng.lognormal(0.0, design.sigma_epoch, size=design.epochs)) for effect in effects]


def simulate_jobs(
    rng: np.random.Generator,
    design: Design,
    variants: int,
    scales: np.ndarray | None = None,
    spread: np.ndarray | None = None,
) -> np.ndarray:
    """Simulate one thread count's job table [job, variant, round] of epoch times.

    One thread count's job table [job, variant, round] of epoch times; cell v's true median `scales[v]` (1).

    Round k runs the variants forward when k + repeat is even, else backward (measure.training.epoch_order),
    so the drift reaches each epoch at its own time: the round, plus its place in the round's order.
    With `design.blocks`, each job's insides are a measured job's instead, cell v's times `spread[v]` (1)."""
    jobs, rounds = design.jobs, design.epochs
    scales = np.ones(variants) if scales is None else np.asarray(scales, dtype=float)
    if design.blocks is not None:
        inside = design.blocks.draw(rng, jobs, variants, rounds)
        logs = (
            rng.normal(0.0, design.sigma_job, (jobs, 1, 1))
            + rng.normal(0.0, design.sigma_interaction, (jobs, variants, 1))
            + inside * (1.0 if spread is None else np.asarray(spread, dtype=float)[None, :, None])
        )
        return scales[None, :, None] * np.exp(logs)
    place = np.empty((jobs, variants, rounds))
    for j in range(jobs):
        for k in range(rounds):
            order = np.arange(variants) if (k + j) % 2 == 0 else np.arange(variants)[::-1]
            place[j, order, k] = k + (np.arange(variants) + 0.5) / variants - 0.5
    place -= (rounds - 1) / 2
    logs = (
        rng.normal(0.0, design.sigma_job, (jobs, 1, 1))
        + rng.normal(0.0, design.sigma_interaction, (jobs, variants, 1))
        + rng.normal(0.0, design.sigma_drift, (jobs, 1, 1)) * place
        + rng.normal(0.0, design.sigma_round, (jobs, 1, rounds))
        + rng.normal(0.0, design.sigma_epoch, (jobs, variants, rounds))
        + slow_epochs(rng, design, (jobs, variants, rounds))
    )
    return scales[None, :, None] * np.exp(logs)


# A fitted draw gives the measured bulk and tail back to within this share of each, or it is no fit. A gap is taken
# over at least FIT_FLOORS (epoch sd, tail share, tail log excess): a tail of a few epochs is noise in its last digit.
FIT_TOLERANCE = 0.10
FIT_FLOORS = (0.005, 0.01, 0.02)
FIT_ROUNDS = 10  # simulated-moment steps tried; the best one is kept
MOST_SLOW = 0.5  # a tail is at most half the epochs: beyond that it is the bulk


def _misfit(found: Any, wanted: Any, floors: Any) -> float:
    """Return the largest relative gap between a measured value and its draws' estimate, each over its floor."""
    return max(abs(got - want) / max(want, floor) for got, want, floor in zip(found, wanted, floors))


@dataclass(frozen=True)
class TailFit:
    """Draw parameters whose draws, estimated again, give the measured bulk and tail (simulated moments)."""

    sigma_epoch: float
    tail_share: float
    tail_log: float
    found: tuple[float, float, float]  # the kept draws' estimates: epoch sd, tail share, tail log excess
    wanted: tuple[float, float, float]  # what analyze.variance measured, in the same order

    @property
    def misfit(self) -> float:
        """Return the largest relative gap between a measured value and its draws' estimate (over FIT_FLOORS)."""
        return _misfit(self.found, self.wanted, FIT_FLOORS)

    @property
    def converged(self) -> bool:
        """Say whether the kept draw gives every measured value back within FIT_TOLERANCE."""
        return self.misfit <= FIT_TOLERANCE


def fit_tail(
    design: Design, variants: int, tables: int, epoch_sd: float, share: float, log_size: float, seed: int = 17
) -> TailFit:
    """Fit the draw's epoch sd and tail to what analyze.variance measured (`epoch_sd`, `share`, `log_size`).

    The estimators do not see a draw's parameters as drawn: a slow epoch may stay inside the edge and widen the
    bulk, and normal rounds put some epochs past it. So the parameters are moved, each by the ratio of the measured
    value to the draws' estimate (`tables` job tables of `design`'s shape), FIT_ROUNDS times; the step whose
    estimates came closest is kept. Where even that one misses by more than FIT_TOLERANCE (`TailFit.converged`),
    no draw of this model gives the runs back: cells unlike each other, say, which one epoch sd cannot draw."""
    rng = np.random.default_rng(seed)
    wanted = (epoch_sd, share, log_size)
    drawn, best = list(wanted), None
    for _ in range(FIT_ROUNDS):
        trial = replace(design, sigma_epoch=drawn[0], tail_share=drawn[1], tail_log=drawn[2])
        made = [simulate_jobs(rng, trial, variants) for _ in range(tables)]
        slow = variance.tail(made, trial.tail_clip)
        found = (variance.components(made, trial.tail_clip).epoch.sd, slow.share, slow.log_size)
        fit = TailFit(sigma_epoch=drawn[0], tail_share=drawn[1], tail_log=drawn[2], found=found, wanted=wanted)
        if best is None or fit.misfit < best.misfit:
            best = fit
        for k, (want, got) in enumerate(zip(wanted, found)):
            drawn[k] = drawn[k] * want / got if got > 0 and want > 0 else drawn[k]
        drawn[1] = min(drawn[1], MOST_SLOW)
    assert best is not None
    return best


RESAMPLED = "resampled"  # the components' key of a resampled draw (`BlocksFit.to_json`)
MOMENTS = (*variance.NAMES, "share", "log_size")  # what a draw must give back: every component, then the tail
MOMENT_FLOORS = dict.fromkeys(variance.NAMES, 0.01) | dict(zip(("epoch", "share", "log_size"), FIT_FLOORS))
FIT_TABLES = 200  # drawn tables a fit step estimates from


def moments(tables: list[np.ndarray], clip: float) -> dict[str, float]:
    """Return what analyze.variance estimates from job tables: each component's sd (the bulk's), the tail's two."""
    found = variance.components(tables, clip)
    slow = variance.tail(tables, clip)
    return {c.name: c.sd for c in found.all()} | {"share": slow.share, "log_size": slow.log_size}


@dataclass(frozen=True)
class BlocksFit:
    """The job and interaction sds to draw beside measured jobs' blocks, and how closely the draws give the runs back."""

    sigma_job: float
    sigma_interaction: float
    found: dict[str, float]  # the kept draws' estimates, by MOMENTS
    wanted: dict[str, float]  # what analyze.variance measured

    @property
    def misfit(self) -> float:
        """Return the largest relative gap between a measured value and its draws' estimate (over MOMENT_FLOORS)."""
        return _misfit(*([d[k] for k in MOMENTS] for d in (self.found, self.wanted, MOMENT_FLOORS)))

    @property
    def converged(self) -> bool:
        """Say whether the kept draw gives every measured value back within FIT_TOLERANCE."""
        return self.misfit <= FIT_TOLERANCE

    def to_json(self, blocks: Blocks) -> dict:
        """Return the draw as the components' RESAMPLED entry: the blocks (5 decimals), the sds, the fit."""
        return {
            "blocks": np.round(blocks.logs, 5).tolist(),
            "sigma_job": self.sigma_job,
            "sigma_interaction": self.sigma_interaction,
            "found": self.found,
            "wanted": self.wanted,
            "misfit": self.misfit,
        }


def fit_blocks(
    blocks: Blocks, wanted: dict[str, float], jobs: int, clip: float, tables: int = FIT_TABLES, seed: int = 19
) -> BlocksFit:
    """Fit the job and interaction sds drawn beside measured jobs' blocks to what analyze.variance measured.

    The blocks hold each job's insides with its cells' medians taken out, so the job effect and each cell's own
    job-to-job deviation are drawn normal (`jobs` a table, the measured count). Each variance starts from the
    measured one plus the rounds' or epochs' share of a mean, and moves by the gap between the measured value's
    square and the draws' estimate's, FIT_ROUNDS times; the closest step is kept. The rest (drift, round, epoch,
    tail) is not fitted: it comes back from the blocks, or the draw is no fit (`converged`)."""
    rng = np.random.default_rng(seed)
    _, _, cells, rounds = blocks.logs.shape
    # A block's cells sit at their medians: the epochs' and rounds' share of the measured means is drawn here.
    variances = {
        "job": wanted["job"] ** 2 + wanted["round"] ** 2 / rounds,
        "interaction": wanted["interaction"] ** 2 + wanted["epoch"] ** 2 / rounds,
    }
    best = None
    for _ in range(FIT_ROUNDS):
        sd = {name: float(np.sqrt(v)) for name, v in variances.items()}
        trial = Design(jobs, sd["job"], rounds, sigma_interaction=sd["interaction"], blocks=blocks)
        found = moments([simulate_jobs(rng, trial, cells) for _ in range(tables)], clip)
        fit = BlocksFit(sigma_job=sd["job"], sigma_interaction=sd["interaction"], found=found, wanted=dict(wanted))
        if best is None or fit.misfit < best.misfit:
            best = fit
        for name in variances:  # each variance moved by the gap its estimate left
            variances[name] = max(variances[name] + wanted[name] ** 2 - found[name] ** 2, 0.0)
    assert best is not None
    return best


def _refused(kind: str, misfit: float) -> None:
    if misfit > FIT_TOLERANCE:
        raise ValueError(
            f"these components' {kind} gives their measured bulk and tail back only to within "
            f"{misfit:.0%} (at most {FIT_TOLERANCE:.0%}): no draw of this model is these runs, so the "
            "harness's figures would not be theirs"
        )


def drawn_tail(components: dict) -> dict:
    """Return the epoch sd and tail to draw from components: their fitted draw, else the measured values.

    Where the tail holds a fitted draw (`fit_tail`, written by variance_components.py --clip), the epoch sd and the
    tail are drawn as fitted, so the draws' estimates give the measured values back. A draw that missed them by
    more than FIT_TOLERANCE is refused: the harness's figures would not be these runs'."""
    slow = components.get("tail", {"share": 0.0, "log_size": 0.0})
    drawn = slow.get(
        "draw", {"epoch_sd": components["epoch"]["sd"], "tail_share": slow["share"], "tail_log": slow["log_size"]}
    )
    _refused("fitted draw", drawn.get("misfit", 0.0))
    return drawn


def design_from(components: dict, jobs: int, epochs: int) -> Design:
    """Return the design drawn from components (variance.to_json's `components`: each name's sd, the tail),
    its jobs resampled where the components hold them (RESAMPLED), else the epoch sd and tail as `drawn_tail` gives them."""
    sd = {name: components[name]["sd"] for name in variance.NAMES}
    resampled = components.get(RESAMPLED)
    if resampled is not None:
        _refused("resampled draw", resampled["misfit"])
        blocks = Blocks(np.asarray(resampled["blocks"], dtype=float))
        if epochs != blocks.logs.shape[3]:
            raise ValueError(
                f"these components' resampled jobs timed {blocks.logs.shape[3]} epochs a cell, not {epochs}"
            )
        return Design(
            jobs=jobs,
            sigma_job=resampled["sigma_job"],
            epochs=epochs,
            sigma_epoch=sd["epoch"],  # the scale of each cell's factor (analyze.calibration_rows.Cells)
            sigma_interaction=resampled["sigma_interaction"],
            blocks=blocks,
        )
    slow = components.get("tail", {"clip": 3.0})
    drawn = drawn_tail(components)
    return Design(
        jobs=jobs,
        sigma_job=sd["job"],
        epochs=epochs,
        sigma_epoch=drawn["epoch_sd"],
        sigma_interaction=sd["interaction"],
        sigma_drift=sd["drift"],
        sigma_round=sd["round"],
        tail_share=drawn["tail_share"],
        tail_log=drawn["tail_log"],
        tail_clip=slow["clip"],
    )
