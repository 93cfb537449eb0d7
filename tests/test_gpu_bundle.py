"""The bundle a bare GPU machine gets (.ci/gpu-bundle, envs/gpu-bundle.txt; docs/gpu.md, "The whole workflow on
a GPU machine"): it holds every package the library and Snakemake import beyond the machine's torch and numpy,
and its trimming keeps what the jobs import."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import runpy
import struct
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
BUNDLE = runpy.run_path(str(REPO / ".ci" / "gpu-bundle"), run_name="gpu_bundle")
normalise = BUNDLE["normalise"]
# The GPU machine's Python: requirements are read with its markers.
GPU_PYTHON = {"python_version": "3.12", "python_full_version": "3.12.3", "extra": ""}
# Imported through another package's module: torch.utils.tensorboard imports tensorboard.
THROUGH = {"torch.utils.tensorboard": "tensorboard"}


def _imported_modules() -> set[str]:
    """Dotted names of every absolute import of the library and the rule scripts, outside the standard library."""
    found: set[str] = set()
    for path in [*SCRIPTS.glob("*.py"), *(SCRIPTS / "accel_choice").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module)
    return {
        name
        for name in found
        if name.split(".")[0] not in sys.stdlib_module_names
        and name.split(".")[0] not in ("accel_choice", "__future__")
    }


def _distributions(modules: set[str]) -> set[str]:
    owners = importlib.metadata.packages_distributions()
    found = set()
    for module in modules:
        found.update(normalise(d) for d in owners.get(module.split(".")[0], []))
        found.update(
            normalise(d) for prefix, d in THROUGH.items() if module == prefix or module.startswith(f"{prefix}.")
        )
    return found


def _closure(names: set[str]) -> set[str]:
    """`names` and every distribution they require, on the GPU machine's Python (installed metadata)."""
    seen: set[str] = set()
    queue = list(names)
    while queue:
        name = normalise(queue.pop())
        if name in seen:
            continue
        seen.add(name)
        for line in importlib.metadata.distribution(name).requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate(GPU_PYTHON):
                queue.append(requirement.name)
    return seen


def test_the_bundle_holds_every_package_the_jobs_and_snakemake_import_beyond_the_machines_torch_and_numpy():
    """What the library and the rule scripts import, with Snakemake and everything those require: each in the
    bundle, or left out for a reason .ci/gpu-bundle gives; nothing in the bundle that nothing needs."""
    try:
        needed = _closure(_distributions(_imported_modules()) | {"snakemake"})
        machine = _closure({"torch", "numpy"})
    except importlib.metadata.PackageNotFoundError as missing:  # a bare GPU machine: no Snakemake, no pyarrow
        pytest.skip(f"reads the installed packages' requirements: {missing.name} is not installed here")
    bundle = {normalise(name) for name in BUNDLE["names"]()}
    not_carried = {normalise(name) for name in BUNDLE["NOT_CARRIED"]}
    assert {"pyarrow", "pandas", "scipy", "matplotlib", "pydantic", "pyyaml", "tensorboard", "nvidia-ml-py"} <= needed
    missing = sorted(needed - machine - bundle - not_carried)
    assert not missing, f"add to envs/gpu-bundle.txt (or to NOT_CARRIED in .ci/gpu-bundle, saying why): {missing}"
    assert not sorted(bundle - needed), "envs/gpu-bundle.txt lists packages nothing imports or requires"
    assert not bundle & not_carried
    pinned = BUNDLE["pins"]()
    assert all(normalise(name) in pinned for name in BUNDLE["names"]()), "every bundled package is pinned"


@pytest.mark.parametrize(
    ("project", "member"),
    [
        ("scipy", "scipy/special/_ufuncs.cpython-312-x86_64-linux-gnu.so"),
        ("scipy", "scipy/stats/_distn_infrastructure.py"),
        ("scipy", "scipy/linalg/_basic.py"),
        ("scipy", "scipy/optimize/_minimize.py"),
        ("pyarrow", "pyarrow/libarrow.so.2600"),
        ("pyarrow", "pyarrow/libarrow_substrait.so.2600"),  # linked by pyarrow.lib
        ("pyarrow", "pyarrow/_parquet.cpython-312-x86_64-linux-gnu.so"),
        ("pyarrow", "pyarrow/_dataset.cpython-312-x86_64-linux-gnu.so"),
        ("fonttools", "fontTools/__init__.py"),
        ("fonttools", "fontTools/agl.py"),  # matplotlib.dviread imports it on every import of pyplot
        ("fonttools", "fontTools/misc/textTools.py"),
        ("fonttools", "fonttools-4.68.0.dist-info/RECORD"),
        ("pillow", "PIL/_imaging.cpython-312-x86_64-linux-gnu.so"),
        ("pillow", "PIL/PngImagePlugin.py"),
        ("pillow", "pillow.libs/libtiff-20b7e810.so.6.3.0"),  # PIL._imaging links it, and libjpeg, libxcb, libXau
        ("pillow", "pillow.libs/libXau-154567c4.so.6.0.0"),
        ("matplotlib", "matplotlib/mpl-data/fonts/ttf/DejaVuSans.ttf"),
        ("pandas", "pandas/io/parquet.py"),
        ("tensorboard", "tensorboard/summary/writer/event_file_writer.py"),
    ],
)
def test_trimming_keeps_what_the_jobs_import(project, member):
    assert BUNDLE["trimmed"](project, member) is None


