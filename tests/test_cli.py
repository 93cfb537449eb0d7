"""The commands as a user meets them (issue 27 item 5): `accel-choice compare|verify` installed in a venv by
pyproject.toml, `python -m accel_choice`, --json, the exit codes in --help, the terminal table of compare and a
B that is a byte-identical copy of A."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import compare_results
from accel_choice.analyze import compare
from accel_choice.io import results_folder
from accel_choice.records.training import Variant
from accel_choice.render import comparison_terminal
from accel_choice.render.comparison import OUTPUT_NAMES
from test_compare import Draws, _slower_pair, make_results

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin folder holding `accel-choice`: the README's venv has it (`-e .` in envs/requirements.txt); a venv
    without it gets a throw-away venv on top of it (its packages through a .pth file) with the project installed
    by pip from pyproject.toml, as the README's set-up installs it (no download: --no-build-isolation)."""
    here = Path(sys.executable).parent
    if (here / "accel-choice").exists():
        return here
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = Path(
        subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "zz_base.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-e",
            str(REPO),
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return venv / "bin"


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, env=environment)


def test_the_readmes_set_up_installs_the_project_and_pyproject_names_the_command():
    lines = (REPO / "envs" / "requirements.txt").read_text().splitlines()
    assert "-e ." in lines
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'accel-choice = "accel_choice.cli.main:entry_point"' in pyproject
    assert re.search(r'requires = \["setuptools==[\d.]+"\]', pyproject)  # the build backend pinned too
    assert "pip install -q -r envs/requirements.txt" in (REPO / "README.md").read_text()


