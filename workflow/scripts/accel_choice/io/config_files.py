"""The config files themselves, read again as text before their values are checked (io.config_checks).

`check_config_files` refuses a file that sets a key twice (YAML, and Snakemake, keep the last
silently), and one whose aliases expand to more values than any configuration needs: nine lines of
nested `&anchor` / `*alias` lists hold 10**9 values, and every walk over such a config would take
hours. Both are answered from the YAML node graph, which holds each aliased node once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import yaml

from accel_choice.io.config_checks import ConfigError, dotted_key


class DuplicateKeyError(ConfigError):
    """A config file holds a key twice in one mapping; YAML would silently keep the last."""


class AliasBombError(ConfigError):
    """A config file whose aliases expand to more values than any configuration needs."""

    def __init__(self, values: int):
        super().__init__(values)
        self.values = values


# The most values a config file may hold once its aliases are expanded. The default config holds a few
# hundred; a file of nested aliases ("billion laughs") holds 10**9 in nine lines, and every walk over
# the config (this module's checks, the schema's) would take hours over it.
MAX_EXPANDED_VALUES = 100_000


def expanded_size(node: yaml.Node | None) -> int:
    """Count the nodes the YAML node graph `node` holds with every alias expanded.

    How many nodes the YAML node graph `node` holds with every alias expanded, counted without
    expanding anything: an alias is the node it names, so each node's size is computed once."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        if id(node) not in sizes:
            sizes[id(node)] = 1  # a recursive alias (YAML allows them) counts once instead of looping
            children = node.value if isinstance(node, yaml.SequenceNode) else ()
            if isinstance(node, yaml.MappingNode):
                children = [child for pair in node.value for child in pair]
            sizes[id(node)] = 1 + sum(size(child) for child in children)
        return sizes[id(node)]

    return 0 if node is None else size(node)


def duplicate_keys(text: str) -> list[tuple[str, list[tuple[int, int]]]]:
    """Keys that one mapping of a YAML document holds more than once: (dotted key, (line, column) of each).

    Raises AliasBombError, walking nothing, when the document's aliases expand to more than
    MAX_EXPANDED_VALUES values."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        values = expanded_size(root)
        if values > MAX_EXPANDED_VALUES:
            raise AliasBombError(values)
        found: list[tuple[str, list[tuple[int, int]]]] = []

        def walk(node: yaml.Node, path: tuple[Any, ...]) -> None:
            if isinstance(node, yaml.MappingNode):
                lines: dict[Any, list[tuple[int, int]]] = {}
                for key_node, value_node in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` may be overridden on purpose
                        continue
                    key = loader.construct_object(key_node, deep=True)
                    if isinstance(key, (str, int, float, bool)) or key is None:
                        mark = key_node.start_mark
                        lines.setdefault(key, []).append((mark.line + 1, mark.column + 1))
                    walk(value_node, (*path, key))
                found.extend((dotted_key((*path, key)), at) for key, at in lines.items() if len(at) > 1)
            elif isinstance(node, yaml.SequenceNode):
                for index, item in enumerate(node.value):
                    walk(item, (*path, index))

        if root is not None:
            walk(root, ())
        return sorted(found, key=lambda pair: pair[1])
    finally:
        loader.dispose()


def check_config_files(paths: Sequence[str | os.PathLike[str]]) -> None:
    """Refuse a config file that sets a key twice: YAML (and Snakemake) keep the last one silently."""
    problems = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        try:
            duplicates = duplicate_keys(text)
        except yaml.YAMLError:
            continue  # JSON that YAML 1.1 cannot read (Snakemake read it as JSON); nothing to say here
        except AliasBombError as bomb:
            raise ConfigError(
                f"invalid configuration, nothing was run:\n  config file {path}: its aliases (*name) expand to "
                f"{bomb.values:,} values, more than the {MAX_EXPANDED_VALUES:,} any configuration needs; allowed: "
                "a config whose values, aliases expanded, number at most that (write the lists out)"
            ) from None
        for key, places in duplicates:
            lines = [line for line, _ in places]
            if len(set(lines)) == len(lines):
                shown, where = list(map(str, lines)), "on lines"
            else:  # JSON on one line, say
                shown, where = [f"{line}:{column}" for line, column in places], "at line:column"
            times = "twice" if len(places) == 2 else f"{len(places)} times"
            problems.append(
                f"config file {path}: key {key} is set {times}, {where} {', '.join(shown[:-1])} and "
                f"{shown[-1]}; only the last would count: keep one"
            )
    if problems:
        raise DuplicateKeyError("invalid configuration, nothing was run:\n  " + "\n  ".join(problems))
