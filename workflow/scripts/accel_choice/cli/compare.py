"""Compare two archived results/ folders side by side (not a Snakemake rule; run it by hand).

    accel-choice compare RESULTS_A RESULTS_B --out DIR [--label-a A --label-b B] [--fail-if-slower PCT] [--json]

(also `python -m accel_choice compare ...` and `python workflow/scripts/compare_results.py ...`)

Writes comparison.md, .csv, .json, .png and .svg into DIR (created) as a set: all five are made in a temporary
folder beside DIR and moved in together, so a failure leaves DIR as it was. Warnings are printed and written into
comparison.md. Every row measured on both sides carries the ratio B/A of its epoch and eval times with a t
interval on the jobs' medians (all of the table's ratios one family, held together at the tables' level) and an outcome (B faster, A faster, no measurable difference) decided against the runs' noise floors.

On stdout: a summary line, then one line per row measured on both sides (its epoch ratio B/A over the rest of its
job, interval and outcome: pyperf's compare_to is the model), then what the comparison could see. With --json, one JSON object
instead: comparison.json's content with `status` (the exit code), `written` and `regressions`. B a byte-identical
copy of A (or its training tables copies of A's) is said in a warning and on stdout: every ratio is 1 by
construction.

--fail-if-slower PCT makes it a regression gate (pytest-benchmark's --benchmark-compare-fail is the model): after
writing the comparison as without it, exit 1 when B is slower than A by more than PCT percent in the epoch or eval
time of at least one row, with the whole interval beyond it (ratio_ci_low > 1 + PCT/100) and beyond the row's
noise floor (its outcome is "A faster"); each such row is printed on stderr. It fails too when a device's whole
table is slower: its epoch time over every cell measured on both sides (analyze.compare_table: per timing job the
geometric mean of its cells, a Welch t interval over the job groups at 99 %) lies wholly above 1 + PCT/100 and above
the machines' own change (the sentinels' B/A upper end); printed with the cells slower than PCT at their points. A
slower commit slows every cell a little, which no row of three jobs can see alone. Rows on one side only and the
full path (sums of medians, no interval) are never gated.

Exit codes:
    0  the comparison was written (and, with --fail-if-slower, no row is slower by more than PCT).
    1  --fail-if-slower only: the comparison was written and at least one row of B, or a whole table, is slower
       than A by more than PCT percent, the whole interval beyond it; one "regression: ..." line per row and time,
       and per table, on stderr.
    2  bad input, before anything is written. One line naming the file: a folder that is not a results folder,
       or a value the comparison reads that the workflow never writes (a time or rate that is not a positive
       finite number, min > median or median > max, a batch size that is not a positive integer, a string or
       boolean where a number belongs, a missing value, NaN or Infinity anywhere in a JSON file); then the row
       (counted from 0) and the field are named too. Or, from argparse with its usage line: DIR inside a results
       folder, DIR an existing file, RESULTS_A and RESULTS_B the same folder, equal labels, or a PCT that is not
       a non-negative finite number.
    3  DIR could not be written (a full disk, no permission, a comparison.* there that is a folder or a
       symlink); one line naming the file; DIR is left as it was. (Before the gate existed this was exit 1.)
"""

from __future__ import annotations

import argparse
import math
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from accel_choice.io import paths

if TYPE_CHECKING:
    from accel_choice.analyze.compare import Comparison

# The comparison's own modules (scipy, matplotlib: about two seconds) are imported by the functions that
# compare, after the arguments are read, so `--help` and a usage error answer at once.

REGRESSION = 1  # --fail-if-slower: a row of B, or a whole table, slower than A beyond PCT, the whole interval beyond it
BAD_INPUT = 2  # also argparse's own code for a usage error
NOT_WRITTEN = 3


def percent(text: str) -> float:
    """--fail-if-slower's PCT: a non-negative finite number of percent (5 means 5 %)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of percent") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative finite number of percent")
    return value


def exit_codes() -> str:
    """Return the module's "Exit codes:" section, for --help."""
    return "exit codes:" + __doc__.split("Exit codes:", 1)[1]


