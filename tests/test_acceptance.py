"""The GPU acceptance (workflow/scripts/gpu_acceptance.py): its CPU run in CI, a failed check named."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from accel_choice import records
from accel_choice.measure import acceptance
from accel_choice.records.acceptance import AcceptanceReport

SCRIPT = acceptance.__file__.replace("accel_choice/measure/acceptance.py", "gpu_acceptance.py")


def test_the_cpu_run_passes_prints_its_table_and_writes_its_report(tmp_path):
    out = tmp_path / "acceptance.json"
    done = subprocess.run(
        # without the compile variant: Inductor's compile is the slow part, and tests/test_compile.py covers it
        [sys.executable, SCRIPT, "--device", "cpu", "--rows", "512", "--no-compile", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        # torch's threads as this worker's (tests/conftest.py): a thread per core beside the other worker spins
        env={**os.environ, "OMP_NUM_THREADS": str(torch.get_num_threads())},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = records.read(AcceptanceReport, out)
    assert report.passed and report.device == "cpu" and report.rows == 512
    variants = {(r.precision, r.placement, r.batch_size) for r in report.runs if not r.compiled}
    assert variants == {
        (p, q, b) for p in acceptance.PRECISIONS for q in acceptance.PLACEMENTS for b in acceptance.BATCH_SIZES
    }
    assert not [r for r in report.runs if r.compiled]  # --no-compile
    names = [c.name for c in report.checks]
    assert names == [
        "probe",
        "every precision and placement trains, finite, from the same weights",
        "no host sync inside a warmed training step",
        "copies: pageable and pinned, two batch sizes",
    ]  # the memory bound is CUDA's: its allocator is what it asks
    assert "PASS  copies: pageable and pinned" in done.stdout and done.stdout.rstrip().endswith(f"report: {out}")


def test_a_check_that_fails_or_raises_is_named_and_the_run_exits_1(tmp_path, monkeypatch, capsys):
    import gpu_acceptance

    monkeypatch.setattr(acceptance, "_copies", lambda x, device: (_ for _ in ()).throw(RuntimeError("no copy engine")))
    monkeypatch.setattr(acceptance, "BATCH_SIZES", (64,))
    assert (
        gpu_acceptance.main(["--device", "cpu", "--rows", "128", "--no-compile", "--out", str(tmp_path / "a.json")])
        == 1
    )
    shown = capsys.readouterr().out
    assert "FAIL  copies: pageable and pinned, two batch sizes: RuntimeError: no copy engine" in shown
    assert "FAILED: copies: pageable and pinned, two batch sizes" in shown
    assert not records.read(AcceptanceReport, tmp_path / "a.json").passed


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine without CUDA is what this checks")
def test_without_a_cuda_device_it_says_so_and_exits_2(tmp_path, capsys):
    import gpu_acceptance

    assert gpu_acceptance.main(["--out", str(tmp_path / "a.json")]) == 2
    said = capsys.readouterr().err
    assert "the GPU acceptance needs a CUDA device, but none is visible" in said
    assert said.endswith("Run it on the GPU machine; --device cpu runs the same code on this CPU.\n")
    assert "accelerator" not in said and said.count("\n") == 1  # one line, about the acceptance, not the workflow
    assert not (tmp_path / "a.json").exists()


def test_the_compiled_checks_run_on_the_cpu_whole_and_without_cuda_graphs(monkeypatch):
    """The two compiled checks on the CPU (their CUDA run differs only in what the CUDA-graph one expects):
    the forward compiled whole, default mode; reduce-overhead recorded as such, inductor counting its graphs as
    run without CUDA graphs (none exist on a CPU). One variant, one batch size: the compile is the cost."""
    for name, value in (("PRECISIONS", ("fp32",)), ("PLACEMENTS", ("resident",)), ("BATCH_SIZES", (64,))):
        monkeypatch.setattr(acceptance, name, value)
    report = acceptance.run("cpu", rows=256)
    checks = {c.name: c for c in report.checks}
    assert report.passed, acceptance.table(report)
    default = checks["a compiled variant (torch.compile) trains whole"]
    graphs = checks["reduce-overhead: no CUDA graphs on a CPU"]
    assert default.found.endswith("0 graph breaks") and "graphs run without CUDA graphs" in graphs.found
    assert int(graphs.found.split(", ")[-1].split()[0]) > 0
    compiled = [(r.compile_mode, r.graph_breaks) for r in report.runs if r.compiled]
    assert compiled == [("default", 0), ("reduce-overhead", 0)]
    assert [(r.compile_mode, r.graph_breaks) for r in report.runs if not r.compiled] == [(None, None)]
    assert "reduce-overhead" in acceptance.table(report)
