"""`python -m accel_choice compare A B --out DIR` and `python -m accel_choice verify RESULTS`."""

import sys

from accel_choice.cli.main import main

sys.exit(main(prog="python -m accel_choice"))
