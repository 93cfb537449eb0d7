"""The commands: `accel-choice compare`, `accel-choice verify` (also `python -m accel_choice` and the scripts
workflow/scripts/compare_results.py and verify_results.py) and `accel-choice profile`."""
