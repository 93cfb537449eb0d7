"""Measure a device profile: one record of what the planner needs of a device and its host, one command.

    accel-choice profile --device cuda --out h200.json      (also python -m accel_choice profile ...)
    accel-choice profile --device cpu --out cpu.json [--threads N] [--rounds R] [--quick]

It measures (measure.device_profile), each figure in interleaved rounds with an interval: the eager
training step of near-empty models of growing depth (the ladder, whose seconds against their ops give
the host's fixed cost per step and per op) and of the textbook MLP at B = 32 and 512; one dispatched op;
one kernel replayed in a CUDA graph (CUDA only); matmul FLOP/s over sizes (fp32, and TF32 and bf16
where the device has them); the device's memory bandwidth; host-device copies, pageable and pinned
(not on a CPU); the runtime's start-up and a first step's extra cost (one value each). It writes a
records.device_profile.DeviceProfile as JSON (atomically) and prints a table of the figures, then what
the host gave the rounds (this process's CPU seconds, the load average: a shared machine slows them).

A full run took about half a minute on a 2-core CPU at 1 thread; on a GPU it is planned for one to two
minutes (not yet run on one). It needs torch and numpy only (no pydantic, pandas or Snakemake): it runs
on a bare GPU machine; read the record back where pydantic is installed (records.read checks it).

Exit codes:
    0  the profile was written; its table is printed.
    1  a measurement failed (the error is printed); nothing is written.
    2  the device is not available here (one line naming it), or bad arguments (argparse's usage line).
    3  --out could not be written (one line naming it); a file already there is left as it was.
"""

from __future__ import annotations

import argparse
import datetime
import shlex
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accel_choice.measure.device_profile import RawProfile
    from accel_choice.records.device_profile import DeviceProfile, Figure

# torch (about a second) is imported once the arguments are read, so `--help` and a usage error answer at once.

FAILED, UNAVAILABLE, NOT_WRITTEN = 1, 2, 3
PRECISION_NOTES = {  # how each rated matmul precision was set (measure.device_rates)
    "fp32": "fp32 at float32 matmul precision 'highest'",
    "tf32": "tf32 at 'high' (CUDA's TF32)",
    "bf16": "bf16 tensors",
}
DEVICES = ("cpu", "cuda", "mps")


def exit_codes() -> str:
    """Return the module's "Exit codes:" section, for --help."""
    return "exit codes:" + __doc__.split("Exit codes:", 1)[1]


