"""No package imports one above it: the lesson (`transformer/`) imports nothing of the project; what checks people's
input (`inputs/`) sits on it; interpretability on those; the model directory on interpretability too (its per-head
tables have the shape of `interpretability.kinds.head_grid`); what makes the app safe as a public Space (`deploy/`:
settings, lanes, routes, admission) on the model directory; training on the model directory and interpretability (its
snapshots and head importance look inside the model); serving on `deploy/` (a batch runs with no deadline); the app
and the benchmarks on everything. Read from every module's imports (function-level ones too), so it cannot drift."""

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BELOW = {  # package -> the project packages it may import, besides itself
    "transformer": set(),
    "inputs": {"transformer"},
    "interpretability": {"transformer", "inputs"},
    "modeldir": {"transformer", "inputs", "interpretability"},
    "training": {"transformer", "inputs", "modeldir", "interpretability"},
    "deploy": {"transformer", "inputs", "modeldir"},
    "serving": {"transformer", "inputs", "modeldir", "deploy"},
    "webapp": {"transformer", "inputs", "modeldir", "interpretability", "deploy", "serving"},
    "app": {"transformer", "inputs", "modeldir", "interpretability", "deploy", "serving", "webapp"},
    "bench": {"transformer", "inputs", "modeldir", "interpretability", "deploy", "serving", "training", "webapp",
              "app"},
}


def modules():
    """(package, path) of every module of the project outside tests/."""
    for package in BELOW:
        folder = ROOT / package
        paths = sorted(folder.rglob("*.py")) if folder.is_dir() else [ROOT / f"{package}.py"]
        yield from ((package, path) for path in paths)


def project_imports(path):
    """The project packages a module imports by absolute name (relative imports stay inside its own package)."""
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.add(node.module.split(".")[0])
    return imported & set(BELOW)


def test_every_package_is_known_and_every_module_read():
    packages = {p.name for p in ROOT.iterdir() if p.is_dir() and any(p.glob("*.py")) and p.name != "tests"} | {"app"}
    assert packages == set(BELOW)
    assert sum(1 for _ in modules()) > 40


@pytest.mark.parametrize("package, path", list(modules()), ids=lambda value: str(value).replace(str(ROOT), ""))
def test_no_module_imports_a_package_above_its_own(package, path):
    above = project_imports(path) - BELOW[package] - {package}
    assert not above, f"{path.relative_to(ROOT)} ({package}) imports {sorted(above)}, above it"


def test_the_rule_catches_an_upward_import(tmp_path):
    module = tmp_path / "upward.py"
    module.write_text("def f():\n    from interpretability import inspect\n", encoding="utf-8")
    assert project_imports(module) - BELOW["serving"] == {"interpretability"}


# ---- Every package the code imports is declared ----

OPTIONAL = {"spaces"}  # only on a Hugging Face Space (deploy.process imports it inside a try)


def imported_top_names(paths):
    names = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def declared(*requirement_files):
    """The distribution names the requirement files declare, normalised (PEP 503), following `-r` includes."""
    names = set()
    for name in requirement_files:
        for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
            line = line.split("#")[0].strip()
            if line.startswith("-r "):
                names |= declared(line[3:].strip())
            elif line:
                names.add(re.split(r"[<>=!~ \[]", line, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def test_every_imported_package_is_declared():
    distributions = importlib.metadata.packages_distributions()
    project = {p.name for p in ROOT.iterdir() if p.is_dir()} | {"app", "helpers", "web_helpers", "app_helpers",
                                                               "browser_helpers", "conftest"}
    runtime = [path for package, path in modules() if package != "bench"]  # the app, training and evaluation
    rest = [path for package, path in modules() if package == "bench"] + sorted((ROOT / "tests").glob("*.py"))
    for paths, requirements in ((runtime, "requirements.txt"), (runtime + rest, "requirements-test.txt")):
        third_party = imported_top_names(paths) - set(sys.stdlib_module_names) - project - OPTIONAL
        undeclared = {name for name in third_party
                      if not {d.lower().replace("_", "-") for d in distributions.get(name, [name])} & declared(requirements)}
        assert not undeclared, f"imported but not in {requirements}: {sorted(undeclared)}"
