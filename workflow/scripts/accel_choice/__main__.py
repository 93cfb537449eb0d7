"""`python -m accel_choice compare A B --out DIR`, `python -m accel_choice verify RESULTS` and `python -m accel_choice
profile --device D --out FILE`."""

import sys

from accel_choice.cli.main import main

sys.exit(main(prog="python -m accel_choice"))
