"""Checks across config keys that a JSON schema cannot express. Run at parse time."""

from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """A configuration value is unusable; the message names the key."""


def check_config(config: dict[str, Any]) -> None:
    rows = config["data"]["benchmark"]["rows"]
    too_large = [b for b in config["timing"]["batch_sizes"] if b > rows]
    if too_large:
        raise ConfigError(
            f"timing.batch_sizes: {too_large} larger than data.benchmark.rows = {rows}; "
            f"every batch size must be between 1 and {rows}"
        )
