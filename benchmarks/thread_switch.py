"""Can one process time several torch thread counts, or must each have its own? (issue 45, item 1)

Two designs time the same fast-path epochs of the default workload (the textbook MLP on the seeded
8,192 x 32 benchmark matrix) at 1 and 2 threads:

- `separate`: one process per thread count and repeat, as the workflow's CPU timing jobs do now;
- `switched`: one process per repeat that calls torch.set_num_threads between rounds, each thread
  count warmed up after its first switch, the rounds interleaved (1 2, 2 1, ...).

For each thread count it prints the geometric mean of the processes' median epochs under both designs
and their ratio, switched/separate, with a Welch t interval (analyze.job_intervals). Each ratio is
`equivalent` when its whole interval lies within 1 +/- --tolerance, `differs` when it lies wholly
outside 1 +/- tolerance, else `undecided` (too few processes to tell). Switching is harmless only where
every ratio is equivalent. It also prints the 2-thread / 1-thread ratio each design gives: paired
inside the switched processes, Welch across the separate ones.

    .venv/bin/python benchmarks/thread_switch.py [--repeats 5] [--epochs 5] [--batch-sizes 32 512]

Run it on a quiet machine: it is itself a timing measurement (about 2 minutes with the defaults).

`--within` tests the same question inside processes, where the job effect cancels (difference in differences).
Every process times its thread count's cells alone for `--epochs` rounds (phase A), then `--epochs` rounds with a
filler epoch after each cell (phase B). In a `switched` process the filler runs at the other thread count (its own
warm-up first), as in a job that times both; in a `control` process it runs at the same count, as in a job of its
own. Each process gives phase B over phase A per cell; switched over control is the switch's own effect.

    .venv/bin/python benchmarks/thread_switch.py --within [--repeats 10] [--epochs 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "workflow" / "scripts"
sys.path.insert(0, str(LIBRARY))

SEED = 20261020  # config/config.yaml's seed
THREADS = (1, 2)


def _workload() -> tuple:
    """Return the default workload: the seeded 8,192 x 32 benchmark matrix as (x, y) and the textbook MLP's spec."""
    import torch

    from accel_choice.measure import datagen
    from accel_choice.measure.model import targets
    from accel_choice.records.model import ModelSpec

    matrix = torch.from_numpy(datagen.make_benchmark(8192, 32, 0.2, SEED).matrix)  # the target is the last column
    spec = ModelSpec(hidden=48, lr=1e-3)
    return matrix[:, :-1].contiguous(), targets(spec, matrix[:, -1]), spec


def _prepared(threads: int, workload: tuple, batch_sizes: list[int], warmup: int) -> list:
    """Set torch's threads and warm up the fast path at each batch size there (its own warm-up per count)."""
    import torch

    from accel_choice.measure import steps
    from accel_choice.measure.training import prepare_variant

    x, y, spec = workload
    torch.set_num_threads(threads)
    return [
        prepare_variant(v, x, y, grad_scaler=False, seed=SEED, spec=spec, warmup_steps=warmup)
        for b in batch_sizes
        for v in steps.cpu_variants(["fastpath"], batch_size=b, threads=threads)
    ]


def worker(threads: list[int], batch_sizes: list[int], epochs: int, warmup: int) -> dict[str, list[float]]:
    """Time `epochs` fast-path epochs per batch size at each thread count, switching between rounds."""
    import torch

    from accel_choice.measure.training import time_epoch

    workload = _workload()
    prepared: dict[int, list] = {}
    times: dict[str, list[float]] = {}
    for round_ in range(epochs):
        order = threads if round_ % 2 == 0 else threads[::-1]
        for t in order:
            torch.set_num_threads(t)
            if t not in prepared:  # each thread count's own warm-up, after its first switch
                prepared[t] = _prepared(t, workload, batch_sizes, warmup)
            for p in prepared[t]:
                result = time_epoch(p)
                times.setdefault(f"{t}:{p.variant.batch_size}", []).append(result["epoch"].seconds)
    return times


def within_worker(target: int, switch: bool, batch_sizes: list[int], epochs: int, warmup: int) -> dict[str, float]:
    """Return each cell's median epoch in phase B over phase A, at `target` threads (see the module's text)."""
    import torch

    from accel_choice.measure.training import time_epoch

    workload = _workload()
    cells = _prepared(target, workload, batch_sizes, warmup)
    phases: dict[str, list[list[float]]] = {"A": [[] for _ in cells], "B": [[] for _ in cells]}
    for round_ in range(epochs):
        for i in range(len(cells)) if round_ % 2 == 0 else reversed(range(len(cells))):
            phases["A"][i].append(time_epoch(cells[i])["epoch"].seconds)
    filler_threads = 3 - target if switch else target
    fillers = _prepared(filler_threads, workload, batch_sizes, warmup)
    for round_ in range(epochs):
        for i in range(len(cells)) if round_ % 2 == 0 else reversed(range(len(cells))):
            torch.set_num_threads(target)
            phases["B"][i].append(time_epoch(cells[i])["epoch"].seconds)
            torch.set_num_threads(filler_threads)
            time_epoch(fillers[i])
    return {
        f"{target}:{c.variant.batch_size}": statistics.median(phases["B"][i]) / statistics.median(phases["A"][i])
        for i, c in enumerate(cells)
    }


