"""Parse-time configuration checks: what a JSON schema cannot say, one line per problem naming the key."""

from __future__ import annotations

import json

import pytest
import yaml

from accel_choice.io import config_checks


@pytest.fixture()
def config(repo):
    """The default configuration, complete (every key present, as after config_checks.validate)."""
    with open(repo / "config" / "config.yaml", encoding="utf-8") as handle:
        return json.loads(json.dumps(yaml.safe_load(handle)))


def _own_table(config, path, target="late", features=("a", "b")):
    config["data"]["northstar"]["table"] = {"path": str(path), "target": target, "features": list(features)}
    return config


def test_own_table_that_exists_passes(config, tmp_path):
    (tmp_path / "orders.csv").write_text("a,b,late\n1,2,0\n")
    config_checks.check_config(_own_table(config, tmp_path / "orders.csv"))


def _empty_file(folder):
    (folder / "orders.csv").write_bytes(b"")
    return folder / "orders.csv"


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda folder: folder / "nope.csv", "nope.csv does not exist; allowed: a Parquet or CSV file"),
        (lambda folder: folder, "is a directory, not a file; allowed: a Parquet or CSV file"),
        (_empty_file, "orders.csv is empty (0 bytes); allowed: a Parquet or CSV file with a header and rows"),
    ],
    ids=["missing", "directory", "empty"],
)
def test_own_table_path_problems_name_the_key(config, tmp_path, make, says):
    with pytest.raises(config_checks.ConfigError) as error:
        config_checks.check_config(_own_table(config, make(tmp_path)))
    assert str(error.value).startswith("config key data.northstar.table.path: ") and says in str(error.value)


def test_own_table_listing_its_target_as_a_feature(config, tmp_path):
    (tmp_path / "orders.csv").write_text("a,late\n1,0\n")
    with pytest.raises(
        config_checks.ConfigError, match="config key data.northstar.table.features: lists the target column 'late'"
    ):
        config_checks.check_config(_own_table(config, tmp_path / "orders.csv", features=("a", "late")))


# --- non-finite numbers: every key that takes a number ---------------------------------------


@pytest.fixture(scope="module")
def schema(repo):
    with open(repo / "workflow" / "schemas" / "config.schema.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _numeric_keys(schema, path=()):
    """Every path in the schema whose value (or list item) is a number or an integer."""
    kinds = schema.get("type", [])
    kinds = {kinds} if isinstance(kinds, str) else set(kinds)
    if kinds & {"number", "integer"}:
        yield path
    for key, sub in schema.get("properties", {}).items():
        yield from _numeric_keys(sub, (*path, key))
    if "items" in schema:
        yield from _numeric_keys(schema["items"], (*path, 0))


def _config_with(path, value):
    """The smallest config that holds `value` at `path` (lists of one item)."""
    for part in reversed(path):
        value = [value] if isinstance(part, int) else {part: value}
    return value


def test_the_schema_has_float_and_integer_keys_to_check(schema):
    keys = {config_checks.dotted_key(path) for path in _numeric_keys(schema)}
    assert {"seed", "model.lr", "aggregate.noise_iqr_ratio", "timing.batch_sizes[0]", "planner.sweep.rows[0]"} <= keys
    assert len(keys) > 40


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
def test_every_numeric_key_refuses_a_non_finite_value(schema, value):
    for path in _numeric_keys(schema):
        key = config_checks.dotted_key(path)
        # Only the value's own line: a list of one may be too short, which is another key's line.
        errors = config_checks.schema_errors(_config_with(path, value), schema)
        errors = [e for e in errors if e.startswith(f"config key {key}:")]
        assert len(errors) == 1, (key, errors)
        assert errors[0].startswith(f"config key {key}: {value} is not a finite number; allowed: "), errors


def test_non_finite_values_are_one_line_each_among_other_errors(schema):
    config = {"model": {"lr": float("nan"), "hidden": 0}, "aggregate": {"noise_iqr_ratio": float("inf")}}
    assert config_checks.schema_errors(config, schema) == [
        "config key aggregate.noise_iqr_ratio: inf is not a finite number; allowed: a number > 0",
        "config key model.hidden: 0 is less than the minimum of 1; allowed: an integer >= 1",
        "config key model.lr: nan is not a finite number; allowed: a number > 0",
    ]


@pytest.mark.parametrize(
    ("text", "key", "write"),
    [
        ("seed: 1000.0", "seed", 1000),
        ("timing:\n  repeats: 3.0", "timing.repeats", 3),
        ("planner:\n  sweep:\n    rows: [1.0e+3, 10]", "planner.sweep.rows[0]", 1000),
    ],
)
def test_an_integer_written_as_a_float_is_refused(schema, text, key, write):
    # jsonschema counts 1000.0 as an integer; numpy's default_rng(1000.0) raises a TypeError in the first job.
    (message,) = config_checks.schema_errors(yaml.safe_load(text), schema)
    assert message.startswith(
        f"config key {key}: {float(write)} is not an integer (it has a decimal point or an "
        f"exponent: write {write}); allowed: an integer >= "
    )


def test_the_default_config_passes_the_schema(schema, config):
    assert config_checks.schema_errors(config, schema) == []


# --- the one validation: the schema's check, then its defaults as Snakemake's validate sets them ------


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "seed: 7\ntiming: {batch_sizes: [16], threads: [1]}\n",
        "data: {northstar: {table: {path: o.csv, target: late, features: [a]}}}\ncost: {per_hour: {cpu: 0.2}}\n",
        "model: {factory: 'models.net:build', kwargs: {width: 3}}\nscale: {enabled: true}\n",
    ],
    ids=["empty", "some keys", "own table and prices", "own model"],
)
def test_validate_fills_in_the_defaults_that_snakemakes_validate_did(repo, text):
    from snakemake.utils import validate as snakemake_validate

    path = repo / "workflow" / "schemas" / "config.schema.yaml"
    ours, snakemakes = yaml.safe_load(text), yaml.safe_load(text)
    config_checks.validate(ours, path)
    snakemake_validate(snakemakes, str(path))
    assert ours == snakemakes
    assert ours["timing"]["repeats"] == 4 and ours["gpu"]["precisions"] == ["fp32", "fp16", "bf16"]


