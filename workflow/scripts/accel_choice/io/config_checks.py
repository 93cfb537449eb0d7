"""Configuration checks that run when the Snakefile is parsed, before any job.

(`io.config_files` checks the files themselves: a key set twice, aliases that expand too far.)
`check_schema` reports every schema violation, every NaN or infinite number and
every integer written as a float, as one line that names the key by its dotted path and
says what is allowed; `validate` is that check followed by `fill_defaults` (the schema's
defaults, as Snakemake's `validate` would set them): the workflow's one validation of its
config. `check_config` checks what a JSON schema cannot express (relations between keys, the
largest usable seed).
"""

from __future__ import annotations

import copy
import math
import os
from typing import Any

import jsonschema
import yaml

from accel_choice.records import UserInputError
from accel_choice.io import gpu_profiles, streaming_data
from accel_choice.records.grid import grid_workloads
from accel_choice.records.model import spec_problem


class ConfigError(UserInputError):
    """A configuration value is unusable; the message names the key."""


def dotted_key(path: Any) -> str:
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
    kinds = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "object": "a mapping",
        "boolean": "true or false",
    }
    types = schema.get("type", "")
    words = " or ".join(kinds.get(t, t) for t in types) if isinstance(types, list) else kinds.get(types, "a value")
    bounds = []
    for key, sign in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in schema:
            bounds.append(f"{sign} {schema[key]}")
    if "object" in _kinds(schema) and "properties" in schema:
        keys = f"a mapping with keys {', '.join(schema['properties'])}"
        return words.replace("a mapping", keys)
    return words + (" " + " and ".join(bounds) if bounds else "")


def _floats(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], float]]:
    """Every float in the config, with its path."""
    if isinstance(value, float):
        return [(path, value)]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _floats(item, (*path, key))]
    if isinstance(value, list):
        return [found for index, item in enumerate(value) for found in _floats(item, (*path, index))]
    return []


def _fragment(schema: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any] | None:
    """The part of the schema that describes the value at `path`; None for a key it does not know."""
    for part in path:
        schema = schema.get("items" if isinstance(part, int) else "properties", {})
        schema = schema if isinstance(part, int) else schema.get(part)
        if not schema:
            return None
    return schema


def _kinds(schema: dict[str, Any]) -> set[str]:
    kinds = schema.get("type", [])
    return {kinds} if isinstance(kinds, str) else set(kinds)


def _looks_like(text: str, kind: Any) -> bool:
    """Whether `text` is what YAML would have read as `kind` (a schema type, or a list of them, such as
    ["number", "null"]): a sign that it arrived as text."""
    if isinstance(kind, list):
        return any(_looks_like(text, one) for one in kind)
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    wanted = {"integer": int, "number": (int, float), "boolean": bool}.get(kind)
    return wanted is not None and isinstance(value, wanted) and (kind == "boolean") == isinstance(value, bool)


def _text_hint(kind: Any) -> str:
    # Snakemake reads the values inside a nested `--config key={...}` as text (YAML's BaseLoader).
    boolean = kind == "boolean" or kind == ["boolean"]
    what = "true or false" if boolean else "a number"
    # a top-level flag reads as a boolean only written True or False (Snakemake's own parser)
    top = "; --config KEY=True or KEY=False for a top-level one" if boolean else ""
    return (
        f" ({what} written as text: --config KEY={{...}} passes nested values as text; set them in a --configfile{top})"
    )


def _float_problem(value: float, schema: dict[str, Any]) -> str | None:
    """What a JSON schema lets through: NaN passes every bound (nan > 0 and nan < 0 are both false),
    inf every lower bound, and 1000.0 counts as an integer although numpy refuses it as a seed."""
    kinds = _kinds(schema)
    if not math.isfinite(value) and kinds & {"number", "integer"}:
        return f"{value} is not a finite number"
    if value.is_integer() and "integer" in kinds and "number" not in kinds:
        return f"{value} is not an integer (it has a decimal point or an exponent: write {int(value)})"
    return None


