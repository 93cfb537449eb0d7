"""The GPU acceptance: the project's GPU measurement path run once and checked (docs/gpu.md).

    python workflow/scripts/gpu_acceptance.py                 # CUDA: torch, numpy and pydantic suffice
    python workflow/scripts/gpu_acceptance.py --device cpu    # the same code on the CPU

Prints one table, writes one JSON (--out), exits 0 when every check held, 1 naming the failed ones,
2 when the device cannot be used at all.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accel_choice.io import atomic  # noqa: E402
from accel_choice.measure import acceptance, devices  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="exit status: 0 every check held, 1 a check failed, 2 no device"
    )
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--rows", type=int, help=f"rows of the benchmark matrix (default {acceptance.ROWS})")
    parser.add_argument("--out", type=Path, default=Path("gpu_acceptance.json"), help="the JSON report")
    parser.add_argument("--no-compile", action="store_true", help="leave out the torch.compile variant")
    args = parser.parse_args(argv)
    try:
        report = acceptance.run(args.device, args.rows, compile_variant=not args.no_compile)
    except devices.DeviceUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(acceptance.table(report))
    atomic.write_record(args.out, report)
    print(f"report: {args.out}")
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
