"""The `accel-choice` command: `accel-choice compare A B --out DIR`, `accel-choice verify RESULTS`, each with the
options and exit codes of its script (workflow/scripts/compare_results.py, verify_results.py), and
`accel-choice profile --device D --out FILE` (a device profile: cli/profile.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from accel_choice.cli import compare, profile, verify
from accel_choice.io import paths

# Each command's module imports what it runs on only once its arguments are read: `--help` answers at once.
COMMANDS = {
    "compare": (compare.main, "compare two results folders side by side (ratios B/A, a terminal table)"),
    "verify": (verify.main, f"check an archived results folder against its {paths.MANIFEST}"),
    "profile": (profile.main, "measure a device profile (steps, dispatch, FLOP/s, bandwidth, copies, start-up)"),
}


def main(argv: Sequence[str] | None = None, prog: str = "accel-choice") -> int:
    """Dispatch to a command.

    Dispatch to a command; its own parser reads the rest of the arguments (so `accel-choice compare --help`
    is compare's help, exit codes included)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Is a CPU enough for this training job? The commands that read a lab report (results/), and the "
        "device profile.",
        epilog="Each command's --help lists its options and exit codes.",
    )
    parser.add_argument("command", choices=COMMANDS, help="; ".join(f"{n}: {h}" for n, (_, h) in COMMANDS.items()))
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the command's arguments (see COMMAND --help)")
    args = parser.parse_args(sys.argv[1:] if argv is None else list(argv))
    run, _ = COMMANDS[args.command]
    return run(args.args, prog=f"{prog} {args.command}")


def entry_point() -> None:
    """Run the console script `accel-choice` (pyproject.toml's [project.scripts])."""
    sys.exit(main())
