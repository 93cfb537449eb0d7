"""The finished tiny run the workflow tests read, made once per test session and shared.

One real run of the Snakemake CLI on the tiny config, interrupted twice on the way (Ctrl-C during a
timing job and resume; a hard kill during another, unlock and resume with --rerun-incomplete), takes
about two minutes on 2 cores. Every test that only reads a finished run, or changes a copy of it,
shares this one:

- `start(folder)` launches the run as a process of its own (`python tests/workflow_runs.py FOLDER`)
  as soon as a session has collected a test that needs it (tests/conftest.py), so it runs beside
  the library's unit tests instead of before the workflow tests; under pytest-xdist the first
  worker to ask starts it and the others find it started.
- `wait(folder)` returns what happened (`events`: each stop's finished and in-flight records, the
  CompletedProcess of each invocation) once the run has ended, and the run's folder, which no test
  writes to: a test works on a copy (`copy_of`).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import snakemake_cli
import yaml

REPO = Path(__file__).resolve().parents[1]
# The tiny configuration of the tests and CI, kept where the Snakemake workflow catalog expects it:
# `snakemake --cores 2 --directory .test` runs it by hand.
TINY = yaml.safe_load((REPO / ".test/config/config.yaml").read_text())
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
TIMING_LOGS = {"time_cpu_training": "timing/cpu", "time_load_convert": "timing/load_convert"}
EVENTS = "events.json"  # written last, atomically: the run has ended
STARTED = "started"  # created exclusively by the one process that starts the run
LOG = "shared-run.log"
WAIT_S = 1200


def snakemake(workdir: Path, config: dict | str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI on `config`: a mapping, or the YAML text itself (to test what a file can hold); run as
    `python -m snakemake` runs it, forked from a process that has imported Snakemake (snakemake_cli)."""
    return snakemake_cli.run(arguments(workdir, config, *args), timeout=600)


def planned_jobs(result: subprocess.CompletedProcess[str]) -> dict[str, int]:
    """Rule -> count from the 'Job stats' table of a dry run; empty when nothing is to be done."""
    assert result.returncode == 0, result.stdout + result.stderr
    output = result.stdout + result.stderr
    if "Nothing to be done" in output:
        return {}
    table = output.split("Job stats:", 1)[1]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", table, flags=re.MULTILINE))
    counts.pop("total", None)
    return {rule: int(count) for rule, count in counts.items()}


def command(workdir: Path, config: dict | str, *args: str) -> list[str]:
    """The CLI line on `config`: `python -m snakemake` with arguments()."""
    return snakemake_cli.command(arguments(workdir, config, *args))


def arguments(workdir: Path, config: dict | str, *args: str) -> list[str]:
    """The CLI's arguments on `config` (written to workdir/test-config.yaml), with `--cores 4` and `args`."""
    config_path = workdir / "test-config.yaml"
    config_path.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
    return [
        "--snakefile",
        str(snakefile(workdir)),
        "--directory",
        str(workdir),
        "--configfile",
        str(config_path),
        "--cores",
        "4",
        *args,
    ]


def snakefile(workdir: Path) -> Path:
    """The workflow a run uses: the checkout it lives in, or the repository for a bare folder."""
    return workdir / "Snakefile" if (workdir / "Snakefile").is_file() else REPO / "Snakefile"


def checkout(destination: Path) -> Path:
    """A copy of this checkout (sources and git history, not the venv or earlier results) to run in:
    the finished run then lives beside its own code, as a user's does."""
    shutil.copytree(
        REPO,
        destination,
        ignore=shutil.ignore_patterns(
            ".venv", "results", ".snakemake", "__pycache__", ".pytest_cache", "*.pyc", "report.html", "test-config.yaml"
        ),
    )
    return destination


@functools.cache
def _parse_caches() -> dict[str, str]:
    """What a first `snakemake` call in a folder writes before anything else, by path relative to the folder:
    the device plan for the tiny config's accelerator mode on this machine (measure.device_plan, torch's
    answer) and what each library file imports (io.imports.ImportCache), made once per test process."""
    import tempfile

    from accel_choice.io.config_checks import normalize_config, validate
    from accel_choice.io import imports
    from accel_choice.measure import device_plan

    config = json.loads(json.dumps(TINY))
    normalize_config(config)  # then completed with the schema's defaults, as measure.parse_time.prepare does
    validate(config, SCHEMA)
    mode = config["accelerator"]
    library = REPO / "workflow" / "scripts"
    with tempfile.TemporaryDirectory() as tmp:
        device_plan.planned_device(mode, cache=Path(tmp) / device_plan.CACHE)
        cache = imports.ImportCache(Path(tmp) / imports.CACHE)
        for script in sorted(library.glob("*.py")):
            imports.closure(script, library, cache=cache)
        return {str(made): (Path(tmp) / made).read_text() for made in (device_plan.CACHE, imports.CACHE)}


