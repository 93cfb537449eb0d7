"""Where does the job effect come from? Layout randomness, slow drift, or the process itself (issue 45).

A cell's job medians spread between processes (the job effect) far more than its epochs spread inside one.
Two kinds of process-level chance could cause it, and each could be fixed for every job alike:

- Python's hash seed (PYTHONHASHSEED), which orders dicts and sets;
- address-space layout randomisation (ASLR), which places code, heap and stacks.

Four arms run the same worker: `default` (both random), `hash0` (PYTHONHASHSEED=0), `noaslr`
(`setarch -R`) and `both`. A worker times the default workload's fast path at B=32 and B=512,
1 thread, `--epochs` interleaved epochs each, and prints each cell's median. The arms take turns
within each repeat, their order turned round from repeat to repeat. Per arm and cell it prints the
log standard deviation of the processes' medians. If an arm fixes the cause, its spread falls.

It then splits the spread over all arms: the processes of one repeat run within seconds of each other.
Their mean's spread over the repeats is drift slower than a repeat; the spread inside a repeat is the
process's own. Last, the correlation of the two cells' medians across processes: a shared job effect.

    .venv/bin/python benchmarks/job_effect.py [--repeats 12] [--epochs 15]

`--reference-threads` asks another question: does the fixed reference step (`measure/reference.py`) use a
second thread when torch has two? It prints the CPU time each OS thread of the process spent in `--passes` (100) reference
passes, at 1 and then 2 threads, in two processes. A step that ran on one thread only would be the same work at
either count.

    .venv/bin/python benchmarks/job_effect.py --reference-threads

Run both on a quiet machine: they are timing measurements (about 4 minutes with the defaults).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS.parent / "workflow" / "scripts"))
sys.path.insert(0, str(BENCHMARKS))

BATCH_SIZES = (32, 512)
# Each arm: the command's prefix and the hash seed (None: Python's own random one).
ARMS: dict[str, tuple[list[str], str | None]] = {
    "default": ([], None),
    "hash0": ([], "0"),
    "noaslr": (["setarch", "-R"], None),
    "both": (["setarch", "-R"], "0"),
}


def worker(epochs: int, warmup: int) -> list[float]:
    """Return each cell's median epoch (seconds), B=32 then B=512, timed interleaved at 1 thread."""
    from thread_switch import _prepared, _workload

    from accel_choice.measure.training import time_epoch

    cells = _prepared(1, _workload(), list(BATCH_SIZES), warmup)
    times: list[list[float]] = [[] for _ in cells]
    for round_ in range(epochs):
        for i in range(len(cells)) if round_ % 2 == 0 else reversed(range(len(cells))):
            times[i].append(time_epoch(cells[i])["epoch"].seconds)
    return [statistics.median(t) for t in times]


def task_seconds() -> dict[str, float]:
    """Return the CPU seconds (user + system) each OS thread of this process has used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for task in os.listdir("/proc/self/task"):
        fields = Path(f"/proc/self/task/{task}/stat").read_text().rsplit(")", 1)[1].split()
        found[task] = (int(fields[11]) + int(fields[12])) / tick
    return found


def reference_worker(threads: int, passes: int = 100) -> dict[str, float]:
    """Time `passes` reference steps at `threads`; return the median pass and the CPU the main and other threads used."""
    import torch

    from accel_choice.measure.reference import ReferenceStep

    torch.set_num_threads(threads)
    torch.randn(1024, 1024) @ torch.randn(1024, 1024)  # the thread pool started, as in a timing job
    step = ReferenceStep(seed=1)
    step.prepare()
    before, start = task_seconds(), time.perf_counter()
    for _ in range(passes):
        step.time()
    wall, after = time.perf_counter() - start, task_seconds()
    main = str(os.getpid())
    used = {task: after[task] - before.get(task, 0.0) for task in after}
    return {
        "threads": threads,
        "median_ms": statistics.median(step.seconds) * 1e3,
        "wall_s": wall,
        "main_cpu_s": used.pop(main),
        "other_cpu_s": sum(used.values()),
    }


def _run(prefix: list[str], hash_seed: str | None, *args: str) -> object:
    """Run this file as a worker with `args`; return what it printed last, as JSON."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONHASHSEED"}
    if hash_seed is not None:
        env["PYTHONHASHSEED"] = hash_seed
    command = [*prefix, sys.executable, __file__, *args]
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def log_sd(values: list[float]) -> float:
    """The standard deviation of the logs of `values` (0 for fewer than two)."""
    return statistics.stdev(math.log(v) for v in values) if len(values) > 1 else 0.0


