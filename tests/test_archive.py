"""The archive: invocation record, provenance, and a MANIFEST.sha256 that coreutils accepts."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from accel_choice.io import atomic, manifest, paths, provenance

COMMIT_A = "a" * 40
COMMIT_B = "b" * 40
ARGV = ["/venv/bin/snakemake", "--cores", "4", "--configfile", "my config.yaml"]

SCRIPTS = Path(__file__).resolve().parents[1] / "workflow" / "scripts"
needs_sha256sum = pytest.mark.skipif(shutil.which("sha256sum") is None, reason="coreutils sha256sum not installed")


def _results(tmp_path):
    """A small results folder in the shape of a real run."""
    root = tmp_path / "results"
    atomic.write_text(root / "REPORT.md", "# Report\n")
    atomic.write_text(root / "config.yaml", "seed: 0\n")
    atomic.write_text(
        root / "benchmarks" / "generate_benchmark.tsv",
        "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
        "1.60\t0:00:01\t256.54\t762.29\t157.44\t205.75\t41.39\t0.01\t25.00\t0.99\n",
    )
    atomic.write_text(
        root / "logs" / "generate_benchmark.log", "job body: wall 0.0194 s, cpu 0.0100 s, peak RSS 341.7 MB\n"
    )
    atomic.write_json(
        root / "tables" / "cpu_training.json",
        {"table": [], "environment": {"workflow": {"commit": COMMIT_A, "dirty": False}}},
    )
    atomic.write_json(root / "env" / "collect_env.json", {"quick": {"workflow": {"commit": COMMIT_A, "dirty": False}}})
    (root / "data").mkdir()
    (root / "data" / "x.bin").write_bytes(bytes(range(256)) * 4)
    return root


def _sha256sum_check(root):
    return subprocess.run(
        ["sha256sum", "--check", "--quiet", paths.MANIFEST], cwd=root, capture_output=True, text=True, timeout=60
    )


# ---------------------------------------------------------------- invocation


def test_invocation_record_round_trips_through_the_environment(monkeypatch):
    text = provenance.invocation_record(ARGV, "/work/run", "9.27.1")
    monkeypatch.setenv(provenance.INVOCATION_VARIABLE, text)
    invocation = provenance.current_invocation()
    assert invocation["argv"] == ARGV
    assert invocation["command_line"] == "/venv/bin/snakemake --cores 4 --configfile 'my config.yaml'"
    assert invocation["working_directory"] == "/work/run"
    assert invocation["snakemake_version"] == "9.27.1"
    assert invocation["started"].endswith("+00:00") and invocation["host"]


@pytest.mark.parametrize("value", [None, ""])
def test_invocation_outside_the_workflow_says_so(monkeypatch, value):
    if value is None:
        monkeypatch.delenv(provenance.INVOCATION_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(provenance.INVOCATION_VARIABLE, value)
    invocation = provenance.current_invocation()
    assert invocation["command_line"] is None
    assert f"{provenance.INVOCATION_VARIABLE} not set" in invocation["note"]


# ---------------------------------------------------------------- commits and provenance


def test_record_commits_finds_nested_workflow_entries_and_skips_damaged_files(tmp_path):
    clean = tmp_path / "clean.json"
    atomic.write_json(clean, {"workflow": {"commit": COMMIT_A, "dirty": False}})
    nested = tmp_path / "nested.json"
    atomic.write_json(nested, {"table": [{"environment": {"workflow": {"commit": COMMIT_B, "dirty": True}}}]})
    unknown = tmp_path / "unknown.json"
    atomic.write_json(unknown, {"quick": {"workflow": {"commit": None, "dirty": False}}})
    (tmp_path / "damaged.json").write_text('{"workflow": ')
    (tmp_path / "no_commit.json").write_text(json.dumps({"workflow": {"name": "x"}, "rows": [1, 2]}))
    files = sorted(tmp_path.glob("*.json"))
    seen = provenance.record_commits(files)
    assert seen == {COMMIT_A: [str(clean)], f"{COMMIT_B} (dirty)": [str(nested)], "unknown": [str(unknown)]}


def test_record_commits_counts_a_record_once_per_commit(tmp_path):
    # A table that embeds the environment of every row carries the same commit many times.
    table = tmp_path / "table.json"
    atomic.write_json(
        table,
        {
            "workflow": {"commit": COMMIT_A, "dirty": False},
            "rows": [{"environment": {"workflow": {"commit": COMMIT_A, "dirty": False}}}] * 3,
        },
    )
    mixed = tmp_path / "mixed.json"
    atomic.write_json(mixed, {"a": {"workflow": {"commit": COMMIT_A}}, "b": {"workflow": {"commit": COMMIT_B}}})
    seen = provenance.record_commits([table, mixed])
    assert seen == {COMMIT_A: [str(table), str(mixed)], COMMIT_B: [str(mixed)]}


def _every_file(root):
    return [entry.path for entry in manifest.walk(root) if entry.kind == "file"]


def test_provenance_counts_record_commits_and_flags_a_mixed_archive(tmp_path, monkeypatch):
    root = _results(tmp_path)
    monkeypatch.setenv(provenance.INVOCATION_VARIABLE, provenance.invocation_record(ARGV, str(tmp_path), "9.27.1"))
    workflow = {"commit": COMMIT_A, "dirty": False}
    record = provenance.provenance(root, workflow, _every_file(root))
    assert record["workflow"] == workflow
    assert record["snakemake_version"] == "9.27.1"
    assert record["command_line"] == provenance.current_invocation()["command_line"]
    assert record["invocation"]["argv"] == ARGV
    assert record["record_commits"] == {COMMIT_A: 2}
    assert record["mixed_commits"] is False
    assert record["config_snapshot"] == "config.yaml"
    json.dumps(record, allow_nan=False)

    atomic.write_json(root / "timing" / "old.json", {"records": [], "workflow": {"commit": COMMIT_B, "dirty": True}})
    record = provenance.provenance(root, workflow, _every_file(root))
    assert record["record_commits"] == {COMMIT_A: 2, f"{COMMIT_B} (dirty)": 1}
    assert record["mixed_commits"] is True
    assert record["record_library_folders"] == {"not recorded": 3}

    library = {"folder": "/second/workflow/scripts", "files": [], "sha256": "0" * 64}
    atomic.write_json(
        root / "timing" / "old.json", {"workflow": {"commit": COMMIT_A, "dirty": False, "library": library}}
    )
    record = provenance.provenance(root, workflow, _every_file(root))
    assert record["record_library_folders"] == {"not recorded": 2, "/second/workflow/scripts": 1}


def test_provenance_outside_the_workflow_has_no_command_line(tmp_path, monkeypatch):
    monkeypatch.delenv(provenance.INVOCATION_VARIABLE, raising=False)
    root = _results(tmp_path)
    record = provenance.provenance(root, {"commit": None, "dirty": None}, _every_file(root))
    assert record["command_line"] is None and record["snakemake_version"] is None
    assert "not set" in record["invocation"]["note"]


# ---------------------------------------------------------------- which files the manifest vouches for

MADE = [
    "REPORT.md",
    "config.yaml",
    "benchmarks/generate_benchmark.tsv",
    "logs/generate_benchmark.log",
    "tables/cpu_training.json",
    "env/collect_env.json",
    "data/x.bin",
    "northstar/tensorboard/cpu_bs16",
]


def _with_leftovers(tmp_path):
    """A results folder that also holds what this configuration did not make."""
    root = _results(tmp_path)
    board = root / "northstar" / "tensorboard" / "cpu_bs16"  # a directory output, with Snakemake's marker
    board.mkdir(parents=True)
    (board / "events.out.tfevents.1.host").write_bytes(b"\x00events")
    (board / ".snakemake_timestamp").write_text("")
    atomic.write_json(
        root / "timing" / "cpu" / "bs64.rep1.json",  # a removed batch size's record
        {"records": [], "environment": {"workflow": {"commit": COMMIT_B, "dirty": False}}},
    )
    (root / "tables" / ".decision.json.k2j4h1.tmp").write_text("half a write")
    (root / "REPORT.link.md").symlink_to(root / "REPORT.md")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not ours\n")
    (root / "elsewhere").symlink_to(outside, target_is_directory=True)
    for name in manifest.AFTER_THE_MANIFEST:
        atomic.write_text(root / name, "written after the manifest\n")
    _html_report(root, {"REPORT.md": (root / "REPORT.md").read_bytes()})
    return root


def _html_report(root, embedded: dict) -> None:
    """An HTML report shaped as Snakemake writes it: each result under its path, with its bytes as a data URI."""
    results = ", ".join(
        f'"results/{name}": {{"caption": "", "data_uri": "data:text/plain;charset=utf8;filename={name};base64,'
        f'{base64.b64encode(data).decode()}"}}'
        for name, data in embedded.items()
    )
    atomic.write_text(root / paths.SNAKEMAKE_REPORT_HTML, f"<html><script>var results = {{{results}}};</script></html>")


def test_walk_never_follows_a_symbolic_link(tmp_path):
    root = _with_leftovers(tmp_path)
    entries = {entry.path: entry.kind for entry in manifest.walk(root)}
    assert entries["elsewhere"] == "symlink" and entries["REPORT.link.md"] == "symlink"
    assert not any(path.startswith("elsewhere/") for path in entries)
    assert entries["northstar/tensorboard/cpu_bs16/.snakemake_timestamp"] == "file"
    # A results folder that is itself a link (kept on scratch, say) is walked as the folder.
    link = tmp_path / "results-link"
    link.symlink_to(root, target_is_directory=True)
    assert manifest.walk(link) == manifest.walk(root)


def test_inventory_tells_this_configurations_files_from_everything_else(tmp_path):
    root = _with_leftovers(tmp_path)
    atomic.write_text(root / paths.MANIFEST, "")
    found = manifest.inventory(root, MADE)
    assert found.made == (
        "REPORT.md",
        "benchmarks/generate_benchmark.tsv",
        "config.yaml",
        "data/x.bin",
        "env/collect_env.json",
        "logs/generate_benchmark.log",
        "northstar/tensorboard/cpu_bs16/.snakemake_timestamp",
        "northstar/tensorboard/cpu_bs16/events.out.tfevents.1.host",
        "tables/cpu_training.json",
    )
    assert [(entry.path, entry.kind) for entry in found.foreign] == [
        ("REPORT.link.md", "symlink"),
        ("elsewhere", "symlink"),
        ("tables/.decision.json.k2j4h1.tmp", "file"),
        ("timing/cpu/bs64.rep1.json", "file"),
    ]
    assert found.late == tuple(sorted(manifest.AFTER_THE_MANIFEST))
    # A link is never made, whatever its name says.
    assert "REPORT.link.md" not in manifest.inventory(root, [*MADE, "REPORT.link.md"]).made


def test_an_html_report_the_run_made_is_listed_and_kept_one_it_did_not_make_is_removed(tmp_path):
    """Config lab_report: the run's own job made snakemake-report.html, so it is among the made files: listed, not
    late, and the archive job keeps it; an earlier run's (not made by this one) is deleted as before."""
    root = _with_leftovers(tmp_path)
    made = [*MADE, paths.SNAKEMAKE_REPORT_HTML]
    found = manifest.inventory(root, made)
    assert paths.SNAKEMAKE_REPORT_HTML in found.made and paths.SNAKEMAKE_REPORT_HTML not in found.late
    assert manifest.files_record(root, found)["written_after_the_manifest"] == [
        name for name in manifest.AFTER_THE_MANIFEST if name != paths.SNAKEMAKE_REPORT_HTML
    ]
    assert manifest.remove_stale_reports(root, made) == [paths.SNAKEMAKE_REPORT_ZIP]
    assert (root / paths.SNAKEMAKE_REPORT_HTML).is_file()
    assert manifest.remove_stale_reports(root, MADE) == [paths.SNAKEMAKE_REPORT_HTML]