def seeded(workdir: Path) -> Path:
    """`workdir` with this session's parse-time caches (_parse_caches), as a folder has them after its first
    `snakemake` call: the plan and the rules' code inputs are the same, without importing torch at parse time
    and reading every library file again (3-4 s of a fresh folder's first dry run on 2 cores). For the tests
    whose subject is not that first call."""
    for made, text in _parse_caches().items():
        (workdir / made).parent.mkdir(parents=True, exist_ok=True)
        (workdir / made).write_text(text)
    return workdir


def copy_of(finished: Path, destination: Path) -> Path:
    """A finished run moved nowhere: the same repository, its results and Snakemake's records."""
    shutil.copytree(finished, destination, symlinks=True, ignore=shutil.ignore_patterns("locks", "report.html"))
    return destination


def incomplete(workdir: Path) -> set[str]:
    """Outputs Snakemake has marked incomplete (.snakemake/incomplete/<urlsafe base64 of the path>)."""
    marks = workdir / ".snakemake/incomplete"
    names = set()
    for mark in marks.rglob("*") if marks.exists() else []:
        if mark.is_file() and mark.name != "migration_underway":
            encoded = "".join(part.lstrip("@") for part in mark.relative_to(marks).parts)
            names.add(base64.urlsafe_b64decode(encoded).decode())
    return names


def timing_outputs(workdir: Path) -> dict[str, int]:
    """Finished timing records: present and not marked incomplete, with their mtimes."""
    unfinished = incomplete(workdir)
    files = {str(p.relative_to(workdir)): p.stat().st_mtime_ns for p in (workdir / "results/timing").rglob("*.json")}
    return {path: mtime for path, mtime in files.items() if path not in unfinished}


def timing_job_in_flight(workdir: Path) -> str | None:
    """The output of a timing job that has started measuring (its log exists) but not finished."""
    for rule, folder in TIMING_LOGS.items():
        for log in (workdir / "results/logs" / rule).glob("*.log"):
            output = workdir / "results" / folder / (log.stem + ".json")
            if not output.exists():
                return str(output.relative_to(workdir))
    return None


def _stopping(process: subprocess.Popen, log: Path, seconds: float = 3.0) -> bool:
    """Whether Snakemake took the Ctrl-C: it says "Terminating processes on user request" (or exits).

    Snakemake's log handler swallows a KeyboardInterrupt that lands while it writes a line
    (snakemake/logging.py: `except (KeyboardInterrupt, SystemExit): pass`), and a job starting is
    when it writes most: a user presses Ctrl-C again, and so does the test.
    """
    deadline = time.time() + seconds
    while time.time() < deadline:
        if "Terminating processes on user request" in log.read_text(errors="replace") or process.poll() is not None:
            return True
        time.sleep(0.05)
    return False


