"""One place for paths: accel_choice.io.paths names every file and folder the workflow writes
under results/, each once; the Snakefile, the rule files and the library read the names there.

Static and fast: the rule files are read as text (Python's tokenizer, so comments are skipped and
only string literals are looked at), the library's sources with `ast`.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from accel_choice.io import paths

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "workflow" / "scripts"
PATHS_MODULE = SCRIPTS / "accel_choice" / "io" / "paths.py"
RULE_FILES = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
LIBRARY_FILES = sorted(path for path in SCRIPTS.rglob("*.py") if path != PATHS_MODULE)

CONSTANTS = {name: value for name, value in vars(paths).items() if name.isupper() and isinstance(value, str)}
FUNCTIONS = {
    name: value
    for name, value in vars(paths).items()
    if callable(value) and not name.startswith("_") and getattr(value, "__module__", "") == paths.__name__
}
# Names that no rule writes through results(...): the results folder and the folders the files are
# grouped in, the training jobs' names (stems of their records, logs and benchmarks), and Snakemake's
# HTML report (made by `snakemake --report`, not by a rule).
NOT_RULE_OUTPUTS = {
    "CPU_JOB",
    "GPU_JOB",
    "RESULTS",
    "DATA",
    "TIMING",
    "TABLES",
    "FIGURES",
    "ENV",
    "NORTHSTAR",
    "LOGS",
    "BENCHMARKS",
    "TENSORBOARD",
    "SNAKEMAKE_REPORT_HTML",
    "SNAKEMAKE_REPORT_ZIP",
}


def _string_literals(path: Path) -> list[tuple[int, str]]:
    """Every string literal of a Snakefile or rule file (f-strings included), with its line; comments skipped."""
    return [(token.start[0], token.string) for token in _tokens(path) if token.type == tokenize.STRING]


def _rule_text() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in RULE_FILES)


def _library_text() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in LIBRARY_FILES)


def _tokens(path: Path) -> list[tokenize.TokenInfo]:
    text = path.read_text(encoding="utf-8")
    return [
        token
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
    ]


def _results_calls(path: Path) -> list[str]:
    """What each call of results(...) in a rule file names first: `paths.X`, `paths.log(`, ..."""
    tokens = _tokens(path)
    calls = []
    for index, token in enumerate(tokens[:-1]):
        before = tokens[index - 1].string if index else ""
        if token.string == "results" and tokens[index + 1].string == "(" and before not in ("def", "."):
            calls.append("".join(t.string for t in tokens[index + 2 : index + 6]))
    return calls


def test_the_rule_files_were_found() -> None:
    assert len(RULE_FILES) >= 9 and all(path.is_file() for path in RULE_FILES)
    assert len(_results_calls(REPO / "workflow" / "rules" / "report.smk")) > 20


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_rule_file_spells_a_results_path(path: Path) -> None:
    # A path literal would be `"results/..."`; prose such as "under results/, by its name" is allowed.
    named = {value for value in CONSTANTS.values() if "/" in value}
    found = [
        (line, text)
        for line, text in _string_literals(path)
        if re.search(r"(?<!\w)results/[\w{]", text) or any(value in text for value in named)
    ]
    assert found == [], f"{path.name}: spell these through results(paths.NAME): {found}"


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_results_call_names_a_paths_entry(path: Path) -> None:
    # results(paths.CPU_TABLE), results(paths.DATASET_META, dataset=...), results(paths.log("stem")).
    def names_an_entry(call: str) -> bool:
        match = re.fullmatch(r"paths\.(\w+)([,)(])", call)
        return bool(match) and (match[1] in CONSTANTS if match[2] in ",)" else match[1] in ("log", "benchmark"))

    assert [call for call in _results_calls(path) if not names_an_entry(call)] == []


def _library_strings(path: Path) -> list[tuple[int, str]]:
    """The string constants of a library module or script, docstrings left out (they describe files)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


