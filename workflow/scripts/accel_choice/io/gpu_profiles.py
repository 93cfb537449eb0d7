"""The GPU profiles the planner models a GPU from: the shipped ones (config/gpu_profiles/) or a file of yours.

`planner.gpu_profile` names one: `auto` (the shipped profile measured most completely:
records.device_profile.completeness), a shipped profile's name (`h200`), or the path of a profile
`accel-choice profile` wrote. A profile is configuration, not a result of this run: it is read with
its record type's checks but not vouched for by a job's log (records.ledger).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from accel_choice import records
from accel_choice.records import RecordError, UserInputError
from accel_choice.records.device_profile import DeviceProfile, completeness

# workflow/scripts/accel_choice/io/ → the repository's config/gpu_profiles/ (beside the workflow, also as a module)
SHIPPED = Path(__file__).resolve().parents[4] / "config" / "gpu_profiles"
AUTO = "auto"
KEY = "config key planner.gpu_profile"


def read(path: str | os.PathLike[str]) -> DeviceProfile:
    """Read a profile file, checked (RecordError naming the file and the field)."""
    source = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RecordError(f"{source}: missing") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise RecordError(f"{source}: not a readable JSON profile ({error})") from None
    return records.from_json(DeviceProfile, data, source)


def shipped(folder: Path = SHIPPED) -> dict[str, Path]:
    """Return the shipped profiles by name (the file's stem)."""
    return {path.stem: path for path in sorted(folder.glob("*.json"))}


def resolve(setting: str, folder: Path = SHIPPED) -> Path:
    """Return the profile file `setting` names: auto, a shipped name, or a path (relative to the working directory)."""
    found = shipped(folder)
    names = ", ".join(found) or "none"
    if setting == AUTO:
        if not found:
            raise UserInputError(f"{KEY}: auto, but no profile is shipped in {folder}; allowed: the path of a profile")
        return max(found.values(), key=lambda path: (completeness(read(path)), path.stem))
    if setting in found:
        return found[setting]
    path = Path(setting)
    if path.suffix == ".json" and path.is_file():
        return path
    raise UserInputError(
        f"{KEY}: {setting!r} is neither a shipped profile nor a profile file; allowed: auto, {names}, "
        "or the path of a JSON file `accel-choice profile` wrote"
    )


def label(path: str | os.PathLike[str], folder: Path = SHIPPED) -> str:
    """Say how the report names a profile: a shipped one by its name (`h200`), a file of yours by its path."""
    resolved = Path(path).resolve()
    return resolved.stem if resolved.parent == folder.resolve() else str(path)
