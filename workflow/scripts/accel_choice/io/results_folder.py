"""Reading an archived results/ folder for the comparison: its records (training tables, decision,
environment), configuration, provenance and manifest. Every record is checked as it is read, so a
damaged value stops the command with the file and the field named, before anything is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from accel_choice import records
from accel_choice.io import atomic, manifest, paths
from accel_choice.io.folder_checks import DamagedRecord, NotAResultsFolder, incomplete, object_document
from accel_choice.records.decision import Decision, FullPathTable, Verdict
from accel_choice.records.environment import Environment, EnvironmentReport
from accel_choice.records.sentinel import SentinelSummary
from accel_choice.records.training import NonFiniteRun, TrainingCell, TrainingTable
from accel_choice.records.fullpath import FullPathRow

R = TypeVar("R")


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
    training: list[TrainingCell]  # CPU cells, then GPU cells when the folder has them
    non_finite: list[NonFiniteRun]
    full_path: list[FullPathRow]
    environment: EnvironmentReport
    table_environment: Environment  # the aggregation job's record in cpu_training.json
    verdict: Verdict | None
    provenance: dict[str, Any] | None
    has_gpu_table: bool
    manifest: ManifestCheck
    # Each training table's drift sentinel: "cpu" always, "gpu" when the folder has a GPU table.
    sentinels: dict[str, SentinelSummary]

    @property
    def gpu_rows(self) -> list[TrainingCell]:
        return [row for row in self.training if row.device != "cpu"]

    def sentinel_of(self, device: str) -> SentinelSummary | None:
        """Return the sentinel of the table a cell of `device` comes from (CPU cells: the CPU table's)."""
        return self.sentinels.get("cpu" if device == "cpu" else "gpu")

    def noise_floor(self, device: str) -> float | None:
        """Return the run's own drift for cells of `device`: differences below ± this fraction are not evidence."""
        sentinel = self.sentinel_of(device)
        return sentinel.noise_floor if sentinel else None


# ---------------------------------------------------------------- loading


def load_results(path: str | os.PathLike[str], label: str) -> ResultsFolder:
    """Read one results folder.

    Read one results folder; raise NotAResultsFolder naming the first missing or bad file (a DamagedRecord,
    naming the field too, for a value no run writes)."""
    folder = Path(path)
    if not folder.is_dir():
        raise NotAResultsFolder(f"{folder}: no such folder (expected an accel-choice {paths.RESULTS}/ folder)")
    cpu = _training_table(folder, paths.CPU_TABLE)
    if not cpu.table:
        raise incomplete(folder, paths.CPU_TABLE, "has no rows")
    has_gpu_table = (folder / paths.GPU_TABLE).exists()
    gpu = _training_table(folder, paths.GPU_TABLE) if has_gpu_table else None
    decision = _record(folder, paths.DECISION, Decision) if (folder / paths.DECISION).exists() else None
    if decision is not None:
        full_path = list(decision.full_path)
    elif (folder / paths.FULL_PATH).exists():
        full_path = list(_record(folder, paths.FULL_PATH, FullPathTable).rows)
    else:
        raise incomplete(folder, paths.FULL_PATH, f"missing, and there is no {paths.DECISION} either")
    return ResultsFolder(
        label=label,
        path=folder,
        config=_config(folder),
        training=[*cpu.table, *(gpu.table if gpu else ())],
        non_finite=[*cpu.non_finite, *(gpu.non_finite if gpu else ())],
        full_path=full_path,
        environment=_record(folder, paths.ENVIRONMENT, EnvironmentReport),
        table_environment=cpu.environment,
        verdict=decision.verdict if decision else None,
        provenance=_provenance(folder),
        has_gpu_table=has_gpu_table,
        manifest=verify_manifest(folder),
        sentinels={"cpu": cpu.sentinel, **({"gpu": gpu.sentinel} if gpu else {})},
    )


def _record(folder: Path, name: str, cls: type[R]) -> R:
    if not (folder / name).is_file():
        raise incomplete(folder, name)
    try:
        return records.read(cls, folder / name)
    except records.RecordError as err:
        # An archived folder is compared as it is: the workflow's advice to delete and re-run does not apply.
        message = str(err).removesuffix(f"; {records.RERUN}").removesuffix(f": {records.RERUN}")
        raise DamagedRecord(message) from None


def _training_table(folder: Path, name: str) -> TrainingTable:
    """A training table whose cells' jobs all hold a time: the comparison resamples the jobs (a cell's
    point is checked against its jobs by the record itself, records.training.TrainingCell)."""
    table = _record(folder, name, TrainingTable)
    for number, cell in enumerate(table.table):
        for metric in ("epoch_s", "eval_s"):
            if not all(getattr(cell, f"{metric}_jobs")):
                raise DamagedRecord(f"{folder / name}: table[{number}].{metric}_jobs: a job without a time")
    return table


def _provenance(folder: Path) -> dict[str, Any] | None:
    if not (folder / paths.PROVENANCE).exists():
        return None
    try:
        document = atomic.read_json(folder / paths.PROVENANCE)
    except ValueError as err:
        raise NotAResultsFolder(str(err).replace("; delete it and re-run the workflow", "")) from err
    except OSError as err:
        raise NotAResultsFolder(f"{folder / paths.PROVENANCE}: cannot be read ({err.strerror})") from err
    object_document(document, folder, paths.PROVENANCE)
    return document


def _config(folder: Path) -> dict[str, Any]:
    if not (folder / paths.CONFIG).is_file():
        raise incomplete(folder, paths.CONFIG)
    try:
        config = yaml.safe_load((folder / paths.CONFIG).read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise NotAResultsFolder(f"{folder / paths.CONFIG}: not valid YAML ({' '.join(str(err).split())})") from err
    except OSError as err:
        raise NotAResultsFolder(f"{folder / paths.CONFIG}: cannot be read ({err.strerror})") from err
    object_document(config, folder, paths.CONFIG)
    return config


# ---------------------------------------------------------------- manifest


def verify_manifest(folder: Path) -> ManifestCheck:
    """Check the folder against its MANIFEST.sha256.

    Check the folder against its MANIFEST.sha256 the way verify_results.py does (`manifest.verify`):
    changed, missing, linked and added entries are reported; a malformed manifest is reported, not fatal."""
    if not (folder / paths.MANIFEST).is_file():
        return ManifestCheck(present=False)
    try:
        return ManifestCheck(present=True, result=manifest.verify(folder))
    except (OSError, manifest.ManifestError) as error:
        return ManifestCheck(present=True, error=str(error))


# ---------------------------------------------------------------- a copy, not a second run


def copy_of(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> str | None:
    """Say whether folder `b` is a byte-identical copy of folder `a`.

    Whether folder `b` is a byte-identical copy of folder `a` (two different folders): "folder" when both hold
    the same files with the same bytes (nothing but regular files); "tables" when only the training tables the
    comparison reads are the same bytes; None otherwise, and for one folder given twice."""
    a, b = Path(a), Path(b)
    if a.resolve() == b.resolve():
        return None
    tables = [name for name in (paths.CPU_TABLE, paths.GPU_TABLE) if (a / name).is_file() or (b / name).is_file()]
    if not all(_same_bytes(a / name, b / name) for name in tables):
        return None
    entries = [manifest.walk(folder) for folder in (a, b)]
    if entries[0] == entries[1] and all(entry.kind == "file" for entry in entries[0]):
        if all(_same_bytes(a / entry.path, b / entry.path) for entry in entries[0]):
            return "folder"
    return "tables"


def _same_bytes(first: Path, second: Path) -> bool:
    return first.is_file() and second.is_file() and atomic.sha256_file(first) == atomic.sha256_file(second)
