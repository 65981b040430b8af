"""The page's JavaScript: ES modules, one `.js` file each (`store.js`, the store every view reads; `views.js`, what
the views share and how each is mounted; `page.js`, the page's own plumbing; `translation.js`, the translation box;
one module per tab in `tabs/`, exporting `mount`), served as they are (`MODULES`: `webapp.views` lets Gradio serve
these files only) and loaded by the browser with `import()`, so that each module is fetched once and imports the
others itself. No Gradio here: a notebook's views (`webapp.notebook`) are built with it too.

Gradio runs a component's `js_on_load`, an event's `js` and the page's `js` as code of its own, so each is one line
here that imports a module and calls it (`view_loader`, `module_call`, `PAGE_SCRIPT`); every other line of the page's
JavaScript is in a `.js` file. The URL is made absolute against the page's address (`document.baseURI`): an
`import()` in code Gradio runs resolves a relative URL against Gradio's own script, and the page's address keeps the
prefix a proxy puts before it. One URL per file means one instance of each module, so every view shares one store.

A notebook's output cell has no server to import from: `bundle` writes the modules a view needs into one script
(`webapp.notebook`)."""

import json
import re
from pathlib import Path

HERE = Path(__file__).parent.resolve()
MODULES = sorted(HERE.rglob("*.js"))
# What is rendered of a view, in the page and in a notebook: an empty mount, into which the view's module draws its
# own markup (each view's markup lives in its `.js`, none in Python strings, so no Gradio template rule applies to it).
MOUNT = '<div class="view-mount"></div>'
VIEWS = HERE / "views.js"
# The one form of import the modules use (a list of names from a file beside or above), and of export (a declaration).
IMPORT = re.compile(r'^import \{([^}]*)\} from "(\.{1,2}/[\w/]+\.js)";\n', re.MULTILINE)
EXPORT = re.compile(r"^export (?:async )?(?:function|const|let|class) (\w+)", re.MULTILINE)


def module_url(path):
    """Where Gradio serves the module `path`, relative to the page."""
    return f"gradio_api/file={Path(path).resolve().as_posix()}"


def module_import(path):
    """A JavaScript expression: the promise of the module `path`, imported by its URL made absolute on the page."""
    return f"import(new URL({json.dumps(module_url(path))}, document.baseURI))"


def module_call(path, function, *given):
    """An event's `js`: the module `path`'s exported `function` called with the `given` values (as JSON) and then the
    event's input values; what it returns (or resolves to) goes to the event's inputs."""
    arguments = "".join(f"{json.dumps(value)}, " for value in given)
    return f"async (...values) => (await {module_import(path)}).{function}({arguments}...values)"


def view_loader(path, questions=()):
    """A view's `js_on_load`: `views.js` mounts the module `path` in this component (views.js, `mountView`), which
    asks the server only the `questions` named here (Gradio makes each a custom event of the view, found by name in
    this line) or its server functions."""
    relative = Path(path).resolve().relative_to(HERE).as_posix()
    return (
        f"{module_import(VIEWS)}.then((views) => views.mountView({json.dumps('./' + relative)}, "
        f"{{element, props, watch, trigger, server}}, {json.dumps(list(questions))}));"
    )


PAGE_SCRIPT = f"() => {{ {module_import(HERE / 'page.js')}; }}"


def imports(path):
    """The modules `path` imports, as paths."""
    path = Path(path).resolve()
    return [(path.parent / specifier).resolve() for _, specifier in IMPORT.findall(path.read_text(encoding="utf-8"))]


def dependency_order(paths):
    """`paths` and every module they import, each after the modules it imports, each once."""
    ordered = []

    def visit(path):
        if path not in ordered:
            for imported in imports(path):
                visit(imported)
            ordered.append(path)

    for path in paths:
        visit(Path(path).resolve())
    return ordered


def bundle(paths):
    """One classic script that defines `modules`, the exports of `paths` and of every module they import by path
    relative to this folder (`modules["tabs/attention.js"].mount`), each module run once, in its own scope.

    For a notebook's view (`webapp.notebook`): an `<iframe srcdoc>` has no server to import from, and an inline
    script is what every notebook front end runs (a `data:` URL module needs a content policy some forbid)."""
    parts = ["const modules = {};"]
    for path in dependency_order(paths):
        source = path.read_text(encoding="utf-8")
        exported = EXPORT.findall(source)
        body = IMPORT.sub(lambda m: f"const {{{m.group(1)}}} = {bundled(path.parent / m.group(2))};\n", source)
        body = re.sub(r"^export ", "", body, flags=re.MULTILINE)
        if re.search(r"^\s*(import|export)\b", body, re.MULTILINE):
            raise ValueError(
                f'{name_of(path)}: an import or export other than `import {{...}} from "./x.js";` or '
                "`export <declaration>`, which `bundle` cannot write as a script"
            )
        parts.append(f"{bundled(path)} = (() => {{\n{body}\nreturn {{{', '.join(exported)}}};\n}})();")
    return "\n".join(parts)


def name_of(path):
    """A module's name in a bundle: its path relative to this folder."""
    return Path(path).resolve().relative_to(HERE).as_posix()


def bundled(path):
    """A JavaScript expression: the exports of the module `path` in a `bundle`."""
    return f"modules[{json.dumps(name_of(path))}]"


def view_css(path):
    """The CSS of the module `path`: the `.css` of each module it imports (e.g. the step panel's), then its own (a
    `.css` file of the same name; none: nothing)."""
    styles = [p.with_suffix(".css") for p in dependency_order([path])]
    return "\n".join(style.read_text(encoding="utf-8") for style in styles if style.exists())