def test_seal_vouches_for_this_configurations_files_and_lists_the_rest(tmp_path, monkeypatch):
    monkeypatch.setenv(provenance.INVOCATION_VARIABLE, provenance.invocation_record(ARGV, str(tmp_path), "9.27.1"))
    root = _with_leftovers(tmp_path)
    record, found = manifest.seal(root, MADE, {"commit": COMMIT_A, "dirty": False})
    listed = manifest.read_manifest(root / paths.MANIFEST)
    assert sorted(listed) == sorted([*found.made]) and paths.PROVENANCE in listed
    assert "timing/cpu/bs64.rep1.json" not in listed and "elsewhere" not in listed
    written = json.loads((root / paths.PROVENANCE).read_text())
    assert written == record
    files = record["files"]
    assert files["made_by_this_configuration"] == len(found.made) - 1  # provenance.json is added after counting
    foreign = {entry["path"]: entry for entry in files["not_made_by_this_configuration"]}
    assert foreign["timing/cpu/bs64.rep1.json"]["sha256"] == atomic.sha256_file(root / "timing/cpu/bs64.rep1.json")
    assert foreign["elsewhere"] == {"path": "elsewhere", "kind": "symlink", "target": str(tmp_path / "outside")}
    # The stale record's commit is not counted: it is not this configuration's.
    assert record["record_commits"] == {COMMIT_A: 2} and record["mixed_commits"] is False
    result = manifest.verify(root)
    assert result.matches and result.foreign == 4, result
    # Sealed again by a later commit: the earlier provenance.json is not counted as a record.
    record, _ = manifest.seal(root, MADE, {"commit": COMMIT_B, "dirty": False})
    assert record["record_commits"] == {COMMIT_A: 2} and record["mixed_commits"] is False


