"""The worked examples' data are what examples/make_data.py makes, byte for byte, and their models
build from the example configs."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import yaml

from accel_choice.io import atomic
from accel_choice.measure import model
from accel_choice.records.model import ModelSpec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))
import make_data  # noqa: E402


def test_the_shipped_example_data_are_the_scripts_output(tmp_path: Path) -> None:
    make_data.write(tmp_path, order_rows=16384, sequence_rows=4096, seed=20261202)
    for name in ("orders.parquet", "sequences_x.npy", "sequences_y.npy"):
        assert atomic.sha256_file(tmp_path / name) == atomic.sha256_file(EXAMPLES / "data" / name), name


def test_the_example_models_build_from_their_configs() -> None:
    for name, shape, outputs in (("residual_mlp", (19,), 1), ("conv1d", (1, 128), 3)):
        section = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())["model"]
        spec = ModelSpec(hidden=48, **{**section, "path": str(EXAMPLES)})
        net = model.build(spec, shape, 0)
        assert net(torch.zeros(4, *shape)).shape == (
            4,
            outputs,
        )
