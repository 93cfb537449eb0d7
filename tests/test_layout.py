"""The library's layout: layers that import only downward, and code inputs that follow real imports.

A rule's `code` input is its script's import closure (accel_choice.io.imports, read with `ast`).
These tests check it against an independent reader, the standard library's `modulefinder`, for
every script a rule runs.
"""

from __future__ import annotations

import ast
import json
import modulefinder
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from accel_choice.io import imports

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
LIBRARY = SCRIPTS / "accel_choice"
RULE_SCRIPTS = sorted(
    {
        name
        for smk in (REPO / "workflow" / "rules").glob("*.smk")
        for name in re.findall(r'script:\n\s+"\.\./scripts/(\w+\.py)"', smk.read_text())
    }
)

# What each layer may import from the package: records (and paths) at the bottom, then io, then
# analyze; measure and render sit on top and do not import each other.
ALLOWED = {
    "records": {"records"},
    "io": {"records", "io"},
    "analyze": {"records", "io", "analyze"},
    "measure": {"records", "io", "analyze", "measure"},
    "render": {"records", "io", "analyze", "render"},
    # The commands (accel-choice compare, verify) on top of everything; accel_choice/__main__.py belongs here.
    "cli": {"records", "io", "analyze", "measure", "render", "cli"},
}
TOP_OF_THE_PACKAGE = {"accel_choice.__main__": "cli"}  # python -m accel_choice: the cli layer's entry


def _layer(dotted: str) -> str:
    if dotted in TOP_OF_THE_PACKAGE:
        return TOP_OF_THE_PACKAGE[dotted]
    parts = dotted.split(".")
    return parts[1] if len(parts) > 2 else "records"  # accel_choice.records(.x), accel_choice.paths: the bottom


def _modules() -> list[Path]:
    return sorted(path for path in LIBRARY.rglob("*.py") if path.name != "__init__.py" or path.parent != LIBRARY)


def _top_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def test_rule_scripts_were_found() -> None:
    assert len(RULE_SCRIPTS) >= 20 and "time_cpu_training.py" in RULE_SCRIPTS


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(LIBRARY).as_posix())
def test_each_module_imports_only_from_its_layer_and_below(path: Path) -> None:
    dotted = ".".join(("accel_choice", *path.relative_to(LIBRARY).with_suffix("").parts))
    layer = _layer(dotted)
    used = {_layer(name) for name in imports.imported_modules(SCRIPTS, path) if name.count(".") >= 1}
    assert used <= ALLOWED[layer], f"{dotted} ({layer}) imports from {sorted(used - ALLOWED[layer])}"


# io modules that hand torch tensors over or record torch's environment: they import torch inside
# the functions that need it, never at module level, so a job that does not call them does not pay
# for torch (about a second).
TORCH_IN_IO = {
    "io/dataio.py": "returns torch tensors (load_benchmark_tensors)",
    "io/envinfo.py": "records torch's version and threads",
}


@pytest.mark.parametrize(
    "path",
    [p for p in _modules() if p.parent.name in ("analyze", "render", "io") or p.parent == LIBRARY],
    ids=lambda p: p.relative_to(LIBRARY).as_posix(),
)
def test_records_io_analysis_and_rendering_never_import_torch_at_module_level(path: Path) -> None:
    tree = ast.parse(path.read_text())
    top_level = {
        alias.name.split(".")[0]
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert "torch" not in top_level
    inside = "torch" in _top_imports(path)
    assert inside == (path.relative_to(LIBRARY).as_posix() in TORCH_IN_IO), "update TORCH_IN_IO"


def _module_finder_closure(script: Path) -> set[Path]:
    """The library files `script` imports, found by the standard library's modulefinder (search path:
    the scripts folder only, so third-party packages are not followed)."""
    finder = modulefinder.ModuleFinder(path=[str(SCRIPTS)])
    finder.run_script(str(script))
    return {
        Path(module.__file__).resolve()
        for name, module in finder.modules.items()
        if name.split(".")[0] == "accel_choice" and module.__file__
    }


@pytest.mark.parametrize("script", RULE_SCRIPTS)
def test_code_inputs_are_the_scripts_real_import_closure(script: str) -> None:
    ours = set(imports.closure(SCRIPTS / script, SCRIPTS))
    assert ours == _module_finder_closure(SCRIPTS / script)
    assert ours, f"{script} imports nothing from the library"


def test_closure_follows_imports_through_other_modules(tmp_path: Path) -> None:
    package = tmp_path / "accel_choice"
    (package / "deep").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "deep" / "__init__.py").write_text("")
    (package / "a.py").write_text("from accel_choice.deep import b\n")
    (package / "deep" / "b.py").write_text("def f():\n    from . import c\n")  # relative, inside a function
    (package / "deep" / "c.py").write_text("import json\n")
    (package / "unused.py").write_text("")
    script = tmp_path / "job.py"
    script.write_text("from accel_choice import a\n")
    found = {path.relative_to(tmp_path).as_posix() for path in imports.closure(script, tmp_path)}
    assert found == {
        "accel_choice/__init__.py",
        "accel_choice/a.py",
        "accel_choice/deep/__init__.py",
        "accel_choice/deep/b.py",
        "accel_choice/deep/c.py",
    }
    # Each file is parsed once per version: an edit is seen by the next call in the same process.
    (package / "deep" / "c.py").write_text("import json\nfrom accel_choice import unused\n")
    found = {path.relative_to(tmp_path).as_posix() for path in imports.closure(script, tmp_path)}
    assert "accel_choice/unused.py" in found