# ---------------------------------------------------------------- the manifest and coreutils


def _sealed(tmp_path):
    root = _results(tmp_path)
    manifest.seal(root, MADE[:-1], {"commit": COMMIT_A, "dirty": False})
    return root


def test_manifest_lines_are_in_sha256sum_format(tmp_path):
    root = _sealed(tmp_path)
    lines = (root / paths.MANIFEST).read_text().splitlines()
    assert len(lines) == 8  # the seven files and provenance.json
    digest, name = lines[0].split("  ", 1)
    assert (digest, name) == (atomic.sha256_file(root / "REPORT.md"), "REPORT.md")
    assert manifest.read_manifest(root / paths.MANIFEST) == {
        entry.path: atomic.sha256_file(root / entry.path)
        for entry in manifest.walk(root)
        if entry.path != paths.MANIFEST
    }
    assert manifest.verify(root) == manifest.Verification(listed=8)


@needs_sha256sum
def test_file_names_with_line_breaks_other_than_newline_round_trip(tmp_path):
    # str.splitlines() would cut these lines in two; sha256sum reads them whole.
    root = _results(tmp_path)
    names = ["form\ffeed.txt", "line\u2028separator.txt", "next\x85line.txt", "group\x1dseparator.txt"]
    for name in names:
        (root / name).write_text("odd\n")
    manifest.seal(root, [*MADE, *names], {"commit": None, "dirty": None})
    assert _sha256sum_check(root).returncode == 0
    assert set(names) <= set(manifest.read_manifest(root / paths.MANIFEST))
    assert manifest.verify(root).matches


