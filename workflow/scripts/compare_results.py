"""Compare two archived results/ folders side by side: `accel-choice compare` run by path (see
accel_choice/cli/compare.py, or `--help`, for the options and exit codes)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from accel_choice.cli.compare import BAD_INPUT, NOT_WRITTEN, REGRESSION, gate, main, parse_args, percent  # noqa: E402

__all__ = ["BAD_INPUT", "NOT_WRITTEN", "REGRESSION", "gate", "main", "parse_args", "percent"]

if __name__ == "__main__":
    sys.exit(main())
