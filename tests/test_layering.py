"""No package imports one above it: the lesson (`transformer/`) imports nothing of the project; what checks people's
input (`inputs/`) sits on it; interpretability and the model directory sit on those; what makes the app safe as a
public Space (`deploy/`: settings, lanes, routes, admission) on the model directory; training on the model directory
and interpretability (its snapshots and head importance look inside the model); serving on `deploy/` (a batch runs
with no deadline); the app and the benchmarks on everything. Read from every module's imports (function-level ones too), so it cannot drift."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BELOW = {  # package -> the project packages it may import, besides itself
    "transformer": set(),
    "inputs": {"transformer"},
    "interpretability": {"transformer", "inputs"},
    "modeldir": {"transformer", "inputs"},
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