def test_the_import_cache_is_kept_between_processes_and_follows_every_edit(tmp_path: Path) -> None:
    package = tmp_path / "tree" / "accel_choice"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("")
    (package / "c.py").write_text("")
    script = tmp_path / "tree" / "job.py"
    script.write_text("from accel_choice import a\n")
    where = tmp_path / "cache" / "imports.json"

    def names(root: Path, cache: imports.ImportCache) -> set[str]:
        return {p.relative_to(root).as_posix() for p in imports.closure(root / "job.py", root, cache=cache)}

    expected = {"accel_choice/__init__.py", "accel_choice/a.py", "accel_choice/b.py"}
    assert names(tmp_path / "tree", imports.ImportCache(where)) == expected
    saved = json.loads(where.read_text())["entries"]
    assert len(saved) == 4  # job.py, the package, a.py, b.py: what another process reads instead of parsing
    # A copy of the tree is the same content: read from the cache, not parsed (a poisoned entry shows it).
    shutil.copytree(tmp_path / "tree", tmp_path / "copy")
    key = next(k for k in saved if k.split()[1] == "accel_choice/a.py")
    where.write_text(json.dumps({"version": 1, "entries": {**saved, key: ["accel_choice", "accel_choice.c"]}}))
    assert names(tmp_path / "copy", imports.ImportCache(where)) == expected - {"accel_choice/b.py"} | {
        "accel_choice/c.py"
    }
    # An edit changes the content: parsed again, whatever the cache holds.
    (package / "a.py").write_text("from . import b, c\n")
    assert names(tmp_path / "tree", imports.ImportCache(where)) == expected | {"accel_choice/c.py"}
    # A damaged cache file is ignored, and written anew.
    where.write_text("{not json")
    assert names(tmp_path / "tree", imports.ImportCache(where)) == expected | {"accel_choice/c.py"}
    assert json.loads(where.read_text())["version"] == imports.ImportCache.VERSION


def test_paths_are_relative_to_the_working_directory(tmp_path: Path) -> None:
    files = [tmp_path / "repo" / "workflow" / "scripts" / "accel_choice" / "io" / "atomic.py"]
    assert imports.relative_paths(files, tmp_path / "repo") == ["workflow/scripts/accel_choice/io/atomic.py"]


# Jobs whose work needs no torch: importing it would cost each about a second of start-up.
NO_TORCH_SCRIPTS = (
    "aggregate_gpu.py",
    "aggregate_load_convert.py",
    "aggregate_training.py",
    "archive.py",
    "export_data.py",
    "generate_northstar.py",
    "make_report.py",
    "northstar_selection.py",
    "prepare_northstar.py",
    "resource_table.py",
)


@pytest.mark.parametrize("script", NO_TORCH_SCRIPTS)
def test_jobs_that_need_no_torch_import_none(script: str) -> None:
    import subprocess
    import sys

    modules = [
        ".".join(path.relative_to(SCRIPTS).with_suffix("").parts).removesuffix(".__init__")
        for path in imports.closure(SCRIPTS / script, SCRIPTS)
    ]
    code = (
        f"import importlib, sys; sys.path.insert(0, {str(SCRIPTS)!r})\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "from accel_choice.io import envinfo, runtime; envinfo.quick_environment(); runtime.set_threads(1)\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] == 'torch')[:3])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", f"{script} imports torch through its modules: {done.stdout}"


def _documented_layers() -> dict[str, set[str]]:
    """The layer table of docs/development.md: layer -> the module names its "modules" column lists."""
    text = (REPO / "docs" / "development.md").read_text()
    section = text.split("## The library's layers", 1)[1].split("\n## ", 1)[0]
    layers = {}
    for row in re.findall(r"^\| `(\w+)/`[^|]*\| (.*?) \|", section, flags=re.MULTILINE):
        layer, modules = row
        layers[layer] = set(re.findall(r"`(\w+)`", modules))
    return layers