def test_validate_refuses_before_filling_anything_in(repo):
    config = {"timing": {"repeats": 1}}
    with pytest.raises(config_checks.ConfigError, match=r"config key timing\.repeats: 1 is less than the minimum of 3"):
        config_checks.validate(config, repo / "workflow" / "schemas" / "config.schema.yaml")
    assert config == {"timing": {"repeats": 1}}


def test_check_schema_raises_on_yaml_nan(repo):
    config = yaml.safe_load("model:\n  lr: .nan\n")
    with pytest.raises(config_checks.ConfigError, match="config key model.lr: nan is not a finite number"):
        config_checks.check_schema(config, repo / "workflow" / "schemas" / "config.schema.yaml")


@pytest.mark.parametrize(
    ("config", "says"),
    [
        (
            {"timing": {"batch_sizes": ["32"]}},
            "(a number written as text: --config KEY={...} passes nested values as text",
        ),
        ({"model": {"lr": "0.01"}}, "(a number written as text"),
        ({"gpu": {"grad_scaler": "false"}}, "(true or false written as text"),
    ],
    ids=["batch size", "lr", "boolean"],
)
def test_numbers_as_text_are_refused_with_the_reason(schema, config, says):
    (message,) = config_checks.schema_errors(config, schema)
    assert "is not of type" in message and says in message


def test_text_that_is_no_number_gets_no_hint(schema):
    (message,) = config_checks.schema_errors({"model": {"lr": "fast"}}, schema)
    assert message == "config key model.lr: 'fast' is not of type 'number'; allowed: a number > 0"


# --- seed: what torch takes, after the offsets the workflow adds ------------------------------


def test_torch_and_numpy_take_the_seeds_the_limit_says():
    import numpy as np
    import torch

    torch.manual_seed(config_checks.TORCH_SEED_MAX)
    torch.Generator().manual_seed(config_checks.TORCH_SEED_MAX)
    np.random.default_rng(config_checks.TORCH_SEED_MAX + 1)  # numpy has no upper limit
    for seeding in (torch.manual_seed, torch.Generator().manual_seed):
        with pytest.raises((RuntimeError, ValueError)):
            seeding(config_checks.TORCH_SEED_MAX + 1)


