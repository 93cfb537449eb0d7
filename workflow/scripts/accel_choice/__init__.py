"""accel-choice: measure the full data and compute path before choosing an accelerator.

A pure library: nothing here knows about Snakemake. The entry scripts in the folder
above read `snakemake.input/output/params` and call these functions; tests call them
directly.
"""

__version__ = "0.1.0"
