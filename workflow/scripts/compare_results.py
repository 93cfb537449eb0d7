"""Compare two archived results/ folders side by side (not a Snakemake rule; run it by hand).

    .venv/bin/python workflow/scripts/compare_results.py RESULTS_A RESULTS_B --out DIR [--label-a A --label-b B]

Writes comparison.md, .csv, .json, .png and .svg into DIR (created) as a set: all five are made in a temporary
folder beside DIR and moved in together, so a failure leaves DIR as it was. Warnings are printed and written into
comparison.md.

Exit codes:
    0  the comparison was written.
    1  DIR could not be written (a full disk, no permission, a comparison.* there that is a folder or a
       symlink); one line naming the file; DIR is left as it was.
    2  bad input, before anything is written. One line naming the file: a folder that is not a results folder,
       or a value the comparison reads that the workflow never writes (a time or rate that is not a positive
       finite number, min > median or median > max, a batch size that is not a positive integer, a string or
       boolean where a number belongs, a missing value, NaN or Infinity anywhere in a JSON file); then the row
       (counted from 0) and the field are named too. Or, from argparse with its usage line: DIR inside a results
       folder, DIR an existing file, RESULTS_A and RESULTS_B the same folder, or equal labels.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from accel_choice.analyze import compare  # noqa: E402
from accel_choice.io import folder_checks, paths, results_folder  # noqa: E402
from accel_choice.render import comparison  # noqa: E402


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=f"Compare two accel-choice {paths.RESULTS}/ folders side by side.")
    parser.add_argument("results_a", type=Path, metavar="RESULTS_A", help="first results folder (A)")
    parser.add_argument("results_b", type=Path, metavar="RESULTS_B", help="second results folder (B); ratios are B/A")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for comparison.* (created)")
    parser.add_argument("--label-a", default="A", help="name of A in the outputs, e.g. laptop")
    parser.add_argument("--label-b", default="B", help="name of B in the outputs, e.g. gpu-server")
    args = parser.parse_args(argv)
    if args.label_a == args.label_b:
        parser.error(f"--label-a and --label-b are both {args.label_a!r}; ratios would not say which side is which")
    same = args.results_a.resolve()
    if same == args.results_b.resolve():
        parser.error(
            f"RESULTS_A and RESULTS_B are the same folder ({same}): every ratio would be 1 by construction; "
            "compare two runs"
        )
    if args.out.exists() and not args.out.is_dir():
        parser.error(f"--out {args.out} is a file; give a folder")
    for folder in (args.results_a, args.results_b):
        if args.out.resolve().is_relative_to(folder.resolve()):
            # Writing into an archived folder would break its MANIFEST.sha256.
            parser.error(f"--out {args.out} is inside the results folder {folder}; choose a folder outside both")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        a = results_folder.load_results(args.results_a, args.label_a)
        b = results_folder.load_results(args.results_b, args.label_b)
    except folder_checks.NotAResultsFolder as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    result = compare.compare(a, b)
    try:
        written = comparison.write_comparison(result, args.out)
    except OSError as err:
        where = f"{err.filename}: {err.strerror}" if err.filename else str(err)
        print(
            f"error: cannot write the comparison into {args.out} ({where}); {args.out} is left as it was",
            file=sys.stderr,
        )
        return 1
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"{len(result.rows)} rows, {len(result.warnings)} warning(s); wrote {', '.join(str(p) for p in written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