def test_the_largest_seed_reaches_every_seeded_call_with_its_offsets(config):
    """Everything seeded from `seed` in the workflow, at the largest seed plus the offsets added to it."""
    import numpy as np
    import torch

    from accel_choice.measure import datagen, loaders, model
    from accel_choice.analyze import selection

    seed = config_checks.max_seed(config)
    offset, _ = config_checks.seed_offset(config)
    datagen.make_benchmark(16, 3, 0.2, seed)
    target = datagen.make_northstar(40, 0.3, seed).target
    selection.stratified_split(target, {"train": 0.6, "val": 0.2, "test": 0.2}, seed)
    x, y = torch.zeros(8, 3), torch.zeros(8)
    for extra in sorted({0, config_checks.WARM_UP_SEED_OFFSET, offset}):
        model.build_model(3, 4, seed + extra)
        for kind in loaders.LOADERS:
            assert sum(len(batch[0]) for batch in loaders.make_loader(kind, x, y, 4, True, seed + extra)) == 8
    with pytest.raises((RuntimeError, ValueError)):
        model.build_model(3, 4, seed + offset + 1)
    assert np.isfinite(target).all()


def test_seed_limit_follows_selection_seeds(config):
    config["selection"]["seeds"] = 5
    assert config_checks.seed_offset(config) == (4, "selection.seeds − 1")
    assert config_checks.max_seed(config) == 2**64 - 1 - 4
    config["selection"]["seeds"] = 2  # seed + 1: as much as the warm-up adds
    assert config_checks.max_seed(config) == 2**64 - 2


@pytest.mark.parametrize("seed", [2**64 - 1, 2**64 - 4, 2**70])
def test_seed_too_large_for_torch_is_refused_with_the_limit(config, seed):
    config["seed"], config["selection"]["seeds"] = seed, 5
    with pytest.raises(config_checks.ConfigError) as error:
        config_checks.check_config(config)
    assert str(error.value) == (
        f"config key seed: {seed} is too large: the workflow seeds torch with seed + 4 (selection.seeds − 1), and "
        f"torch accepts at most 2**64 − 1; allowed: an integer between 0 and {2**64 - 5}"
    )


def test_the_largest_seed_passes(config):
    config["seed"] = config_checks.max_seed(config)
    config_checks.check_config(config)


# --- plausible mistakes: one line naming the key, never a traceback --------------------------


@pytest.mark.parametrize(
    ("config", "says"),
    [
        (
            {"data": {"northstar": {"table": "orders.csv"}}},
            "config key data.northstar.table: 'orders.csv' is not of type 'object', 'null'; "
            "allowed: a mapping with keys path, target, features or null",
        ),
        (
            {"cost": {"per_hour": "cheap"}},
            "config key cost.per_hour: 'cheap' is not of type 'object', 'null'; allowed: a mapping with keys cpu,",
        ),
        (
            {"model": {"classes": "3"}},
            "config key model.classes: '3' is not of type 'integer', 'null'; allowed: an integer or null >= 2 "
            "(a number written as text",
        ),
        (
            {"timing": None},
            "config key timing: None is not of type 'object'; allowed: a mapping with keys batch_sizes,",
        ),
        ({"timing": 5}, "config key timing: 5 is not of type 'object'; allowed: a mapping with keys batch_sizes,"),
    ],
    ids=["table as a path", "price as a word", "classes as text", "timing left empty", "timing=5"],
)
def test_a_value_of_the_wrong_kind_is_one_line_naming_the_key(schema, config, says):
    config_checks.normalize_config(config)  # runs first at parse time: it must not trip over them
    (message,) = config_checks.schema_errors(config, schema)
    assert message.startswith(says)


def test_the_matmul_precision_is_one_of_torchs_three(schema):
    """timing.matmul_precision: torch.set_float32_matmul_precision's values; anything else is refused."""
    for value in ("highest", "high", "medium"):
        assert config_checks.schema_errors({"timing": {"matmul_precision": value}}, schema) == []
    (message,) = config_checks.schema_errors({"timing": {"matmul_precision": "tf32"}}, schema)
    assert "tf32" in message and "matmul_precision" in message