@pytest.mark.parametrize("path", LIBRARY_FILES, ids=lambda p: p.relative_to(SCRIPTS).as_posix())
def test_no_library_string_spells_a_results_file(path: Path) -> None:
    # A file of results/ named in a message, a report's text or a lookup comes from paths (an f-string's
    # literal parts are constants too), so renaming it in paths renames it everywhere.
    files = [value for name, value in CONSTANTS.items() if name not in NOT_RULE_OUTPUTS or "." in value]
    found = [
        (line, text)
        for line, text in _library_strings(path)
        if re.search(r"(?<!\w)results/[\w{]", text) or any(value in text for value in files)
    ]
    assert found == [], f"{path.name}: name these through accel_choice.io.paths: {found}"


def test_each_name_has_its_own_value() -> None:
    by_value: dict[str, list[str]] = {}
    for name, value in CONSTANTS.items():
        by_value.setdefault(value, []).append(name)
    assert {value: names for value, names in by_value.items() if len(names) > 1} == {}


def test_names_are_relative_to_the_results_folder() -> None:
    for name, value in CONSTANTS.items():
        assert value and not value.startswith(("/", "./", "../")) and not value.endswith("/"), name
        if name != "RESULTS":
            assert not value.startswith(f"{paths.RESULTS}/"), name


def _used_inside_the_module() -> set[str]:
    """Names of the module that the module itself reads (folders that its file names are built from)."""
    tree = ast.parse(PATHS_MODULE.read_text(encoding="utf-8"))
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


@pytest.mark.parametrize("name", sorted([*CONSTANTS, *FUNCTIONS]))
def test_every_name_is_used(name: str) -> None:
    used = re.compile(rf"\bpaths\.{name}\b")
    assert used.search(_rule_text()) or used.search(_library_text()) or name in _used_inside_the_module(), (
        f"paths.{name} is used nowhere: remove it"
    )


@pytest.mark.parametrize("name", sorted(set(CONSTANTS) - NOT_RULE_OUTPUTS))
def test_every_file_name_is_written_by_a_rule(name: str) -> None:
    assert re.search(rf"\bresults\(paths\.{name}\b", _rule_text()), f"no rule writes or reads results(paths.{name})"


def test_the_folders_are_folders_of_the_named_files() -> None:
    folders = {
        name: CONSTANTS[name]
        for name in NOT_RULE_OUTPUTS
        - {"RESULTS", "SNAKEMAKE_REPORT_HTML", "SNAKEMAKE_REPORT_ZIP", "CPU_JOB", "GPU_JOB"}
    }
    files = [value for name, value in CONSTANTS.items() if name not in NOT_RULE_OUTPUTS]
    files += [paths.log("x"), paths.benchmark("x")]
    for name, folder in folders.items():
        assert any(value.startswith(f"{folder}/") for value in files), name


def test_log_and_benchmark_of_a_stem() -> None:
    stem = "time_cost_model/{device}.rep{repeat}"
    assert paths.log(stem) == "logs/time_cost_model/{device}.rep{repeat}.log"
    assert paths.benchmark(stem) == "benchmarks/time_cost_model/{device}.rep{repeat}.tsv"
    assert paths.benchmark_stem(paths.benchmark(stem)) == stem
    assert paths.ARCHIVE_LOG == paths.log("archive")
    with pytest.raises(ValueError, match="not a benchmark file"):
        paths.benchmark_stem(paths.log(stem))


def test_fill_sets_the_wildcards_given_and_keeps_the_others() -> None:
    assert paths.fill(paths.DATASET_FILE, dataset="benchmark", fmt="parquet") == "data/benchmark.parquet"
    assert paths.fill(paths.DATASET_FILE, fmt="csv") == "data/{dataset}.csv"
    assert paths.fill(paths.CPU_RECORD) == paths.CPU_RECORD
    with pytest.raises(KeyError, match="no wildcard {device}"):
        paths.fill(paths.CPU_RECORD, device="cpu")


def test_the_module_imports_only_the_standard_library() -> None:
    # The Snakefile imports it when it is parsed; the library's bottom layer must stay light.
    tree = ast.parse(PATHS_MODULE.read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
    code = (
        f"import sys; sys.path.insert(0, {str(SCRIPTS)!r}); from accel_choice.io import paths\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('torch', 'numpy', 'snakemake')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
