"""The config files read again as text (io/config_files.py): a key set twice, aliases that expand too far."""

from __future__ import annotations

import pytest
import yaml

from accel_choice.io import config_files


# --- a key set twice in a config file ---------------------------------------------------------


def test_duplicate_keys_top_level_and_nested():
    text = "seed: 5\ntiming:\n  repeats: 3\n  batch_sizes: [16]\n  repeats: 4\nseed: 6\n"
    assert config_files.duplicate_keys(text) == [("seed", [(1, 1), (6, 1)]), ("timing.repeats", [(3, 3), (5, 3)])]


def test_duplicate_keys_in_a_list_item_and_three_times():
    text = "planner:\n  grid:\n    rows: [1]\n    rows: [2]\n    rows: [3]\nl:\n  - {k: 1, k: 2}\n"
    assert config_files.duplicate_keys(text) == [
        ("planner.grid.rows", [(3, 5), (4, 5), (5, 5)]),
        ("l[0].k", [(7, 6), (7, 12)]),
    ]


def test_no_duplicates_in_a_clean_file_or_an_overridden_merge_key(repo):
    assert config_files.duplicate_keys((repo / "config" / "config.yaml").read_text()) == []
    assert config_files.duplicate_keys("base: &b {rows: 1}\nother:\n  <<: *b\n  rows: 2\n") == []
    assert config_files.duplicate_keys("") == []


def test_check_config_files_names_file_key_and_lines(tmp_path, repo):
    clean, twice = tmp_path / "clean.yaml", tmp_path / "twice.yaml"
    clean.write_text("seed: 5\n")
    twice.write_text("seed: 5\ntiming:\n  repeats: 3\n  repeats: 4\nseed: 6\n")
    config_files.check_config_files([repo / "config" / "config.yaml", clean])
    with pytest.raises(config_files.ConfigError) as error:
        config_files.check_config_files([clean, str(twice)])
    assert str(error.value) == (
        "invalid configuration, nothing was run:\n"
        f"  config file {twice}: key seed is set twice, on lines 1 and 5; only the last would count: keep one\n"
        f"  config file {twice}: key timing.repeats is set twice, on lines 3 and 4; only the last would count: keep one"
    )


def test_check_config_files_on_json_on_one_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"seed": 5, "timing": {"repeats": 3, "repeats": 4}}')
    with pytest.raises(config_files.ConfigError, match="key timing.repeats is set twice, at line:column 1:24 and 1:38"):
        config_files.check_config_files([path])


# --- nested aliases ("billion laughs"): refused before anything walks them --------------------


def _alias_bomb(levels: int, width: int = 10) -> str:
    """A config of `levels` lists, each `width` aliases of the one before: width**levels values."""
    lines = ["a0: &a0 [" + ", ".join(["1.5"] * width) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_expanded_size_counts_aliases_without_expanding_them():
    # the mapping, then each key with its value: a and 1; b and a list of two
    assert config_files.expanded_size(yaml.compose("a: 1\nb: [1, 2]\n")) == 1 + (1 + 1) + (1 + 3)
    shared = yaml.compose("a: &x [1, 2]\nb: *x\nc: [*x, *x]\n")
    assert config_files.expanded_size(shared) == 1 + (1 + 3) + (1 + 3) + (1 + (1 + 3 + 3))  # *x counts as [1, 2]
    assert config_files.expanded_size(yaml.compose(_alias_bomb(9))) > 10**9  # counted at once
    assert config_files.expanded_size(yaml.compose("")) == 0


def test_a_nine_line_alias_bomb_is_refused_at_once_naming_the_file(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_alias_bomb(9))
    with pytest.raises(config_files.ConfigError) as error:
        config_files.check_config_files([path])  # walking its expansion would take hours
    assert f"config file {path}: its aliases (*name) expand to 1,234,567,909 values, more than the 100,000" in str(
        error.value
    )


def test_aliases_a_config_really_uses_pass(tmp_path, repo):
    path = tmp_path / "anchors.yaml"
    path.write_text("timing:\n  batch_sizes: &sizes [16, 32]\ngradient_variance:\n  batch_sizes: *sizes\n")
    config_files.check_config_files([path, repo / "config" / "config.yaml"])
    assert config_files.expanded_size(yaml.compose(_alias_bomb(4))) <= config_files.MAX_EXPANDED_VALUES
    config_files.duplicate_keys(_alias_bomb(4))


# --- the shipped overlays: merged over config/config.yaml, as `--configfile` does ------------------------------


def _merged(base: dict, overlay: dict) -> dict:
    for key, value in overlay.items():
        base[key] = _merged(base.get(key) or {}, value) if isinstance(value, dict) else value
    return base


@pytest.mark.parametrize("overlay", ["gpu-machine.yaml", "scale.yaml"])
def test_a_shipped_overlay_over_the_default_config_passes_the_schema_and_the_checks(repo, overlay):
    from accel_choice.io import config_checks

    path = repo / "config" / overlay
    config_files.check_config_files([repo / "config" / "config.yaml", path])
    config = _merged(yaml.safe_load((repo / "config" / "config.yaml").read_text()), yaml.safe_load(path.read_text()))
    config_checks.validate(config, repo / "workflow" / "schemas" / "config.schema.yaml")
    if overlay == "gpu-machine.yaml":
        config_checks.check_config(config)  # scale.yaml's asks the scratch disk for its space: not here
        assert config["timing"]["repeats"] >= 3 and config["planner"]["repeats"] >= 3  # intervals, as by default
