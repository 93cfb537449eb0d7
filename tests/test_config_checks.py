"""Parse-time configuration checks: what a JSON schema cannot say, one line per problem naming the key."""

from __future__ import annotations

import json

import pytest
import yaml

from accel_choice import config_checks


@pytest.fixture()
def config(repo):
    """The default configuration, complete (every key present, as after Snakemake's validate)."""
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
    with pytest.raises(config_checks.ConfigError, match="config key data.northstar.table.features: lists the target "
                                                        "column 'late'"):
        config_checks.check_config(_own_table(config, tmp_path / "orders.csv", features=("a", "late")))
