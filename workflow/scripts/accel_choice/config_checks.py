"""Configuration checks that run when the Snakefile is parsed, before any job.

`check_schema` reports every schema violation as one line that names the key by its
dotted path and says what is allowed; Snakemake's own `validate` then fills in the
defaults, and `check_config` checks what a JSON schema cannot express (relations
between keys).
"""

from __future__ import annotations

import os
from typing import Any

import jsonschema
import yaml

from .costmodel import grid_workloads


class ConfigError(ValueError):
    """A configuration value is unusable; the message names the key."""


def _dotted(path: Any) -> str:
    parts = [f"[{p}]" if isinstance(p, int) else f".{p}" for p in path]
    return "".join(parts).lstrip(".") or "(top level)"


def _allowed(schema: dict[str, Any]) -> str:
    """What the schema fragment accepts, in words."""
    if "enum" in schema:
        return "one of " + ", ".join(map(str, schema["enum"]))
    if schema.get("type") == "array" and "items" in schema:
        words = "a list"
        if schema.get("minItems"):
            words += f" of at least {schema['minItems']}"
        if schema.get("uniqueItems"):
            words += ", without duplicates,"
        return f"{words} of {_allowed(schema['items'])}"
    words = {"integer": "an integer", "number": "a number", "string": "a string", "object": "a mapping"}.get(
        schema.get("type", ""), "a value"
    )
    bounds = []
    for key, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in schema:
            bounds.append(f"{sign} {schema[key]}")
    if schema.get("type") == "object" and "properties" in schema:
        return f"{words} with keys " + ", ".join(schema["properties"])
    return words + (" " + " and ".join(bounds) if bounds else "")


def schema_errors(config: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    messages = []
    for error in sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path))):
        key = _dotted(error.absolute_path)
        if error.validator == "additionalProperties":
            unknown = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            messages.append(
                f"config key {key}: unknown key(s) {', '.join(unknown)}; allowed keys: {', '.join(error.schema['properties'])}"
            )
        else:
            messages.append(f"config key {key}: {error.message}; allowed: {_allowed(error.schema)}")
    return messages


def check_schema(config: dict[str, Any], schema_path: str | os.PathLike[str]) -> None:
    with open(schema_path, encoding="utf-8") as handle:
        schema = yaml.safe_load(handle)
    errors = schema_errors(config, schema)
    if errors:
        raise ConfigError("invalid configuration, nothing was run:\n  " + "\n  ".join(errors))


def normalize_config(config: dict[str, Any]) -> None:
    """YAML 1.1 reads an unquoted `off` as false (and `on` as true): take them as meant."""
    if config.get("accelerator") is False:
        config["accelerator"] = "off"


def _check_at_most(key: str, sizes: list[int], limit: int, what: str) -> None:
    too_large = [b for b in sizes if b > limit]
    if too_large:
        raise ConfigError(f"config key {key}: {too_large} larger than {what} = {limit}; allowed: batch sizes between 1 and {limit}")


def check_config(config: dict[str, Any]) -> None:
    rows = config["data"]["benchmark"]["rows"]
    _check_at_most("timing.batch_sizes", config["timing"]["batch_sizes"], rows, "data.benchmark.rows")
    _check_at_most("gradient_variance.batch_sizes", config["gradient_variance"]["batch_sizes"], rows, "data.benchmark.rows")
    split = config["selection"]["split"]
    total = split["train"] + split["val"] + split["test"]
    if abs(total - 1) > 1e-9:
        raise ConfigError(f"config key selection.split: train + val + test = {total:g}; allowed: ratios that add up to 1")
    _check_planner(config["planner"])
    table = config["data"]["northstar"]["table"]
    if table is not None:
        _check_table_path(table["path"])
        if table["target"] in table["features"]:
            raise ConfigError(f"config key data.northstar.table.features: lists the target column {table['target']!r}, "
                              "which would give the model the label it has to predict; allowed: feature columns other "
                              "than data.northstar.table.target")
        return  # its row count is known only once the file is read (prepare_northstar checks it)
    train_rows = int(config["data"]["northstar"]["rows"] * split["train"])
    sizes = [*config["selection"]["batch_sizes"], config["selection"]["seed_batch_size"]]
    _check_at_most("selection.batch_sizes / selection.seed_batch_size", sizes, train_rows,
                   "the training split (data.northstar.rows × selection.split.train)")


def _check_table_path(path: str) -> None:
    key, allowed = "config key data.northstar.table.path", "allowed: a Parquet or CSV file"
    if os.path.isdir(path):
        raise ConfigError(f"{key}: {path} is a directory, not a file; {allowed}")
    if not os.path.isfile(path):
        raise ConfigError(f"{key}: {path} does not exist; {allowed}")
    if os.path.getsize(path) == 0:
        raise ConfigError(f"{key}: {path} is empty (0 bytes); {allowed} with a header and rows")


def _check_planner(planner: dict[str, Any]) -> None:
    grid = planner["grid"]
    workloads = len(grid_workloads(grid["rows"], grid["features"], grid["hidden"], grid["batch_sizes"]))
    if workloads < 4:
        raise ConfigError(f"config key planner.grid: {workloads} workload(s) with batch size <= rows; allowed: at least 4 "
                          "(the cost model fits 3 terms and is checked out of sample)")
    for axis, (low, high) in planner["sweep"].items():
        if low >= high:
            raise ConfigError(f"config key planner.sweep.{axis}: [{low}, {high}]; allowed: [smallest, largest] with smallest < largest")