def parse_args(argv: Sequence[str] | None, prog: str | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=f"Compare two accel-choice {paths.RESULTS}/ folders side by side.",
        epilog=exit_codes(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("results_a", type=Path, metavar="RESULTS_A", help="first results folder (A)")
    parser.add_argument("results_b", type=Path, metavar="RESULTS_B", help="second results folder (B); ratios are B/A")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for comparison.* (created)")
    parser.add_argument("--label-a", default="A", help="name of A in the outputs, e.g. laptop")
    parser.add_argument("--label-b", default="B", help="name of B in the outputs, e.g. gpu-server")
    parser.add_argument(
        "--fail-if-slower",
        type=percent,
        metavar="PCT",
        help=(
            f"exit {REGRESSION} when a row of B is slower than A by more than PCT %% in epoch or eval time, "
            "the whole interval (and the noise floor) beyond it, or a whole table's epoch time is (beyond the "
            "machines' own change too)"
        ),
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (comparison.json's content, status, written, regressions) instead of text",
    )
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


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    args = parse_args(argv, prog)
    from accel_choice.analyze import compare
    from accel_choice.io import folder_checks, results_folder
    from accel_choice.render import comparison, comparison_terminal

    try:
        a = results_folder.load_results(args.results_a, args.label_a)
        b = results_folder.load_results(args.results_b, args.label_b)
    except folder_checks.NotAResultsFolder as err:
        _json_error(args, BAD_INPUT, str(err))
        print(f"error: {err}", file=sys.stderr)
        return BAD_INPUT
    result = compare.compare(a, b, gate=args.fail_if_slower or 0.0)
    try:
        written = comparison.write_comparison(result, args.out)
    except OSError as err:
        where = f"{err.filename}: {err.strerror}" if err.filename else str(err)
        message = f"cannot write the comparison into {args.out} ({where}); {args.out} is left as it was"
        _json_error(args, NOT_WRITTEN, message)
        print(f"error: {message}", file=sys.stderr)
        return NOT_WRITTEN
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        return _json_report(args, result, written)
    print(f"{len(result.rows)} rows, {len(result.warnings)} warning(s); wrote {', '.join(str(p) for p in written)}")
    for line in comparison_terminal.terminal_lines(result):
        print(line)
    for line in comparison.sensitivity_lines(result):
        print(line)
    if args.fail_if_slower is None:
        return 0
    return gate(result, args.fail_if_slower, args.label_a, args.label_b)


def _json_error(args: argparse.Namespace, status: int, message: str) -> None:
    if args.json:
        print(json.dumps({"status": status, "error": message}))


def _json_report(args: argparse.Namespace, result: Comparison, written: Sequence[Path]) -> int:
    """--json: the comparison as one object on stdout; the gate's regressions in it (and on stderr)."""
    from accel_choice.analyze import compare

    slower = [] if args.fail_if_slower is None else compare.all_regressions(result, args.fail_if_slower)
    for regression in slower:
        print(f"regression: {regression.line(args.label_a, args.label_b, args.fail_if_slower)}", file=sys.stderr)
    status = REGRESSION if slower else 0
    document: dict[str, Any] = {
        "status": status,
        "written": [str(p) for p in written],
        "fail_if_slower": args.fail_if_slower,
        "regressions": [r.as_json(args.label_a, args.label_b, args.fail_if_slower) for r in slower],
    }
    print(json.dumps(document | result.as_json(), indent=2, allow_nan=False))
    return status


def gate(result: Comparison, pct: float, label_a: str, label_b: str) -> int:
    """Return the exit code of --fail-if-slower.

    Exit code of --fail-if-slower: each row of B, and each whole table, slower than A beyond `pct` on stderr,
    then 1; else 0."""
    from accel_choice.analyze import compare

    slower = compare.regressions(result, pct)
    tables = compare.table_regressions(result.whole_table, result.rows, pct)
    for regression in [*slower, *tables]:
        print(f"regression: {regression.line(label_a, label_b, pct)}", file=sys.stderr)
    if slower or tables:
        rows = len({id(regression.row) for regression in slower})
        found = [f"{rows} row(s)"] * bool(slower) + [f"the whole {t.shift.device} table" for t in tables]
        print(
            f"error: {' and '.join(found)} of {label_b} slower than {label_a} by more than {pct:g} % (--fail-if-slower)",
            file=sys.stderr,
        )
        return REGRESSION
    print(f"no row of {label_b} slower than {label_a} by more than {pct:g} % beyond its interval, nor a whole table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