def test_the_documented_layer_table_lists_every_module_of_the_tree() -> None:
    """docs/development.md names each library module in its layer's row, and no module that is gone."""
    documented = _documented_layers()
    actual: dict[str, set[str]] = {}
    for path in _modules():
        if path.name != "__init__.py":
            layer = "cli" if path.parent == LIBRARY and path.stem == "__main__" else path.parent.name
            actual.setdefault(layer, set()).add(path.stem)
    assert set(documented) == set(actual), f"layers documented {sorted(documented)}, in the tree {sorted(actual)}"
    for layer, modules in actual.items():
        missing, gone = sorted(modules - documented[layer]), sorted(documented[layer] - modules)
        assert not missing and not gone, f"docs/development.md, layer {layer}/: add {missing}, remove {gone}"


def test_ci_runs_the_readmes_test_command() -> None:
    """.ci/run calls the README's second command (set up and pass the tests), word for word."""
    readme = (REPO / "README.md").read_text()
    commands = re.findall(r"```bash\n(.*?)\n```", readme, flags=re.DOTALL)
    tests = [command for command in commands if "pytest" in command and "snakemake" not in command]
    assert len(tests) == 1, commands
    assert tests[0] in (REPO / ".ci" / "run").read_text().splitlines()


def test_the_gpu_check_runs_the_acceptance_and_the_gpu_tests_docs_gpu_md_names() -> None:
    """.ci/gpu, the prepared check for a GPU machine (run on an H200: docs/gpu.md), parses as bash and runs
    the acceptance script and `pytest -m gpu`, a marker pytest.ini defines; docs/gpu.md's first section runs it."""
    script = REPO / ".ci" / "gpu"
    assert os.access(script, os.X_OK) and subprocess.run(["bash", "-n", str(script)]).returncode == 0
    text = script.read_text()
    ran = re.findall(r"python3 (workflow/scripts/\S+\.py)", text)
    assert ran == ["workflow/scripts/gpu_acceptance.py"] and (REPO / ran[0]).is_file()
    assert "python3 -m pytest -m gpu" in text and "\n    gpu: " in (REPO / "pytest.ini").read_text()
    assert "python3 -m accel_choice profile --device cuda" in text  # the device profile the planner models a GPU from
    docs = (REPO / "docs" / "gpu.md").read_text()
    assert "\n### Run on an H200" in docs and "\n.ci/gpu " in docs.split("\n### Run on an H200")[0]


def test_the_gpu_workflow_command_installs_the_bundle_then_runs_the_workflow_verify_and_the_profile() -> None:
    """.ci/gpu-workflow, the whole workflow in one call on a GPU machine (docs/gpu.md), parses as bash and, in this
    order, installs the bundle .ci/gpu-bundle builds, runs Snakemake with config/gpu-machine.yaml over the default
    config, verifies the results and measures the device profile in the time left; docs/gpu.md's section runs
    both. What it leaves in $OUT is flat: the device tool returns files at most 2 folders down."""
    script, builder = REPO / ".ci" / "gpu-workflow", REPO / ".ci" / "gpu-bundle"
    assert os.access(script, os.X_OK) and subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert os.access(builder, os.X_OK) and builder.read_text().startswith("#!/usr/bin/env python3\n")
    text = script.read_text()
    steps = [
        "python3 -m pip install -q --no-index --no-deps",
        "python3 -m snakemake --cores",
        "python3 -m accel_choice verify results",
        "python3 -m accel_choice profile --device",
    ]
    where = [text.find(step) for step in steps]
    assert -1 not in where and where == sorted(where), dict(zip(steps, where))
    # and the stages run in that order: the lines that call them, not only the functions' definitions
    calls = [
        text.find(line) for line in ("stage bundle", "stage workflow", "stage verify", "stage copy", "stage profile")
    ]
    assert -1 not in calls and calls == sorted(calls), calls
    assert 'cp -a results "$out' not in text and 'tar -czf "$out/results.tar.gz" results' in text
    assert "config=${GPU_WORKFLOW_CONFIG:-config/gpu-machine.yaml}" in text and '--configfile "$config"' in text
    assert (REPO / "config" / "gpu-machine.yaml").is_file()
    assert "/gpu-bundle/\n" in (REPO / ".gitignore").read_text()  # carried by name, never committed
    docs = (REPO / "docs" / "gpu.md").read_text()
    section = docs.split("\n## The whole workflow on a GPU machine\n", 1)[1].split("\n## ", 1)[0]
    assert "\n.ci/gpu-bundle" in section and "\n.ci/gpu-workflow" in section
