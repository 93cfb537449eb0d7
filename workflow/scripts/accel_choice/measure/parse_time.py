"""What the Snakefile does when Snakemake parses it, before any rule is defined (`prepare`).

In order: the command the user typed is recorded for provenance; every config file is read again
for a key set twice; the config is validated once (`io.config_checks.validate`: one line per problem
naming the key, then the schema's defaults); your own benchmark data sets its rows and features;
what a schema cannot say is checked; and your own model or data is built and tried on one batch.
Any problem stops the run here, before a job is planned or a file written. A warning about the data
(an epoch of few steps, your own constant target: io.data_warnings) is logged, and the run goes on.

This sits in the measure layer because the last step imports torch (measure.model_checks), which it
does only where a model or data of your own is configured: a default run does not import torch here.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from accel_choice.io import benchmark_data, data_warnings
from accel_choice.io.config_checks import check_config, normalize_config, validate
from accel_choice.io.config_files import check_config_files
from accel_choice.io.provenance import INVOCATION_VARIABLE, invocation_record


def record_invocation() -> None:
    """Record the command the user typed.

    Provenance, not a parameter: the command the user typed reaches every job through the
    environment (setdefault: a cluster job re-parsing the Snakefile keeps its submitter's record),
    so it is recorded in results/ without ever triggering a re-run."""
    from snakemake import __version__ as snakemake_version

    os.environ.setdefault(INVOCATION_VARIABLE, invocation_record(sys.argv, os.getcwd(), snakemake_version))


def prepare(
    config: dict[str, Any], configfiles: Sequence[str | os.PathLike[str]], schema: str | os.PathLike[str]
) -> tuple[int, ...]:
    """Check and complete `config` in place (the module docstring's steps); one sample's shape.

    `configfiles`: the files Snakemake read the config from (--configfile ones, then the Snakefile's
    `configfile:` where it exists; an importing workflow's own when this one is used as a module),
    each read again to refuse a key set twice, naming file, key and lines (Snakemake keeps the last).
    """
    record_invocation()
    check_config_files(configfiles)
    normalize_config(config)
    validate(config, schema)
    # Your own benchmark data (data.benchmark.table or .arrays): its rows and features set from the files.
    sample_shape = benchmark_data.resolve(config)
    check_config(config)
    checked = _checked(config, sample_shape)
    if os.environ.get(CHECKED_VARIABLE) == checked:
        return sample_shape  # a cluster job parsing again: the parse that submitted it checked and warned
    warnings = [data_warnings.few_steps(config["data"]["benchmark"]["rows"], config["timing"]["batch_sizes"])]
    if config["model"]["factory"] or benchmark_data.source(config):
        # Your own model or data, checked now, before any job: a factory that does not import, raises or
        # does not fit the data and loss, or a target the loss cannot take, stops here (this runs the model's code).
        from accel_choice.measure.model_checks import check_model

        warnings.append(check_model(config, sample_shape))  # your own target, where it is constant
    warn([w.line for w in warnings if w is not None])
    os.environ[CHECKED_VARIABLE] = checked
    return sample_shape


# Set once the model and data of a configuration passed their checks; jobs inherit it (a cluster job, which
# parses the Snakefile again, skips the trial of measure.model_checks: a training step at every batch size).
CHECKED_VARIABLE = "ACCEL_CHOICE_CHECKED"


def _checked(config: dict[str, Any], sample_shape: tuple[int, ...]) -> str:
    """What the checks depend on, as one hash: the model, the benchmark data, the batch sizes, the seed."""
    what = [config["model"], config["data"]["benchmark"], config["timing"]["batch_sizes"], config["seed"], sample_shape]
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()


def warn(lines: Sequence[str]) -> None:
    """Say each warning about the data through Snakemake's logger: the run goes on (docs/own-model.md)."""
    from snakemake.logging import logger

    for line in lines:
        logger.warning(f"accel-choice data warning: benchmark: {line}")