@needs_sha256sum
def test_a_manifest_with_crlf_line_ends_still_verifies(tmp_path):
    root = _sealed(tmp_path)
    manifest_file = root / paths.MANIFEST
    manifest_file.write_bytes(manifest_file.read_bytes().replace(b"\n", b"\r\n"))
    assert _sha256sum_check(root).returncode == 0
    assert manifest.verify(root).matches


@pytest.mark.parametrize("name", ["two\nlines.txt", "back\\slash.txt", "carriage\rreturn.txt", "ends_in_cr\r"])
def test_a_made_file_name_sha256sum_would_escape_is_refused(tmp_path, name):
    root = _results(tmp_path)
    (root / name).write_text("x\n")
    with pytest.raises(ValueError, match="sha256sum format"):
        manifest.seal(root, [*MADE, name], {"commit": None, "dirty": None})
    assert not (root / paths.MANIFEST).exists()
    assert not [p for p in root.iterdir() if p.name.startswith(f".{paths.MANIFEST}")]


def test_such_a_name_among_files_we_did_not_make_is_listed_in_provenance(tmp_path):
    root = _results(tmp_path)
    (root / "two\nlines.txt").write_text("x\n")
    record, _ = manifest.seal(root, MADE, {"commit": None, "dirty": None})
    assert [e["path"] for e in record["files"]["not_made_by_this_configuration"]] == ["two\nlines.txt"]
    assert manifest.verify(root).matches


