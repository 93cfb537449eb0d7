"""Check an archived results/ folder against its MANIFEST.sha256: `accel-choice verify` run by path (see
accel_choice/cli/verify.py, or `--help`, for the exit codes)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from accel_choice.cli.verify import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
