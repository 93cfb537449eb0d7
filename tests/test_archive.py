"""The archive: invocation record, provenance, and a MANIFEST.sha256 that coreutils accepts."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from accel_choice import archive, atomic

COMMIT_A = "a" * 40
COMMIT_B = "b" * 40
ARGV = ["/venv/bin/snakemake", "--cores", "4", "--configfile", "my config.yaml"]

needs_sha256sum = pytest.mark.skipif(shutil.which("sha256sum") is None, reason="coreutils sha256sum not installed")


def _results(tmp_path):
    """A small results folder in the shape of a real run."""
    root = tmp_path / "results"
    atomic.write_text(root / "REPORT.md", "# Report\n")
    atomic.write_text(root / "config.yaml", "seed: 0\n")
    atomic.write_text(root / "benchmarks" / "generate_benchmark.tsv",
                      "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
                      "1.60\t0:00:01\t256.54\t762.29\t157.44\t205.75\t41.39\t0.01\t25.00\t0.99\n")
    atomic.write_text(root / "logs" / "generate_benchmark.log", "job body: wall 0.0194 s, cpu 0.0100 s, peak RSS 341.7 MB\n")
    atomic.write_json(root / "tables" / "cpu_training.json",
                      {"table": [], "environment": {"workflow": {"commit": COMMIT_A, "dirty": False}}})
    atomic.write_json(root / "env" / "collect_env.json", {"quick": {"workflow": {"commit": COMMIT_A, "dirty": False}}})
    (root / "data").mkdir()
    (root / "data" / "x.bin").write_bytes(bytes(range(256)) * 4)
    return root


def _sha256sum_check(root):
    return subprocess.run(["sha256sum", "--check", "--quiet", archive.MANIFEST_NAME], cwd=root,
                          capture_output=True, text=True, timeout=60)


# ---------------------------------------------------------------- invocation


def test_invocation_record_round_trips_through_the_environment(monkeypatch):
    text = archive.invocation_record(ARGV, "/work/run", "9.27.1")
    monkeypatch.setenv(archive.INVOCATION_VARIABLE, text)
    invocation = archive.current_invocation()
    assert invocation["argv"] == ARGV
    assert invocation["command_line"] == "/venv/bin/snakemake --cores 4 --configfile 'my config.yaml'"
    assert invocation["working_directory"] == "/work/run"
    assert invocation["snakemake_version"] == "9.27.1"
    assert invocation["started"].endswith("+00:00") and invocation["host"]


@pytest.mark.parametrize("value", [None, ""])
def test_invocation_outside_the_workflow_says_so(monkeypatch, value):
    if value is None:
        monkeypatch.delenv(archive.INVOCATION_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(archive.INVOCATION_VARIABLE, value)
    invocation = archive.current_invocation()
    assert invocation["command_line"] is None
    assert f"{archive.INVOCATION_VARIABLE} not set" in invocation["note"]


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
    paths = sorted(tmp_path.glob("*.json"))
    seen = archive.record_commits(paths)
    assert seen == {COMMIT_A: [str(clean)], f"{COMMIT_B} (dirty)": [str(nested)], "unknown": [str(unknown)]}


def test_record_commits_counts_a_record_once_per_commit(tmp_path):
    # A table that embeds the environment of every row carries the same commit many times.
    table = tmp_path / "table.json"
    atomic.write_json(table, {"workflow": {"commit": COMMIT_A, "dirty": False},
                              "rows": [{"environment": {"workflow": {"commit": COMMIT_A, "dirty": False}}}] * 3})
    mixed = tmp_path / "mixed.json"
    atomic.write_json(mixed, {"a": {"workflow": {"commit": COMMIT_A}}, "b": {"workflow": {"commit": COMMIT_B}}})
    seen = archive.record_commits([table, mixed])
    assert seen == {COMMIT_A: [str(table), str(mixed)], COMMIT_B: [str(mixed)]}


def test_provenance_counts_record_commits_and_flags_a_mixed_archive(tmp_path, monkeypatch):
    root = _results(tmp_path)
    monkeypatch.setenv(archive.INVOCATION_VARIABLE, archive.invocation_record(ARGV, str(tmp_path), "9.27.1"))
    workflow = {"commit": COMMIT_A, "dirty": False}
    record = archive.provenance(root, workflow)
    assert record["workflow"] == workflow
    assert record["snakemake_version"] == "9.27.1"
    assert record["command_line"] == archive.current_invocation()["command_line"]
    assert record["invocation"]["argv"] == ARGV
    assert record["record_commits"] == {COMMIT_A: 2}
    assert record["mixed_commits"] is False
    assert record["config_snapshot"] == "config.yaml"
    json.dumps(record, allow_nan=False)

    atomic.write_json(root / "timing" / "old.json", {"records": [], "workflow": {"commit": COMMIT_B, "dirty": True}})
    record = archive.provenance(root, workflow)
    assert record["record_commits"] == {COMMIT_A: 2, f"{COMMIT_B} (dirty)": 1}
    assert record["mixed_commits"] is True


def test_provenance_outside_the_workflow_has_no_command_line(tmp_path, monkeypatch):
    monkeypatch.delenv(archive.INVOCATION_VARIABLE, raising=False)
    record = archive.provenance(_results(tmp_path), {"commit": None, "dirty": None})
    assert record["command_line"] is None and record["snakemake_version"] is None
    assert "not set" in record["invocation"]["note"]


# ---------------------------------------------------------------- which files are archived


def test_archive_files_leaves_out_the_manifest_late_files_temporaries_and_symlinks(tmp_path):
    root = _results(tmp_path)
    atomic.write_text(root / archive.MANIFEST_NAME, "")
    for name in archive.AFTER_THE_MANIFEST:
        atomic.write_text(root / name, "written after the manifest\n")
    (root / "tables" / ".decision.json.k2j4h1.tmp").write_text("half a write")
    (root / "REPORT.link.md").symlink_to(root / "REPORT.md")
    (root / "data_link").symlink_to(root / "data", target_is_directory=True)
    files = archive.archive_files(root, exclude=archive.AFTER_THE_MANIFEST)
    assert files == ["REPORT.md", "benchmarks/generate_benchmark.tsv", "config.yaml", "data/x.bin",
                     "env/collect_env.json", "logs/generate_benchmark.log", "tables/cpu_training.json"]
    # Without the exclusions the late files are results like any other; the manifest never is.
    assert set(archive.archive_files(root)) - set(files) == set(archive.AFTER_THE_MANIFEST)


# ---------------------------------------------------------------- the manifest and coreutils


def test_manifest_lines_are_in_sha256sum_format(tmp_path):
    root = _results(tmp_path)
    count = archive.write_manifest(root, exclude=archive.AFTER_THE_MANIFEST)
    lines = (root / archive.MANIFEST_NAME).read_text().splitlines()
    assert count == len(lines) == 7
    digest, name = lines[0].split("  ", 1)
    assert (digest, name) == (atomic.sha256_file(root / "REPORT.md"), "REPORT.md")
    assert archive.read_manifest(root / archive.MANIFEST_NAME) == {
        name: atomic.sha256_file(root / name) for name in archive.archive_files(root)}
    assert archive.verify_manifest(root) == {"changed": [], "missing": [], "unlisted": []}


@needs_sha256sum
def test_sha256sum_accepts_the_manifest_and_both_catch_an_edited_byte(tmp_path):
    root = _results(tmp_path)
    (root / "odd name with spaces.txt").write_text("spaces\n")
    archive.write_manifest(root, exclude=archive.AFTER_THE_MANIFEST)
    done = _sha256sum_check(root)
    assert done.returncode == 0, done.stdout + done.stderr

    data = bytearray((root / "data" / "x.bin").read_bytes())
    data[100] ^= 0x01
    (root / "data" / "x.bin").write_bytes(bytes(data))
    done = _sha256sum_check(root)
    assert done.returncode != 0 and "data/x.bin: FAILED" in done.stdout
    assert archive.verify_manifest(root) == {"changed": ["data/x.bin"], "missing": [], "unlisted": []}


@needs_sha256sum
def test_file_names_with_line_breaks_other_than_newline_round_trip(tmp_path):
    # str.splitlines() would cut these lines in two; sha256sum reads them whole.
    root = _results(tmp_path)
    names = ["form\ffeed.txt", "line\u2028separator.txt", "next\x85line.txt", "group\x1dseparator.txt"]
    for name in names:
        (root / name).write_text("odd\n")
    archive.write_manifest(root)
    assert _sha256sum_check(root).returncode == 0
    assert set(names) <= set(archive.read_manifest(root / archive.MANIFEST_NAME))
    assert archive.verify_manifest(root) == {"changed": [], "missing": [], "unlisted": []}


@needs_sha256sum
def test_a_manifest_with_crlf_line_ends_still_verifies(tmp_path):
    root = _results(tmp_path)
    archive.write_manifest(root)
    manifest = root / archive.MANIFEST_NAME
    manifest.write_bytes(manifest.read_bytes().replace(b"\n", b"\r\n"))
    assert _sha256sum_check(root).returncode == 0
    assert archive.verify_manifest(root) == {"changed": [], "missing": [], "unlisted": []}


def test_deleted_new_and_late_files(tmp_path):
    root = _results(tmp_path)
    archive.write_manifest(root, exclude=archive.AFTER_THE_MANIFEST)
    (root / "config.yaml").unlink()
    (root / "tables" / "added.csv").write_text("a,b\n")
    for name in archive.AFTER_THE_MANIFEST:
        atomic.write_text(root / name, "written after the manifest\n")
    (root / "tables" / ".added.csv.x1y2.tmp").write_text("interrupted")
    assert archive.verify_manifest(root) == {"changed": [], "missing": ["config.yaml"], "unlisted": ["tables/added.csv"]}
    # Told to ignore nothing, the late files are unlisted too.
    assert archive.verify_manifest(root, ignore_unlisted=())["unlisted"] == sorted(
        ["tables/added.csv", *archive.AFTER_THE_MANIFEST])


def test_a_listed_file_replaced_by_a_folder_is_missing(tmp_path):
    root = _results(tmp_path)
    archive.write_manifest(root)
    (root / "REPORT.md").unlink()
    (root / "REPORT.md").mkdir()
    assert archive.verify_manifest(root) == {"changed": [], "missing": ["REPORT.md"], "unlisted": []}


def test_read_manifest_rejects_a_malformed_line_naming_its_number(tmp_path):
    manifest = tmp_path / archive.MANIFEST_NAME
    manifest.write_text(f"{'0' * 64}  a.txt\n{'1' * 64}  b.txt\nnot a checksum line\n")
    with pytest.raises(ValueError, match=r"MANIFEST\.sha256, line 3: not a sha256sum line: 'not a checksum line'"):
        archive.read_manifest(manifest)
    manifest.write_text(f"{'0' * 63}  short.txt\n")
    with pytest.raises(ValueError, match="line 1"):
        archive.read_manifest(manifest)
    manifest.write_text(f"{'g' * 64}  not_hex.txt\n")
    with pytest.raises(ValueError, match="line 1"):
        archive.read_manifest(manifest)


@pytest.mark.parametrize("name", ["../outside.txt", "/etc/passwd", "tables/../../outside.txt"])
def test_read_manifest_rejects_a_path_leaving_the_folder(tmp_path, name):
    manifest = tmp_path / archive.MANIFEST_NAME
    manifest.write_text(f"{'0' * 64}  {name}\n")
    with pytest.raises(ValueError, match="line 1"):
        archive.read_manifest(manifest)


def test_read_manifest_accepts_binary_mode_and_dot_slash_lines(tmp_path):
    # `find . -type f -exec sha256sum -b {} +` writes "<hex> *./name".
    manifest = tmp_path / archive.MANIFEST_NAME
    manifest.write_text(f"{'A' * 64} *./tables/x.json\n{'b' * 64}  y.txt\n\n")
    assert archive.read_manifest(manifest) == {"tables/x.json": "a" * 64, "y.txt": "b" * 64}


@pytest.mark.parametrize("name", ["two\nlines.txt", "back\\slash.txt", "carriage\rreturn.txt", "ends_in_cr\r"])
def test_a_file_name_sha256sum_would_escape_is_refused(tmp_path, name):
    root = _results(tmp_path)
    (root / name).write_text("x\n")
    with pytest.raises(ValueError, match="sha256sum format"):
        archive.write_manifest(root)
    assert not (root / archive.MANIFEST_NAME).exists()
    assert not [p for p in root.iterdir() if p.name.startswith(f".{archive.MANIFEST_NAME}")]