def positive(minimum: int) -> Any:
    """Return an argparse type: a whole number of at least `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}")
        return value

    return parse


def parse_args(argv: Sequence[str], prog: str | None) -> argparse.Namespace:
    """Read the arguments; argparse's usage line and exit 2 for bad ones (--out a folder among them)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description=__doc__.splitlines()[0],
        epilog=exit_codes(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--device", choices=DEVICES, default="cpu", help="the device to profile (default: cpu)")
    parser.add_argument("--out", required=True, metavar="FILE", help="the profile's JSON file (written atomically)")
    parser.add_argument(
        "--rounds", type=positive(2), metavar="R", help="interleaved rounds, one value each (default 9; --quick 3)"
    )
    parser.add_argument(
        "--threads",
        type=positive(1),
        metavar="N",
        help="torch threads on the host while measuring (default: 1 on the CPU, a profile per thread count; "
        "torch's default, one per core, for cuda and mps)",
    )
    parser.add_argument("--quick", action="store_true", help="a tiny run of a few seconds (the test suite's)")
    args = parser.parse_args(argv)
    if Path(args.out).is_dir():
        parser.error(f"--out {args.out} is a folder; give a file name")
    return args


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Measure the profile, write it, print its table; return the exit code (the module's Exit codes)."""
    started = time.perf_counter()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv, prog)
    command = shlex.join([*shlex.split(prog or "accel-choice profile"), *argv])
    import torch

    from accel_choice.io import atomic
    from accel_choice.measure import device_profile, devices

    problem = unwritable(Path(args.out))
    if problem:  # found before the minutes of measuring, not after
        print(f"error: cannot write {args.out} ({problem}); nothing measured", file=sys.stderr)
        return NOT_WRITTEN
    plan = device_profile.plan_for(args.device, args.quick, args.rounds)
    threads = args.threads or (1 if args.device == "cpu" else torch.get_num_threads())
    try:
        raw = device_profile.measure(args.device, plan, threads)
        profile = build(raw, command, args.quick, time.perf_counter() - started)
    except devices.DeviceUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return UNAVAILABLE
    except Exception as error:  # a measurement (or its record) that failed: its traceback, then one line
        traceback.print_exc()
        print(f"error: the profile failed, nothing written: {type(error).__name__}: {error}", file=sys.stderr)
        return FAILED
    try:
        atomic.write_record(args.out, profile)
    except OSError as error:
        print(f"error: cannot write {args.out} ({error.strerror or error}); nothing written", file=sys.stderr)
        return NOT_WRITTEN
    print(
        f"{profile.name} ({profile.device_type}), {raw.plan.rounds} rounds, {profile.timed_s:.1f} s; wrote {args.out}"
    )
    for line in table(profile):
        print(line)
    print(contention(raw))
    return 0


def unwritable(out: Path) -> str | None:
    """Say why `out` cannot be written (its folder made, a file created there), or return None."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out.parent, prefix=f".{out.name}.", suffix=".probe"):
            pass
    except OSError as error:
        return error.strerror or str(error)
    return None


def build(raw: RawProfile, command: str, quick: bool, timed_s: float) -> DeviceProfile:
    """Build the record of a measured profile: every raw value kept, each figure with its estimate.

    The estimates are analyze.profile_draws': one machine here, its rounds bootstrapped."""
    from accel_choice.analyze.profile_draws import figure
    from accel_choice.records.device_profile import Copy, DeviceProfile, Rate, StepFigure

    made = datetime.date.today().isoformat()
    reference = f"accel-choice profile --device {raw.device['device_type']}, on {raw.machine}, {made}"

    def measured(unit: str, values: Sequence[float]) -> Figure:
        return figure("measured", unit, {raw.machine: values}, reference)  # type: ignore[arg-type]

    def steps(raws: Sequence[Any]) -> tuple[StepFigure, ...]:
        return tuple(
            StepFigure(
                model=s.model, batch_size=s.batch_size, ops=s.ops, kernels=s.kernels, seconds=measured("s", s.seconds)
            )
            for s in raws
        )

    first = raw.first_step_s if raw.first_step_s > 0 else None
    return DeviceProfile(
        **raw.device,
        **raw.host,
        made=made,
        machines=1,
        runs=1,
        command=command,
        note=note(raw, quick, first is None),
        reference_steps=steps(raw.reference_steps),
        ladder=steps(raw.ladder),
        op_dispatch_s=measured("s", raw.op_dispatch),
        kernel_floor_s=None if raw.kernel_floor is None else measured("s", raw.kernel_floor),
        matmul=tuple(
            Rate(size=n, rate=measured("FLOP/s", values), precision=precision)
            for (n, precision), values in raw.matmul.items()
        ),
        memory_bandwidth=tuple(
            Rate(size=size, rate=measured("B/s", values), precision=None) for size, values in raw.bandwidth.items()
        ),
        copies=tuple(
            Copy(direction=direction, memory=memory, bytes=size, rate=measured("B/s", values))
            for (direction, memory, size), values in raw.copies.items()
        ),
        context_startup_s=measured("s", [raw.context_startup_s]),
        first_step_s=None if first is None else measured("s", [first]),
        timed_s=timed_s,
    )


def note(raw: RawProfile, quick: bool, no_first_step: bool) -> str:
    """Write what a reader of the record needs to read its figures right."""
    from accel_choice.measure.device_profile import LADDER_BATCH, LADDER_WIDTH, REFERENCE_BATCHES, TEXTBOOK

    plan, w, b, batches = raw.plan, LADDER_WIDTH, LADDER_BATCH, REFERENCE_BATCHES
    parts = [
        f"One machine ({raw.machine}), one run of {plan.rounds} interleaved rounds at {raw.host['threads']} torch "
        "thread(s): each figure's interval is the spread of its rounds on this machine, not between machines.",
        "--quick: a test of the command, not a profile to plan with." if quick else "",
        contention(raw),
        "context_startup_s and first_step_s are one value each (one run); the first step took "
        f"{raw.first_step_raw_s:.4g} s whole, first_step_s is that less the warm B={batches[0]} step's median"
        + (" (not above it here, so null)." if no_first_step else "."),
        f"Ladder: depth x (Linear({w},{w}), ReLU), then Linear({w},1), B={b}; {TEXTBOOK} at B="
        f"{' and '.join(map(str, batches))}; the project's Trainer (fused Adam, BCE), each loss copied into a slot; "
        "ops and kernels counted on the CPU.",
        "Matmul: n x n @ n x n, 2n^3 FLOP; "
        + ", ".join(PRECISION_NOTES[p] for p in dict.fromkeys(p for _, p in raw.matmul))
        + ".",
        "Memory bandwidth: copy_ within the device, read and write bytes counted.",
        "Copies: into a buffer made before the clock, one copy per clock read, pinned ones non_blocking."
        if raw.copies
        else "",
    ]
    return " ".join(p for p in parts if p)


def contention(raw: RawProfile) -> str:
    """Say what the host gave the rounds: this process's CPU seconds against the wall's, the load average.

    A busy machine slows every figure; a 1-thread CPU profile that got well under one core was shared."""
    seen = raw.contention
    load = [f"{seen[k]:.2f}" if seen[k] is not None else "unknown" for k in ("load_before", "load_after")]
    return (
        f"While the rounds ran: {seen['cpu_s']:.1f} CPU-s of this process in {seen['wall_s']:.1f} s, "
        f"load average {load[0]} before and {load[1]} after, on {raw.host['host_cores']} cores."
    )


SCALES = {
    "s": ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")),
    "FLOP/s": ((1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s"), (1.0, "FLOP/s")),
    "B/s": ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1.0, "B/s")),
}


def scaled(fig: Figure) -> tuple[str, str, str]:
    """Return a figure's point, interval and unit, with an SI prefix fitting its point (1 GB = 1e9 B)."""
    est = fig.estimate
    factor, unit = next(((f, u) for f, u in SCALES[fig.unit] if est.point >= f), SCALES[fig.unit][-1])
    return f"{est.point / factor:.4g}", f"{est.low / factor:.4g}-{est.high / factor:.4g}", unit


def size_label(size: int) -> str:
    """Write a size in bytes as KiB or MiB."""
    for factor, unit in ((1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= factor:
            return f"{size / factor:g} {unit}"
    return f"{size} B"


def rows(profile: DeviceProfile) -> list[tuple[str, Figure]]:
    """Return every figure of a profile with a label, in the record's order."""
    found = [
        (f"step {s.model} B={s.batch_size} ({s.ops} ops, {s.kernels} kernels)", s.seconds)
        for s in (*profile.ladder, *profile.reference_steps)
    ]
    found += [("op dispatch", profile.op_dispatch_s), ("kernel floor (CUDA graph)", profile.kernel_floor_s)]
    found += [(f"matmul {r.precision} n={r.size}", r.rate) for r in profile.matmul]
    found += [(f"memory bandwidth {size_label(r.size or 0)}", r.rate) for r in profile.memory_bandwidth]
    found += [
        (f"copy {c.direction.replace('_', ' ')} {c.memory} {size_label(c.bytes)}", c.rate) for c in profile.copies
    ]
    found += [
        ("context start-up (one value)", profile.context_startup_s),
        ("first step extra (one value)", profile.first_step_s),
    ]
    return [(label, fig) for label, fig in found if fig is not None]


def table(profile: DeviceProfile) -> list[str]:
    """Return the summary's lines: one per figure (figure, point, 95 % interval, unit)."""
    lines = [(label, *scaled(fig)) for label, fig in rows(profile)]
    header = ("figure", "point", "95% interval", "unit")
    widths = [max(len(row[i]) for row in (header, *lines)) for i in range(4)]
    return [
        f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:>{widths[2]}}  {row[3]}" for row in (header, *lines)
    ]
