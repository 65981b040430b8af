"""No package imports one above it: the lesson (`transformer/`) imports nothing of the project; what checks people's
input (`inputs/`) sits on it; interpretability on those; the model directory on interpretability too (its per-head
tables have the shape of `interpretability.kinds.head_grid`); what makes the app safe as a public Space (`deploy/`:
settings, lanes, routes, admission) on the model directory; training on the model directory and interpretability (its
snapshots and head importance look inside the model); serving on `deploy/` (a batch runs with no deadline); the app
and the benchmarks on everything. Read from every module's imports (function-level ones too), so it cannot drift.

docs/design.md draws the packages and the imports between them; `python tests/test_layering.py --write` redraws it
from the code, and a test fails when the drawing and the code differ."""

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
    "bench": {
        "transformer",
        "inputs",
        "modeldir",
        "interpretability",
        "deploy",
        "serving",
        "training",
        "webapp",
        "app",
    },
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


def package_imports():
    """{package: the other project packages its modules import}, as the code has it today."""
    imports = {package: set() for package in BELOW}
    for package, path in modules():
        imports[package] |= project_imports(path) - {package}
    return imports


def package_diagram(imports):
    """A Mermaid drawing of `imports`, each package above the ones it imports. An arrow that another path already
    implies (app -> transformer, when app -> inputs -> transformer) is left out, so the drawing stays readable."""

    def reaches(start, goal, skip_edge):
        stack, seen = [start], set()
        while stack:
            package = stack.pop()
            for target in imports[package]:
                if (package, target) != skip_edge and target not in seen:
                    if target == goal:
                        return True
                    seen.add(target)
                    stack.append(target)
        return False

    edges = sorted(
        (package, target)
        for package in imports
        for target in imports[package]
        if not reaches(package, target, skip_edge=(package, target))
    )
    return "\n".join(["```mermaid", "graph TD", *(f"    {a} --> {b}" for a, b in edges), "```"])


DIAGRAM_START = "<!-- packages: drawn from the code by `python tests/test_layering.py --write` -->"
DIAGRAM_END = "<!-- end of the drawing -->"


def drawn_design_md(text):
    """docs/design.md's text with the drawing between its markers made from today's code."""
    before, rest = text.split(DIAGRAM_START, 1)
    after = rest.split(DIAGRAM_END, 1)[1]
    return f"{before}{DIAGRAM_START}\n{package_diagram(package_imports())}\n{DIAGRAM_END}{after}"


def test_the_design_notes_draw_the_packages_as_the_code_imports_them():
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert design == drawn_design_md(design), (
        "docs/design.md's package drawing is stale: python tests/test_layering.py --write"
    )


def test_the_drawing_leaves_out_only_arrows_another_path_implies():
    drawing = package_diagram({"app": {"inputs", "transformer"}, "inputs": {"transformer"}, "transformer": set()})
    assert drawing.splitlines()[2:-1] == ["    app --> inputs", "    inputs --> transformer"]


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
    tests = {path.stem for path in (ROOT / "tests").glob("*.py")}  # importable from each other, as helpers.py is
    project = {p.name for p in ROOT.iterdir() if p.is_dir()} | {"app"} | tests
    runtime = [path for package, path in modules() if package != "bench"]  # the app, training and evaluation
    rest = [path for package, path in modules() if package == "bench"] + sorted((ROOT / "tests").glob("*.py"))
    for paths, requirements in ((runtime, "requirements.txt"), (runtime + rest, "requirements-test.txt")):
        third_party = imported_top_names(paths) - set(sys.stdlib_module_names) - project - OPTIONAL
        undeclared = {
            name
            for name in third_party
            if not {d.lower().replace("_", "-") for d in distributions.get(name, [name])} & declared(requirements)
        }
        assert not undeclared, f"imported but not in {requirements}: {sorted(undeclared)}"


if __name__ == "__main__":
    design_md = ROOT / "docs" / "design.md"
    drawn = drawn_design_md(design_md.read_text(encoding="utf-8"))
    if "--write" in sys.argv:
        design_md.write_text(drawn, encoding="utf-8")
    print(drawn.split(DIAGRAM_START, 1)[1].split(DIAGRAM_END, 1)[0])