def test_read_manifest_rejects_a_malformed_line_naming_its_number(tmp_path):
    manifest_file = tmp_path / paths.MANIFEST
    manifest_file.write_text(f"{'0' * 64}  a.txt\n{'1' * 64}  b.txt\nnot a checksum line\n")
    with pytest.raises(
        manifest.ManifestError, match=r"MANIFEST\.sha256, line 3: not a sha256sum line .*'not a checksum line'"
    ):
        manifest.read_manifest(manifest_file)
    for text in (f"{'0' * 63}  short.txt\n", f"{'g' * 64}  not_hex.txt\n", "\n\n"):
        manifest_file.write_text(text)
        with pytest.raises(manifest.ManifestError, match="line 1"):
            manifest.read_manifest(manifest_file)


@pytest.mark.parametrize("digests", [("0", "0"), ("0", "1")], ids=["same digest", "other digest"])
def test_read_manifest_rejects_a_path_listed_twice(tmp_path, digests):
    manifest_file = tmp_path / paths.MANIFEST
    manifest_file.write_text(f"{digests[0] * 64}  a.txt\n{'2' * 64}  b.txt\n{digests[1] * 64} *./a.txt\n")
    with pytest.raises(manifest.ManifestError, match=r"line 3: lists a\.txt again \(first on line 1\)"):
        manifest.read_manifest(manifest_file)


@pytest.mark.parametrize("name", ["../outside.txt", "/etc/passwd", "tables/../../outside.txt"])
def test_read_manifest_rejects_a_path_leaving_the_folder(tmp_path, name):
    manifest_file = tmp_path / paths.MANIFEST
    manifest_file.write_text(f"{'0' * 64}  {name}\n")
    with pytest.raises(manifest.ManifestError, match="line 1"):
        manifest.read_manifest(manifest_file)


def test_read_manifest_accepts_binary_mode_and_dot_slash_lines(tmp_path):
    # `find . -type f -exec sha256sum -b {} +` writes "<hex> *./name".
    manifest_file = tmp_path / paths.MANIFEST
    manifest_file.write_text(f"{'A' * 64} *./tables/x.json\n{'b' * 64}  y.txt\n\n")
    assert manifest.read_manifest(manifest_file) == {"tables/x.json": "a" * 64, "y.txt": "b" * 64}


# ---------------------------------------------------------------- verify: sha256sum's verdict and more


def _edit(root, tmp_path):
    data = bytearray((root / "data" / "x.bin").read_bytes())
    data[100] ^= 0x01
    (root / "data" / "x.bin").write_bytes(bytes(data))


def _same_bytes_through_a_link(root, tmp_path):
    copy = tmp_path / "copy-of-report.md"
    copy.write_bytes((root / "REPORT.md").read_bytes())
    (root / "REPORT.md").unlink()
    (root / "REPORT.md").symlink_to(copy)


def _folder_swapped_for_a_link(root, tmp_path):
    # The listed env/collect_env.json now hashes a file outside the folder with the same bytes.
    outside = tmp_path / "outside-env"
    outside.mkdir()
    (outside / "collect_env.json").write_bytes((root / "env" / "collect_env.json").read_bytes())
    shutil.rmtree(root / "env")
    (root / "env").symlink_to(outside, target_is_directory=True)


def _append_line(text):
    def mutate(root, tmp_path):
        with open(root / paths.MANIFEST, "a", encoding="utf-8") as handle:
            handle.write(text(root))

    return mutate


def _write(name, content="added later\n"):
    def mutate(root, tmp_path):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)

    return mutate