@pytest.mark.parametrize(
    ("project", "member"),
    [
        ("pandas", "pandas/tests/io/test_parquet.py"),
        ("scipy", "scipy/stats/tests/test_stats.py"),
        ("scipy", "scipy/signal/_peak_finding.py"),
        ("pyarrow", "pyarrow/libarrow_flight.so.2600"),
        ("pyarrow", "pyarrow/include/arrow/api.h"),
        ("fonttools", "fontTools/subset/__init__.py"),
        ("pillow", "PIL/_avif.cpython-312-x86_64-linux-gnu.so"),
        ("pillow", "PIL/_imagingft.cpython-312-x86_64-linux-gnu.so"),
        ("pillow", "pillow.libs/libwebpdemux-9fe2abcc.so.2.0.17"),
        ("pillow", "pillow.libs/libfreetype-57f805ba.so.6.20.6"),
        ("matplotlib", "matplotlib/mpl-data/fonts/afm/putr8a.afm"),
        ("tensorboard", "tensorboard/webfiles.zip"),
    ],
)
def test_trimming_drops_what_no_job_runs(project, member):
    assert BUNDLE["trimmed"](project, member)


def test_a_repacked_wheel_is_stored_without_the_trimmed_files_and_its_record_says_so(tmp_path):
    wheel = tmp_path / "pandas-3.1.1-cp312-cp312-manylinux_2_28_x86_64.whl"
    files = {"pandas/__init__.py": b"x = 1\n", "pandas/tests/test_a.py": b"def test(): pass\n"}
    record = "".join(f"{name},sha256=abc,{len(data)}\n" for name, data in files.items())
    record += "pandas-3.1.1.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in files.items():
            out.writestr(name, data)
        out.writestr("pandas-3.1.1.dist-info/RECORD", record)
    data, dropped, stripped = BUNDLE["repack"](wheel, "pandas")
    assert (dropped, stripped) == (1, 0)
    repacked = tmp_path / "repacked.whl"
    repacked.write_bytes(data)
    with zipfile.ZipFile(repacked) as result:
        assert result.namelist() == ["pandas/__init__.py", "pandas-3.1.1.dist-info/RECORD"]
        assert {info.compress_type for info in result.infolist()} == {zipfile.ZIP_STORED}
        assert result.read("pandas-3.1.1.dist-info/RECORD").decode() == (
            "pandas/__init__.py,sha256=abc,6\npandas-3.1.1.dist-info/RECORD,,\n"
        )


def test_a_changed_file_gets_its_own_record_line():
    line = BUNDLE["record_line"]("a/b.so", b"hello")
    assert re.fullmatch(r"a/b\.so,sha256=[A-Za-z0-9_-]{43},5\n", line)
    assert line == "a/b.so,sha256=LPJNul-wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ,5\n"


def _elf(offset: int, address: int) -> bytes:
    """A 64-bit little-endian ELF header with one loadable segment at `offset` in the file, `address` in memory."""
    header = (
        b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 64, 0, 0, 64, 56, 1, 0, 0, 0)
    )
    return header + struct.pack("<IIQQQQQQ", 1, 5, offset, address, address, 16, 16, 4096)


def test_a_stripped_library_whose_segments_glibc_would_refuse_is_recognised():
    """strip left scipy's OpenBLAS (rewritten by patchelf) with a segment off its page: the build keeps the original."""
    assert not BUNDLE["misaligned"](_elf(0x1000, 0x401000))
    assert BUNDLE["misaligned"](_elf(0x15BD184, 0x1604000))
    assert BUNDLE["stripped"]("scipy.libs/libscipy_openblas.so", b"\x7fELF\x02\x01rest") == b"\x7fELF\x02\x01rest"