def interrupt(
    workdir: Path, config: dict, sig: signal.Signals, after_outputs: int, extra: tuple[str, ...] = ()
) -> dict:
    """Start the workflow, send `sig` to it (and, for SIGKILL, its jobs) while a timing job runs
    after `after_outputs` timing records exist; say what was done and what was in flight."""
    line = command(workdir, config, *extra)
    log = open(workdir / f"interrupted-{sig.name}.log", "w")  # a file, not a pipe: a full pipe would stall the run
    # Ctrl-C as a user's terminal delivers it: a shell that started pytest in the background (`cmd &`)
    # leaves SIGINT ignored, and an ignored signal stays ignored across exec; restore the default.
    process = subprocess.Popen(
        line,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 300
    second = None
    try:
        while time.time() < deadline and process.poll() is None:
            in_flight = timing_job_in_flight(workdir)
            if in_flight and len(timing_outputs(workdir)) >= after_outputs:
                if second is None:  # a concurrent invocation on the same directory meets the lock
                    second = subprocess.run([*line[:-2], "--cores", "1"], capture_output=True, text=True, timeout=120)
                done = timing_outputs(workdir)
                if timing_job_in_flight(workdir) == in_flight:
                    if sig == signal.SIGKILL:
                        os.killpg(process.pid, signal.SIGKILL)  # a crash: the scheduler and its jobs die at once
                    else:
                        process.send_signal(sig)
                        if not _stopping(process, workdir / f"interrupted-{sig.name}.log"):
                            continue  # the interrupt was lost: press Ctrl-C again, on the job in flight then
                    process.wait(timeout=120)
                    return {"done": done, "in_flight": in_flight, "killed_at": time.time_ns(), "second": second}
            time.sleep(0.05)
        raise AssertionError(
            "the workflow ended before it could be interrupted during a timing job:\n"
            + (workdir / f"interrupted-{sig.name}.log").read_text()[-3000:]
        )
    finally:
        log.close()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def timeline(workdir: Path) -> dict:
    """Ctrl-C during a timing job, resume; a hard kill during another, unlock and resume with
    --rerun-incomplete. Each stop records the jobs done before it and the one in flight."""
    events: dict = {"workdir": workdir}
    events["sigint"] = interrupt(workdir, TINY, signal.SIGINT, after_outputs=2)
    events["after_sigint"] = timing_outputs(workdir)
    events["sigkill"] = interrupt(workdir, TINY, signal.SIGKILL, after_outputs=len(events["after_sigint"]) + 2)
    events["after_sigkill"] = timing_outputs(workdir)
    events["unlock"] = snakemake(workdir, TINY, "--unlock")
    events["resume"] = snakemake(workdir, TINY, "--rerun-incomplete")
    events["final"] = timing_outputs(workdir)
    return events


def _encode(value):
    if isinstance(value, subprocess.CompletedProcess):
        return {"__completed__": [value.args, value.returncode, value.stdout, value.stderr]}
    if isinstance(value, Path):
        return {"__path__": str(value)}
    raise TypeError(f"cannot record {type(value).__name__}")


def _decode(mapping: dict):
    if set(mapping) == {"__completed__"}:
        return subprocess.CompletedProcess(*mapping["__completed__"])
    if set(mapping) == {"__path__"}:
        return Path(mapping["__path__"])
    return mapping


def start(folder: Path) -> None:
    """Launch the shared run in `folder` unless another process of this session already has."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(folder / STARTED, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    with open(folder / LOG, "w") as log:
        subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), str(folder)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the terminal reaches it only through its own test steps
        )


def wait(folder: Path) -> dict:
    """The shared run's events once it has ended (starting it here if nothing has)."""
    start(folder)
    deadline = time.time() + WAIT_S
    while not (folder / EVENTS).exists():
        if time.time() > deadline:
            raise AssertionError(f"the shared tiny run did not end in {WAIT_S} s:\n" + _log_tail(folder))
        time.sleep(0.5)
    events = json.loads((folder / EVENTS).read_text(), object_hook=_decode)
    if "error" in events:
        raise AssertionError("the shared tiny run failed:\n" + events["error"] + "\n" + _log_tail(folder))
    return events


def shared(folder: Path, name: str, build: Callable[[Path], dict]) -> dict:
    """What `build(folder / name)` returns, made once a session by the first test process that asks
    (under a lock: another that asks meanwhile waits for it, and uses no CPU while it waits) and read
    by every other from `folder / name.json`. Its files are the session's: tests read them, never write."""
    from filelock import FileLock

    folder.mkdir(parents=True, exist_ok=True)
    made = folder / f"{name}.json"
    with FileLock(folder / f"{name}.lock"):
        if not made.exists():
            try:
                events = build(folder / name)
            except Exception as error:  # every test that shares it fails with the reason, none builds it again
                events = {"error": f"{type(error).__name__}: {error}"}
            partial = made.with_suffix(".json.tmp")
            partial.write_text(json.dumps(events, default=_encode))
            partial.replace(made)
    events = json.loads(made.read_text(), object_hook=_decode)
    if "error" in events:
        raise AssertionError(f"the shared {name} could not be made: {events['error']}")
    return events


def _log_tail(folder: Path) -> str:
    log = folder / LOG
    return log.read_text(errors="replace")[-4000:] if log.exists() else "(no log)"


def main(folder: Path) -> None:
    try:
        events = timeline(checkout(folder / "checkout"))
    except BaseException as error:  # said to every waiting test, with the log, instead of a silent hang
        events = {"error": f"{type(error).__name__}: {error}"}
    partial = folder / (EVENTS + ".tmp")
    partial.write_text(json.dumps(events, default=_encode))
    partial.replace(folder / EVENTS)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