def _replace_with_folder(root, tmp_path):
    (root / "REPORT.md").unlink()
    (root / "REPORT.md").mkdir()


def _link_added(root, tmp_path):
    (root / "hostname").symlink_to("/etc/hostname")


def _fifo_added(root, tmp_path):
    os.mkfifo(root / "tables" / "pipe")


# (case, mutation, sha256sum --check passes, verify's problem kinds or ManifestError)
VERIFY_CASES = [
    ("untouched", lambda root, tmp_path: None, True, []),
    ("edited byte", _edit, False, ["changed"]),
    ("deleted file", lambda root, tmp_path: (root / "config.yaml").unlink(), False, ["missing"]),
    ("replaced by a folder", _replace_with_folder, False, ["missing"]),
    ("file added", _write("tables/added.csv"), True, ["added"]),
    ("dot-file added", _write(".hidden"), True, ["added"]),
    ("hidden temporary added", _write("tables/.decision.json.x1y2.tmp"), True, ["added"]),
    ("symlink added", _link_added, True, ["added"]),
    ("FIFO added", _fifo_added, True, ["added"]),
    (
        "listed file replaced by a link to the same bytes",
        _same_bytes_through_a_link,
        True,
        ["symbolic link (not followed)"],
    ),
    (
        "listed folder replaced by a link to the same bytes",
        _folder_swapped_for_a_link,
        True,
        ["symbolic link (not followed)", "added"],
    ),
    (
        "line listed twice, same digest",
        _append_line(lambda root: f"{atomic.sha256_file(root / 'config.yaml')}  config.yaml\n"),
        True,
        "ManifestError",
    ),
    (
        "line listed twice, other digest",
        _append_line(lambda root: f"{'0' * 64}  config.yaml\n"),
        False,
        "ManifestError",
    ),
    ("malformed line", _append_line(lambda root: "this is not a checksum line\n"), True, "ManifestError"),
    (
        "path outside the folder",
        _append_line(lambda root: f"{atomic.sha256_file('/etc/hostname')}  ../../../../../etc/hostname\n"),
        None,
        "ManifestError",
    ),
    ("empty manifest", lambda root, tmp_path: (root / paths.MANIFEST).write_text(""), False, "ManifestError"),
    ("late files written after the manifest", _write(paths.ARCHIVE_LOG), True, []),
    (
        "a forged HTML report",
        _write(paths.SNAKEMAKE_REPORT_HTML, "<html>all fine</html>"),
        True,
        ["HTML report not of this run"],
    ),
    (
        "an HTML report of other results",
        lambda root, tmp_path: _html_report(root, {"REPORT.md": b"# Verdict: GPU\n"}),
        True,
        ["HTML report not of this run"],
    ),
    (
        "an HTML report of this run",
        lambda root, tmp_path: _html_report(root, {"REPORT.md": (root / "REPORT.md").read_bytes()}),
        True,
        [],
    ),
]


@pytest.mark.parametrize(
    ("case", "mutate", "sha256sum_passes", "expected"), VERIFY_CASES, ids=[c[0] for c in VERIFY_CASES]
)
def test_verify_gives_sha256sums_verdict_and_more(tmp_path, case, mutate, sha256sum_passes, expected):
    root = _sealed(tmp_path)
    mutate(root, tmp_path)
    if shutil.which("sha256sum") and sha256sum_passes is not None:
        assert (_sha256sum_check(root).returncode == 0) == sha256sum_passes, case
    if expected == "ManifestError":
        with pytest.raises(manifest.ManifestError):
            manifest.verify(root)
        return
    result = manifest.verify(root)
    assert [what for what, _ in result.problems()] == expected, result
    assert result.matches == (not expected)
    if sha256sum_passes is False:
        assert not result.matches  # never a match where coreutils finds a difference


def test_foreign_files_listed_in_provenance_are_checked_too(tmp_path):
    root = _with_leftovers(tmp_path)
    manifest.seal(root, MADE, {"commit": COMMIT_A, "dirty": False})
    assert manifest.verify(root).matches
    (root / "timing" / "cpu" / "bs64.rep1.json").write_text("{}\n")
    (root / "REPORT.link.md").unlink()
    result = manifest.verify(root)
    assert result.foreign_changed == ("REPORT.link.md", "timing/cpu/bs64.rep1.json") and not result.matches