def test_the_entry_point_compares_and_verifies_from_the_venv(installed, tmp_path):
    laptop = make_results(tmp_path, "laptop", draws=Draws(epochs=5, seed=1))
    server = make_results(tmp_path, "server", draws=Draws(epochs=5, seed=2))
    done = _run([str(installed / "accel-choice"), "compare", "laptop", "server", "--out", "cmp"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("4 rows, ")
    assert "Epoch time B/A" in done.stdout and (tmp_path / "cmp" / "comparison.json").is_file()
    verify = _run([str(installed / "accel-choice"), "verify", "--json", "laptop"], tmp_path)
    assert verify.returncode == 0 and json.loads(verify.stdout)["matches"] is True
    (laptop / "extra.txt").write_text("added\n")
    assert _run([str(installed / "accel-choice"), "verify", "laptop"], tmp_path).returncode == 1
    assert _run([str(installed / "accel-choice"), "verify", str(server)], tmp_path).returncode == 0


@pytest.mark.parametrize("command", ["compare", "verify"])
def test_help_lists_the_exit_codes_through_every_door(installed, tmp_path, command):
    doors = [
        [str(installed / "accel-choice"), command, "--help"],
        [str(installed / "python"), "-m", "accel_choice", command, "--help"],
        [sys.executable, str(REPO / "workflow" / "scripts" / f"{command}_results.py"), "--help"],
    ]
    for door in doors:
        done = _run(door, tmp_path)
        assert done.returncode == 0, done.stderr
        assert re.search(r"exit (codes|status):", done.stdout), done.stdout
        for code in ("0", "1", "2"):
            assert re.search(rf"(^|\s|: ){code}\s", done.stdout.split("exit ", 1)[1]), (door, code)
        if command == "compare":
            assert "--json" in done.stdout and "3  DIR could not be written" in done.stdout
    usage = _run([str(installed / "accel-choice"), command, "--help"], tmp_path).stdout
    assert usage.startswith(f"usage: accel-choice {command} ")


def test_the_top_command_refuses_an_unknown_subcommand(installed, tmp_path):
    done = _run([str(installed / "accel-choice"), "plot"], tmp_path)
    assert done.returncode == 2 and "invalid choice: 'plot'" in done.stderr


def test_python_m_compare_json_parses_and_carries_the_comparison(installed, tmp_path):
    base, slow = _slower_pair(tmp_path, 1.3)
    done = _run(
        [str(installed / "python"), "-m", "accel_choice", "compare", str(base), str(slow), "--out", "cmp", "--json"]
        + ["--fail-if-slower", "5"],
        tmp_path,
    )
    assert done.returncode == compare_results.REGRESSION == 1, done.stderr
    document = json.loads(done.stdout)
    on_disk = json.loads((tmp_path / "cmp" / "comparison.json").read_text())
    assert document["status"] == 1 and document["fail_if_slower"] == 5
    assert document["rows"] == on_disk["rows"] and document["warnings"] == on_disk["warnings"]
    assert [(r["variant"], r["batch_size"], r["metric"]) for r in document["regressions"]] == [
        ("cpu fastpath 1 thread", 32, "epoch_s"),
        ("cpu fastpath 1 thread", 32, "eval_s"),
        ("whole cpu table", None, "epoch_s"),
    ]
    assert document["written"] == [str(Path("cmp") / name) for name in OUTPUT_NAMES]
    assert document["byte_identical_copy"] is None
    assert "regression: cpu fastpath 1 thread B=32" in done.stderr


def test_json_errors_are_json_with_the_exit_code(tmp_path, capsys):
    folder = make_results(tmp_path, "run")
    assert compare_results.main([str(folder), str(tmp_path / "none"), "--out", str(tmp_path / "cmp"), "--json"]) == 2
    document = json.loads(capsys.readouterr().out)
    assert document["status"] == 2 and "no such folder" in document["error"]


def test_the_terminal_table_has_one_narrow_line_per_row_measured_on_both_sides(tmp_path, capsys):
    laptop = make_results(tmp_path, "laptop", gpu=True, draws=Draws(epochs=5, seed=1))
    server = make_results(tmp_path, "server", gpu=True, batch_sizes=(32,), draws=Draws(epochs=5, seed=2))
    out = tmp_path / "cmp"
    labels = ["--label-a", "laptop", "--label-b", "gpu-server"]
    assert compare_results.main([str(laptop), str(server), "--out", str(out), *labels]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = json.loads((out / "comparison.json").read_text())["rows"]
    both = [r for r in rows if r["present"] == "both"]
    assert len(both) == 4 and len(rows) == 8  # batch size 512 on one side only: not in the table
    assert lines[0].startswith(f"{len(rows)} rows, ")
    assert lines[1] == "A = laptop, B = gpu-server"
    assert lines[2] == "Epoch time B/A over the rest of its job (below 1: B is faster), 95 % intervals together:"
    assert lines[3].split() == ["variant", "batch", "A", "ms", "B", "ms", "B/A", "interval", "outcome"]
    table = lines[4 : 4 + len(both)]
    shown = {"in job": 0, "raw": 0}
    for line, row in zip(table, both):
        assert len(line) <= comparison_terminal.WIDTH
        assert line.startswith(Variant.of(row).name)
        if row["epoch_s_in_job_b_over_a"] is None:  # too few cells in its job: the raw ratio, said so
            point, low, high = (row[f"epoch_s_ratio_{end}"] for end in ("b_over_a", "ci_low", "ci_high"))
            said = f"raw: {row['epoch_s_outcome']}"
            shown["raw"] += 1
        else:  # over the rest of its job, the narrow one; a raw outcome that decided something added
            point, low, high = (row[f"epoch_s_in_job_{end}"] for end in ("b_over_a", "ci_low", "ci_high"))
            said = row["epoch_s_in_job_outcome"]
            if row["epoch_s_outcome"] != "no measurable difference":
                said += f"; raw: {row['epoch_s_outcome']}"
            shown["in job"] += 1
        assert line.endswith(f"{point:.3f}  {low:.3f}–{high:.3f}  {said}")
        assert f" {row['batch_size']} " in line
    assert shown == {"in job": 0, "raw": len(both)}  # one batch size on B: too few cells a job for "the rest"
    assert lines[4 + len(both)].startswith("Epoch time, raw rows (each job's own speed in them): this comparison")


def test_a_long_variant_is_shortened_to_keep_the_line_narrow(tmp_path):
    result = compare.compare(
        results_folder.load_results(make_results(tmp_path, "a", draws=Draws(epochs=5, seed=1)), "A"),
        results_folder.load_results(make_results(tmp_path, "b", draws=Draws(epochs=5, seed=2)), "B"),
    )
    lines = comparison_terminal.terminal_lines(result, width=80)
    table = lines[2:]  # the header and the four rows
    assert len(table) == 5 and all(len(line) <= 80 for line in table)
    assert any("…" in line for line in table)
    assert not any("raw:" in line for line in table)  # four cells a job: each row over the rest of its job


def test_b_a_byte_identical_copy_of_a_is_said_in_a_warning_and_on_stdout(tmp_path, capsys):
    laptop = make_results(tmp_path, "laptop", gpu=True)
    copy = tmp_path / "copy"
    shutil.copytree(laptop, copy)
    out = tmp_path / "cmp"
    assert compare_results.main([str(laptop), str(copy), "--out", str(out)]) == 0
    said = capsys.readouterr()
    expected = "B is a byte-identical copy of A (the same files, the same bytes): every ratio is 1 by construction: "
    assert said.err.splitlines()[0] == f"warning: {expected}compare two runs."
    assert said.out.splitlines()[1] == f"NOTE: {expected}compare two runs."
    document = json.loads((out / "comparison.json").read_text())
    assert document["byte_identical_copy"] == "folder" and document["warnings"][0].startswith(expected)
    assert f"- {expected}" in (out / "comparison.md").read_text()


def test_a_copy_of_the_training_tables_alone_is_said_too(tmp_path):
    laptop = make_results(tmp_path, "laptop")
    copy = tmp_path / "copy"
    shutil.copytree(laptop, copy)
    (copy / "REPORT.md").write_text("# edited\n")
    assert results_folder.copy_of(laptop, copy) == "tables"
    result = compare.compare(results_folder.load_results(laptop, "A"), results_folder.load_results(copy, "B"))
    assert result.copy == "tables"
    assert result.warnings[0] == (
        "B's training tables are byte-identical copies of A's: every ratio is 1 by construction: compare two runs."
    )


def test_two_runs_and_one_folder_twice_are_not_copies(tmp_path):
    first = make_results(tmp_path, "first", draws=Draws(epochs=5, seed=1))
    second = make_results(tmp_path, "second", draws=Draws(epochs=5, seed=2))
    assert results_folder.copy_of(first, second) is None
    assert results_folder.copy_of(first, tmp_path / "." / "first") is None  # one folder: the CLI refuses it
    (tmp_path / "link").symlink_to(first)
    assert results_folder.copy_of(first, tmp_path / "link") is None
    result = compare.compare(results_folder.load_results(first, "A"), results_folder.load_results(second, "B"))
    assert result.copy is None and not any("byte-identical" in w for w in result.warnings)
    assert comparison_terminal.copy_line(result) is None
