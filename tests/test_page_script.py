"""The page's JavaScript as ES modules (webapp/page_script.py): every `.js` file of webapp/ is a module that imports
only names its modules export, in the one form the notebook's bundle reads; each tab's module exports `mount`; no
JavaScript lives in the Python modules but the one-line loaders of page_script.py, and no handler reads Gradio's
private event data. The browser tests run the modules; test_app.py checks that they are served, and nothing else."""

import re
from pathlib import Path

import pytest

from webapp import page_script
from webapp.page_script import EXPORT, IMPORT, MODULES, bundle, dependency_order, imports

ROOT = Path(__file__).resolve().parents[1]
WEBAPP = ROOT / "webapp"


def test_every_module_imports_names_its_modules_export_and_nothing_else_is_an_import():
    for module in MODULES:
        source = module.read_text(encoding="utf-8")
        for names, specifier in IMPORT.findall(source):
            exported = set(EXPORT.findall((module.parent / specifier).resolve().read_text(encoding="utf-8")))
            wanted = {name.strip() for name in names.split(",") if name.strip()}
            assert wanted <= exported, f"{module.name} imports {sorted(wanted - exported)} from {specifier}"
        rest = IMPORT.sub("", source)
        assert not re.search(r"^\s*import\b", rest, re.MULTILINE), f"{module.name}: an import bundle cannot read"


@pytest.mark.parametrize("module", sorted((WEBAPP / "tabs").glob("*.js")), ids=lambda path: path.name)
def test_each_tab_module_exports_mount_or_is_imported_by_one(module):
    importers = [other for other in MODULES if module in imports(other)]
    assert "mount" in EXPORT.findall(module.read_text(encoding="utf-8")) or importers, module.name


def test_a_bundle_holds_each_module_once_after_the_modules_it_imports():
    order = dependency_order([WEBAPP / "notebook.js", WEBAPP / "tabs" / "steps.js"])
    names = [path.relative_to(WEBAPP).as_posix() for path in order]
    assert names == ["store.js", "notebook.js", "views.js", "tabs/step_panel.js", "tabs/steps.js"]
    script = bundle(order)
    assert script.count('modules["store.js"] = ') == 1 and "\nimport " not in script and "\nexport " not in script


def test_the_python_side_holds_no_javascript_and_reads_no_private_event_data():
    for path in sorted(WEBAPP.rglob("*.py")):
        if path == Path(page_script.__file__):
            continue  # the loaders: one line each, which import a module and call it
        code = path.read_text(encoding="utf-8")
        assert "=>" not in code and "document." not in code, f"{path.name} holds JavaScript"
        assert "_data" not in re.sub(r"\w_data|_data\w", "", code), f"{path.name} reads Gradio's private event data"


def test_the_loaders_import_by_an_absolute_url_on_the_page():
    loader = page_script.view_loader(WEBAPP / "tabs" / "inside_head.js", ["head_numbers"])
    assert loader.startswith('import(new URL("gradio_api/file=') and "document.baseURI" in loader
    assert 'mountView("./tabs/inside_head.js"' in loader and '["head_numbers"]' in loader
    assert "page.js" in page_script.PAGE_SCRIPT