def test_an_edited_provenance_list_is_not_trusted(tmp_path):
    root = _with_leftovers(tmp_path)
    manifest.seal(root, MADE, {"commit": COMMIT_A, "dirty": False})
    record = json.loads((root / paths.PROVENANCE).read_text())
    record["files"]["not_made_by_this_configuration"].append(
        {"path": "planted.txt", "kind": "file", "sha256": "0" * 64}
    )
    (root / paths.PROVENANCE).write_text(json.dumps(record))
    (root / "planted.txt").write_text("x")
    result = manifest.verify(root)
    assert result.changed == (paths.PROVENANCE,)
    assert "planted.txt" in result.added and "timing/cpu/bs64.rep1.json" in result.added


# ---------------------------------------------------------------- verify_results.py


def _verify_cli(root):
    return subprocess.run(
        [sys.executable, str(SCRIPTS / "verify_results.py"), str(root)], capture_output=True, text=True, timeout=60
    )


def test_verify_results_speaks_json_and_lists_its_exit_codes(tmp_path):
    root = _with_leftovers(tmp_path)
    manifest.seal(root, MADE, {"commit": COMMIT_A, "dirty": False})
    (root / "config.yaml").unlink()
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "verify_results.py"), "--json", str(root)], capture_output=True, text=True
    )
    found = json.loads(done.stdout)
    assert done.returncode == found["status"] == 1 and found["matches"] is False
    assert found["missing"] == ["config.yaml"] and found["listed"] == 10 and found["foreign"] == 4
    assert found["unchecked"] == [paths.ARCHIVE_LOG, paths.SNAKEMAKE_REPORT_ZIP]
    assert found["report_vouched"] == [[paths.SNAKEMAKE_REPORT_HTML, 1]]  # every result it embeds is the listed one
    (root / paths.MANIFEST).unlink()
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "verify_results.py"), "--json", str(root)], capture_output=True, text=True
    )
    assert done.returncode == json.loads(done.stdout)["status"] == 2
    shown = subprocess.run(
        [sys.executable, str(SCRIPTS / "verify_results.py"), "--help"], capture_output=True, text=True
    )
    assert "exit status: 0 every listed file matches" in " ".join(shown.stdout.split())


def test_verify_results_exit_codes_and_messages(tmp_path):
    root = _with_leftovers(tmp_path)
    manifest.seal(root, MADE, {"commit": COMMIT_A, "dirty": False})
    done = _verify_cli(root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "all 10 listed files match; nothing added, removed or linked; 4 entries not made by this configuration"
        in done.stdout
    )
    # Snakemake's HTML report is vouched for by the results it embeds; the archive's log and the .zip report
    # were written after the manifest: they pass, and the reader is told they were not checked.
    assert done.stdout.splitlines()[-2:] == [
        f"{paths.SNAKEMAKE_REPORT_HTML}: vouched for: all 1 results it embeds match the manifest (its captions are "
        "the code's)",
        "not checked (written after the manifest, so nothing vouches for their contents): "
        f"{paths.ARCHIVE_LOG}, {paths.SNAKEMAKE_REPORT_ZIP}",
    ]
    (root / "config.yaml").unlink()
    (root / ".dot").write_text("x")
    (root / "tables" / "link").symlink_to("/etc/hostname")
    done = _verify_cli(root)
    assert done.returncode == 1
    assert done.stdout.splitlines() == ["missing: config.yaml", "added: .dot", "added: tables/link (symbolic link)"]
    assert "does NOT match its manifest" in done.stderr
    with open(root / paths.MANIFEST, "a") as handle:
        handle.write("garbage\n")
    done = _verify_cli(root)
    assert done.returncode == 2 and "line 11: not a sha256sum line" in done.stderr
    (root / paths.MANIFEST).unlink()
    done = _verify_cli(root)
    assert done.returncode == 2 and "cannot verify" in done.stderr and "MANIFEST.sha256" in done.stderr