def summary(found: dict[str, list[list[float]]]) -> list[str]:
    """Return the report's lines from each arm's processes, in repeat order, each a list of cell medians."""
    lines = [
        "| arm | B | processes | geometric mean (ms) | spread between processes (log sd) |",
        "|---|---|---|---|---|",
    ]
    for arm, processes in found.items():
        for i, size in enumerate(BATCH_SIZES):
            medians = [p[i] for p in processes]
            mean = statistics.geometric_mean(medians)
            lines.append(f"| {arm} | {size} | {len(medians)} | {mean * 1e3:.2f} | {log_sd(medians):.1%} |")
    repeats = min(len(p) for p in found.values())
    lines += ["", "| B | drift between repeats (log sd of repeat means) | within a repeat (log sd) |", "|---|---|---|"]
    for i, size in enumerate(BATCH_SIZES):
        groups = [[math.log(found[arm][r][i]) for arm in found] for r in range(repeats)]
        means = [statistics.fmean(g) for g in groups]
        inside = [x - m for g, m in zip(groups, means) for x in g]
        within = math.sqrt(sum(d * d for d in inside) / max(1, len(inside) - len(groups)))
        between = statistics.stdev(means) if len(means) > 1 else 0.0
        lines.append(f"| {size} | {between:.1%} | {within:.1%} |")
    pairs = [(math.log(p[0]), math.log(p[1])) for processes in found.values() for p in processes]
    firsts, seconds = [a for a, _ in pairs], [b for _, b in pairs]
    if len(pairs) > 2 and len(set(firsts)) > 1 and len(set(seconds)) > 1:  # a constant has no correlation
        r = statistics.correlation(firsts, seconds)
        lines += ["", f"correlation of the two cells' log medians across all {len(pairs)} processes: {r:.2f}"]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=12)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--reference-threads", action="store_true", help="the reference step's threads (module text)")
    parser.add_argument("--passes", type=int, default=100, help="with --reference-threads: reference passes timed")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--reference-worker", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.epochs, args.warmup)))
        return
    if args.reference_worker:
        print(json.dumps(reference_worker(args.reference_worker, args.passes)))
        return
    if args.reference_threads:
        print("| torch threads | median pass (ms) | main thread's CPU (s) | other threads' CPU (s) | wall (s) |")
        print("|---|---|---|---|---|")
        for threads in (1, 2):
            r = _run([], None, "--reference-worker", str(threads), "--passes", str(args.passes))
            print(
                f"| {threads} | {r['median_ms']:.2f} | {r['main_cpu_s']:.2f} | {r['other_cpu_s']:.2f} | {r['wall_s']:.2f} |"
            )
        return
    found: dict[str, list[list[float]]] = {arm: [] for arm in ARMS}
    tail = ["--worker", "--epochs", str(args.epochs), "--warmup", str(args.warmup)]
    for r in range(args.repeats):
        for arm in list(ARMS) if r % 2 == 0 else list(ARMS)[::-1]:
            prefix, hash_seed = ARMS[arm]
            found[arm].append(_run(prefix, hash_seed, *tail))
    print(f"{args.repeats} repeats, {args.epochs} epochs a cell, fast path at 1 thread, 8,192 x 32")
    print("\n".join(summary(found)))


if __name__ == "__main__":
    main()