def _worker_output(flag: str, value: str, args: argparse.Namespace) -> dict:
    """Run one worker process (`flag` `value`, the shared options) and return what it printed last, as JSON."""
    command = [sys.executable, __file__, flag, value, "--epochs", str(args.epochs), "--warmup", str(args.warmup)]
    command += ["--batch-sizes", *map(str, args.batch_sizes)]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def within(args: argparse.Namespace) -> None:
    """Run the `--within` design: switched and control processes interleaved, then switched over control."""
    from accel_choice.analyze.job_intervals import ratio_interval

    found: dict[tuple[str, bool], list[list[float]]] = {}
    for r in range(args.repeats):
        for target in THREADS if r % 2 == 0 else THREADS[::-1]:
            for switch in (False, True) if (r // 2) % 2 == 0 else (True, False):
                for key, ratio in _worker_output("--within-worker", f"{target},{int(switch)}", args).items():
                    found.setdefault((key, switch), []).append([ratio])
    print(f"{args.repeats} processes a design and thread count, {args.epochs} rounds a phase, fast path, 8,192 x 32")
    print("| threads | B | control: B / A | switched: B / A | switched / control (95 %) | verdict |")
    print("|---|---|---|---|---|---|")
    verdicts = []
    for key in sorted({k for k, _ in found}, key=lambda k: tuple(map(int, k.split(":")))):
        t, b = key.split(":")
        control, switched = found[(key, False)], found[(key, True)]
        ratio = ratio_interval(control, switched, level=0.95)
        verdicts.append(verdict(ratio.low, ratio.high, args.tolerance))
        mean_c = statistics.geometric_mean(v[0] for v in control)
        mean_s = statistics.geometric_mean(v[0] for v in switched)
        print(
            f"| {t} | {b} | {mean_c:.3f} | {mean_s:.3f} | {ratio.point:.3f} ({ratio.low:.3f}-{ratio.high:.3f}) "
            f"| {verdicts[-1]} |"
        )
    print()
    print(overall_line(verdicts, args.tolerance))


def verdict(low: float, high: float, tolerance: float) -> str:
    """Equivalent (the interval within 1 +/- tolerance), differs (wholly outside it), or undecided."""
    if 1 - tolerance <= low and high <= 1 + tolerance:
        return "equivalent"
    if high < 1 - tolerance or low > 1 + tolerance:
        return "differs"
    return "undecided"


def overall_line(verdicts: list[str], tolerance: float) -> str:
    """Say switching is harmless where every ratio is equivalent, differs where one differs, else undecided."""
    overall = "harmless" if set(verdicts) == {"equivalent"} else "differs" if "differs" in verdicts else "undecided"
    return f"switching threads inside a process: {overall} (tolerance ±{tolerance:.0%})"


def run(threads: list[int], args: argparse.Namespace) -> dict[str, list[float]]:
    return _worker_output("--worker", ",".join(map(str, threads)), args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 512])
    parser.add_argument("--tolerance", type=float, default=0.03, help="a ratio within 1 +/- this is harmless")
    parser.add_argument("--within", action="store_true", help="the design inside processes (see the module's text)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--within-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker([int(t) for t in args.worker.split(",")], args.batch_sizes, args.epochs, args.warmup)))
        return
    if args.within_worker:
        target, switch = map(int, args.within_worker.split(","))
        print(json.dumps(within_worker(target, bool(switch), args.batch_sizes, args.epochs, args.warmup)))
        return
    if args.within:
        within(args)
        return

    from accel_choice.analyze.job_intervals import ratio_interval

    separate: dict[str, list[list[float]]] = {}
    switched: dict[str, list[list[float]]] = {}
    for r in range(args.repeats):  # the designs interleaved, repeat by repeat
        for t in THREADS if r % 2 == 0 else THREADS[::-1]:
            for key, values in run([t], args).items():
                separate.setdefault(key, []).append(values)
        for key, values in run(list(THREADS if r % 2 == 0 else THREADS[::-1]), args).items():
            switched.setdefault(key, []).append(values)

    print(f"{args.repeats} processes a design and thread count, {args.epochs} epochs each, fast path, 8,192 x 32")
    print("| threads | B | separate (ms) | switched (ms) | switched / separate (95 %) | verdict |")
    print("|---|---|---|---|---|---|")
    verdicts = []
    for key in sorted(separate, key=lambda k: tuple(map(int, k.split(":")))):
        t, b = key.split(":")
        ratio = ratio_interval(separate[key], switched[key])
        verdicts.append(verdict(ratio.low, ratio.high, args.tolerance))
        sep = statistics.geometric_mean(statistics.median(v) for v in separate[key]) * 1e3
        sw = statistics.geometric_mean(statistics.median(v) for v in switched[key]) * 1e3
        print(
            f"| {t} | {b} | {sep:.2f} | {sw:.2f} | {ratio.point:.3f} ({ratio.low:.3f}-{ratio.high:.3f}) | {verdicts[-1]} |"
        )
    print()
    print("| B | 2 / 1 threads, separate (Welch) | 2 / 1 threads, switched (paired) |")
    print("|---|---|---|")
    for b in args.batch_sizes:
        welch = ratio_interval(separate[f"1:{b}"], separate[f"2:{b}"])
        paired = ratio_interval(switched[f"1:{b}"], switched[f"2:{b}"], paired=True)
        print(
            f"| {b} | {welch.point:.3f} ({welch.low:.3f}-{welch.high:.3f}) "
            f"| {paired.point:.3f} ({paired.low:.3f}-{paired.high:.3f}) |"
        )
    print()
    print(overall_line(verdicts, args.tolerance))


if __name__ == "__main__":
    main()
