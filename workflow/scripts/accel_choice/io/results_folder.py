"""Reading an archived results/ folder for the comparison: its tables, environment, provenance and
manifest, each value checked on the way in (folder_checks) so a damaged record stops the command
with the file, row and field named, before anything is written.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from accel_choice.io import folder_checks as checks
from accel_choice.io import atomic, manifest
from accel_choice.io.folder_checks import NotAResultsFolder, incomplete

MANIFEST = manifest.MANIFEST_NAME
CONFIG = "config.yaml"
CPU_TABLE = "tables/cpu_training.json"
GPU_TABLE = "tables/gpu_training.json"
DECISION = "tables/decision.json"
FULL_PATH_CSV = "tables/full_path.csv"
ENVIRONMENT = "env/collect_env.json"
PROVENANCE = "provenance.json"

@dataclass(frozen=True)
class ManifestCheck:
    """A folder against its MANIFEST.sha256, by `manifest.verify`: absent, unreadable (`error`), or checked."""

    present: bool
    result: manifest.Verification | None = None
    error: str | None = None  # a malformed or repeated line, or a manifest that cannot be read

    @property
    def verified(self) -> bool:
        return self.result is not None and self.result.matches


@dataclass(frozen=True)
class ResultsFolder:
    label: str
    path: Path
    config: dict[str, Any]
    training: list[dict[str, Any]]  # CPU rows, then GPU rows when the folder has them
    non_finite: list[dict[str, Any]]
    full_path: list[dict[str, Any]]
    environment: dict[str, Any]  # env/collect_env.json: {"collect_env", "quick", ...}
    table_environment: dict[str, Any] | None  # the aggregation job's quick record in cpu_training.json
    verdict: dict[str, Any] | None
    provenance: dict[str, Any] | None
    has_gpu_table: bool
    manifest: ManifestCheck

    @property
    def gpu_rows(self) -> list[dict[str, Any]]:
        return [row for row in self.training if row["device"] != "cpu"]


# ---------------------------------------------------------------- loading


def load_results(path: str | os.PathLike[str], label: str) -> ResultsFolder:
    """Read one results folder; raise NotAResultsFolder naming the first missing or bad file.

    Every value the comparison computes with is checked first (`compare_checks`): a bad one is a DamagedRecord,
    a NotAResultsFolder that names the file, the row and the field.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise NotAResultsFolder(f"{folder}: no such folder (expected an accel-choice results/ folder)")
    cpu = _json(folder, CPU_TABLE, checks.training_document)
    if not cpu["table"]:
        raise incomplete(folder, CPU_TABLE, "has no rows")
    has_gpu_table = (folder / GPU_TABLE).exists()
    gpu = _json(folder, GPU_TABLE, checks.training_document) if has_gpu_table else {"table": [], "non_finite": []}
    decision = _json(folder, DECISION, checks.decision_document) if (folder / DECISION).exists() else None
    return ResultsFolder(
        label=label,
        path=folder,
        config=_config(folder),
        training=cpu["table"] + gpu["table"],
        non_finite=list(cpu.get("non_finite") or []) + list(gpu.get("non_finite") or []),
        full_path=_full_path(folder, decision),
        environment=_json(folder, ENVIRONMENT, checks.environment_document),
        table_environment=cpu.get("environment") if isinstance(cpu.get("environment"), dict) else None,
        verdict=decision.get("verdict") if decision else None,
        provenance=_json(folder, PROVENANCE, checks.object_document) if (folder / PROVENANCE).exists() else None,
        has_gpu_table=has_gpu_table,
        manifest=verify_manifest(folder),
    )


def _read_json(folder: Path, name: str) -> Any:
    if not (folder / name).is_file():
        raise incomplete(folder, name)
    try:
        return atomic.read_json(folder / name)
    except ValueError as err:
        raise NotAResultsFolder(str(err).replace("; delete it and re-run the workflow", "")) from err
    except OSError as err:
        raise NotAResultsFolder(f"{folder / name}: cannot be read ({err.strerror})") from err


def _json(folder: Path, name: str, check: Callable[[Any, Path, str], None]) -> Any:
    """A JSON document of the folder, after `check` (one of compare_checks' document checks) accepted it."""
    document = _read_json(folder, name)
    check(document, folder, name)
    return document


def _config(folder: Path) -> dict[str, Any]:
    if not (folder / CONFIG).is_file():
        raise incomplete(folder, CONFIG)
    try:
        config = yaml.safe_load((folder / CONFIG).read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise NotAResultsFolder(f"{folder / CONFIG}: not valid YAML ({' '.join(str(err).split())})") from err
    except OSError as err:
        raise NotAResultsFolder(f"{folder / CONFIG}: cannot be read ({err.strerror})") from err
    checks.object_document(config, folder, CONFIG)
    return config


def _full_path(folder: Path, decision: dict[str, Any] | None) -> list[dict[str, Any]]:
    if decision and isinstance(decision.get("full_path"), list):
        return decision["full_path"]  # checked with decision.json
    if not (folder / FULL_PATH_CSV).is_file():
        raise incomplete(folder, FULL_PATH_CSV, f"missing, and there is no full_path in {DECISION} either")
    rows = _read_csv(folder, FULL_PATH_CSV)
    checks.full_path_rows(rows, folder, FULL_PATH_CSV)
    return rows


def _read_csv(folder: Path, name: str) -> list[dict[str, Any]]:
    try:
        with open(folder / name, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
    except (UnicodeDecodeError, csv.Error) as err:
        raise NotAResultsFolder(f"{folder / name}: not a valid CSV table ({err})") from err
    except OSError as err:
        raise NotAResultsFolder(f"{folder / name}: cannot be read ({err.strerror})") from err
    for number, row in enumerate(rows):
        if None in row:  # csv.DictReader's key for cells beyond the header
            raise incomplete(folder, name, f"row {number} has more cells than the header")
    return [{key: _csv_value(value) for key, value in row.items()} for row in rows]


def _csv_value(text: str | None) -> Any:
    if text is None:  # a row shorter than the header
        return None
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return None if text == "" else text


# ---------------------------------------------------------------- manifest

def verify_manifest(folder: Path) -> ManifestCheck:
    """Check the folder against its MANIFEST.sha256 the way verify_results.py does (`manifest.verify`):
    changed, missing, linked and added entries are reported; a malformed manifest is reported, not fatal."""
    if not (folder / MANIFEST).is_file():
        return ManifestCheck(present=False)
    try:
        return ManifestCheck(present=True, result=manifest.verify(folder))
    except (OSError, manifest.ManifestError) as error:
        return ManifestCheck(present=True, error=str(error))