def schema_errors(config: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    # Floats the schema would let through first, one line each; then the schema's own errors.
    messages = []
    caught = set()
    for path, value in _floats(config):
        fragment = _fragment(schema, path)
        problem = None if fragment is None else _float_problem(value, fragment)
        if problem:
            caught.add(path)
            message = f"config key {dotted_key(path)}: {problem}; allowed: {_allowed(fragment)}"
            messages.append((list(map(str, path)), message))
    validator = jsonschema.Draft202012Validator(schema)
    for error in validator.iter_errors(config):
        if tuple(error.absolute_path) in caught:
            continue
        key = dotted_key(error.absolute_path)
        if error.validator == "additionalProperties":
            unknown = sorted(set(error.instance) - set(error.schema.get("properties", {})))
            message = f"config key {key}: unknown key(s) {', '.join(unknown)}; allowed keys: {', '.join(error.schema['properties'])}"
        else:
            message = f"config key {key}: {error.message}; allowed: {_allowed(error.schema)}"
            kind = error.validator_value
            if error.validator == "type" and isinstance(error.instance, str) and _looks_like(error.instance, kind):
                message += _text_hint(kind)
        messages.append((list(map(str, error.absolute_path)), message))
    return [message for _, message in sorted(messages, key=lambda pair: pair[0])]


def _load_schema(schema_path: str | os.PathLike[str]) -> dict[str, Any]:
    """The schema, read with libyaml where PyYAML has it (the same document, 0.007 s instead of 0.064 s): it is
    read by every `snakemake` invocation, a dry run included."""
    with open(schema_path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _raise_for(config: dict[str, Any], schema: dict[str, Any]) -> None:
    errors = schema_errors(config, schema)
    if errors:
        raise ConfigError("invalid configuration, nothing was run:\n  " + "\n  ".join(errors))


def check_schema(config: dict[str, Any], schema_path: str | os.PathLike[str]) -> None:
    _raise_for(config, _load_schema(schema_path))


def fill_defaults(config: dict[str, Any], schema: dict[str, Any]) -> None:
    """Fill in every default the schema gives and the config leaves out.

    Set every key that the schema gives a default and the config leaves out, at every level: a
    section left out gets its default ({}) and then its keys' defaults. What Snakemake's
    `validate(config, schema)` sets (jsonschema's `properties`, extended to set defaults), for a
    config that `schema_errors` passed; it reports nothing itself."""
    for key, fragment in schema.get("properties", {}).items():
        if "default" in fragment and key not in config:
            config[key] = copy.deepcopy(fragment["default"])
        if isinstance(config.get(key), dict):
            fill_defaults(config[key], fragment)


def validate(config: dict[str, Any], schema_path: str | os.PathLike[str]) -> None:
    """Validate the workflow's config and fill in its defaults.

    The workflow's validation of its config, run once when it is parsed: every problem as one line
    naming the key (ConfigError, before anything is set), then the defaults filled in."""
    schema = _load_schema(schema_path)
    _raise_for(config, schema)
    fill_defaults(config, schema)


def normalize_config(config: dict[str, Any]) -> None:
    """YAML 1.1 reads an unquoted `off` as false (and `on` as true): take them as meant."""
    if config.get("accelerator") is False:
        config["accelerator"] = "off"
    timing = config.get("timing")
    threads = timing.get("threads") if isinstance(timing, dict) else None  # not a mapping: the schema says so
    if isinstance(threads, int) and not isinstance(threads, bool):
        config["timing"]["threads"] = [threads]  # one thread count: a list of one


def _check_at_most(key: str, sizes: list[int], limit: int, what: str) -> None:
    too_large = [b for b in sizes if b > limit]
    if too_large:
        raise ConfigError(
            f"config key {key}: {too_large} larger than {what} = {limit}; allowed: batch sizes between 1 and {limit}"
        )


# torch.manual_seed and torch.Generator().manual_seed take 0 .. 2**64 - 1 (2**64 raises "Overflow when
# unpacking long long"); numpy's default_rng takes any non-negative integer. The workflow adds to `seed`:
# seed_limits trains with seed + i for i < selection.seeds, measure.training.prepare_variant warms up with seed + 1.
TORCH_SEED_MAX = 2**64 - 1
WARM_UP_SEED_OFFSET = 1


def seed_offset(config: dict[str, Any]) -> tuple[int, str]:
    """Return the largest number the workflow adds to `seed` before seeding torch, and where it comes from."""
    seeds = config["selection"]["seeds"] - 1
    if seeds >= WARM_UP_SEED_OFFSET:
        return seeds, "selection.seeds − 1"
    return WARM_UP_SEED_OFFSET, "the warm-up of every timing job"


def max_seed(config: dict[str, Any]) -> int:
    """Return the largest `seed` for which every seed the workflow derives from it still fits torch."""
    return TORCH_SEED_MAX - seed_offset(config)[0]


def check_config(config: dict[str, Any]) -> None:
    seed, largest = config["seed"], max_seed(config)
    if seed > largest:
        offset, source = seed_offset(config)
        raise ConfigError(
            f"config key seed: {seed} is too large: the workflow seeds torch with seed + {offset} "
            f"({source}), and torch accepts at most 2**64 − 1; allowed: an integer between 0 and {largest}"
        )
    rows, bench = config["data"]["benchmark"]["rows"], config["data"]["benchmark"]
    own = next((kind for kind in ("table", "arrays") if bench.get(kind)), None)
    # With your own data the rows are its file's (io.benchmark_data.resolve), and the gradient-variance
    # study of the generated matrix is not planned.
    source = f"the rows of data.benchmark.{own}" if own else "data.benchmark.rows"
    _check_at_most("timing.batch_sizes", config["timing"]["batch_sizes"], rows, source)
    if own is None:
        _check_at_most("gradient_variance.batch_sizes", config["gradient_variance"]["batch_sizes"], rows, source)
    split = config["selection"]["split"]
    total = split["train"] + split["val"] + split["test"]
    if abs(total - 1) > 1e-9:
        raise ConfigError(
            f"config key selection.split: train + val + test = {total:g}; allowed: ratios that add up to 1"
        )
    _check_planner(config["planner"])
    _check_scale(config["scale"])
    model = config["model"]
    problem = spec_problem(model["factory"], model["loss"], model["classes"])
    if problem:
        raise ConfigError(problem)
    table = config["data"]["northstar"]["table"]
    if table is not None:
        _check_table_path(table["path"])
        if table["target"] in table["features"]:
            raise ConfigError(
                f"config key data.northstar.table.features: lists the target column {table['target']!r}, "
                "which would give the model the label it has to predict; allowed: feature columns other "
                "than data.northstar.table.target"
            )
        return  # its row count is known only once the file is read (prepare_northstar checks it)
    train_rows = int(config["data"]["northstar"]["rows"] * split["train"])
    sizes = [*config["selection"]["batch_sizes"], config["selection"]["seed_batch_size"]]
    _check_at_most(
        "selection.batch_sizes / selection.seed_batch_size",
        sizes,
        train_rows,
        "the training split (data.northstar.rows × selection.split.train)",
    )


def _check_table_path(path: str) -> None:
    key, allowed = "config key data.northstar.table.path", "allowed: a Parquet or CSV file"
    if os.path.isdir(path):
        raise ConfigError(f"{key}: {path} is a directory, not a file; {allowed}")
    if not os.path.isfile(path):
        raise ConfigError(f"{key}: {path} does not exist; {allowed}")
    if os.path.getsize(path) == 0:
        raise ConfigError(f"{key}: {path} is empty (0 bytes); {allowed} with a header and rows")


def _check_scale(scale: dict[str, Any]) -> None:
    """The streaming study's sizes grow, its row groups are whole batches, and (when it is on) the
    largest dataset fits on the scratch folder's disk: refused before anything is written."""
    sizes = scale["sizes_gb"]
    if sizes != sorted(sizes):
        raise ConfigError(f"config key scale.sizes_gb: {sizes} does not grow; allowed: increasing sizes in GB")
    if scale["row_group_rows"] % scale["batch_size"]:
        raise ConfigError(
            f"config key scale.row_group_rows: {scale['row_group_rows']} is not a multiple of scale.batch_size "
            f"{scale['batch_size']}; allowed: whole batches per row group"
        )
    if scale["enabled"]:
        problem = streaming_data.free_space_problem(
            scale["scratch"], sizes[-1], scale["features"], scale["row_group_rows"]
        )
        if problem:
            raise ConfigError(problem)


def _check_planner(planner: dict[str, Any]) -> None:
    grid = planner["grid"]
    workloads = len(grid_workloads(grid["rows"], grid["features"], grid["hidden"], grid["batch_sizes"]))
    if workloads < 4:
        raise ConfigError(
            f"config key planner.grid: {workloads} workload(s) with batch size <= rows; allowed: at least 4 "
            "(the cost model fits 3 terms and is checked out of sample)"
        )
    if planner["gpu_assumed"] is None:
        gpu_profiles.resolve(planner["gpu_profile"])  # a name that is no profile stops the run here, naming the key
    for axis, (low, high) in planner["sweep"].items():
        if low >= high:
            raise ConfigError(
                f"config key planner.sweep.{axis}: [{low}, {high}]; allowed: [smallest, largest] with smallest < largest"
            )
