"""How wrong is a device profile's model where it can be checked? Each measured CPU epoch of a finished run
predicted from a CPU profile by the planner's own profile model (docs/planner.md, "How wrong it was").

    .venv/bin/accel-choice profile --device cpu --out cpu.json            # this CPU, 1 torch thread
    .venv/bin/python benchmarks/profile_check.py cpu.json results [more results folders ...]

The profile model (analyze.gpu_profile) says a step costs the host's work, read off the ladder's line at
the model's ops, plus the device's: FLOP at the best matmul rate and bytes at the largest copy's bandwidth (a CPU
does both on one thread, so they add). It was made for a GPU, whose host work no CPU measurement shows;
on the CPU both sides are measured, so its prediction can be set against the run's own epochs: the
planner grid's workloads (the textbook MLP) and the benchmark's fast-path cells (any model, its ops
counted in tables/model_profile.json). Prints one markdown row per point and the median |error|.

A GPU run is checked the same way against a GPU profile (its fit points: the grid on the GPU and the
fp32 resident cells), recorded or measured, where the step is max(host, device):

    .venv/bin/python benchmarks/profile_check.py --device cuda config/gpu_profiles/h200.json gpu-results
"""

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow" / "scripts"))
from accel_choice import records  # noqa: E402
from accel_choice.analyze import gpu_profile, model_work  # noqa: E402
from accel_choice.io import gpu_profiles, paths  # noqa: E402
from accel_choice.records.model import ModelProfile  # noqa: E402
from accel_choice.records.planner import CostModelTable  # noqa: E402


def rows(profile_path: Path, results: Path, device: str = "cpu") -> list[tuple[str, str, float, float]]:
    """List (run, point, measured s, predicted s) for every fit point of a finished run on `device`."""
    counted = records.read(ModelProfile, results / paths.MODEL_PROFILE)
    gpu = gpu_profile.model(
        gpu_profiles.read(profile_path), str(profile_path), "highest", counted.step_ops, counted.step_kernels
    )
    textbook = gpu_profile.model(gpu.profile, gpu.path, "highest", *_textbook_ops(gpu.profile))
    per_sample = model_work.PerSample.of(counted)
    table = records.read(CostModelTable, results / paths.COST_MODEL)
    found = []
    for p in table.points:
        if p.device != device:
            continue
        if p.features is not None:  # a grid workload, or a benchmark cell of the textbook MLP
            model, w, label = (
                textbook,
                p.workload,
                f"{p.source} n={p.rows} d={p.features} h={p.hidden} B={p.batch_size}",
            )
        else:
            model = gpu
            w = model_work.CountedWorkload(rows=p.rows, batch_size=p.batch_size, per_sample=per_sample)
            label = f"{p.source} {p.model} B={p.batch_size}"
        run = results.name if results.name != "results" else results.parent.name
        found.append((run or str(results), label, p.epoch_s, model.epoch_s(w)))
    return found


def _textbook_ops(profile: object) -> tuple[int, int]:
    steps = [s for s in profile.reference_steps if s.model == gpu_profile.TEXTBOOK_STEP]  # type: ignore[attr-defined]
    return (steps[0].ops, steps[0].kernels) if steps else (42, 18)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path, help="a device profile (accel-choice profile --device cpu|cuda)")
    parser.add_argument("--device", default="cpu", help="the fit points checked: cpu (default) or cuda")
    parser.add_argument("results", type=Path, nargs="+", help="finished results folders on the same machine")
    args = parser.parse_args(argv)
    print("| run | point | measured ms | predicted ms | error |")
    print("|---|---|---|---|---|")
    errors = []
    for results in args.results:
        for run, point, measured, predicted in rows(args.profile, results, args.device):
            error = (predicted - measured) / measured
            errors.append(abs(error))
            print(f"| {run} | {point} | {measured * 1e3:.2f} | {predicted * 1e3:.2f} | {error:+.0%} |")
    if not errors:
        print(f"no {args.device} fit points in {' '.join(map(str, args.results))}", file=sys.stderr)
        return 1
    print(f"\nmedian |error| {statistics.median(errors):.0%} over {len(errors)} points; largest {max(errors):.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
