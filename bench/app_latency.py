"""How long the web app makes a learner wait: server side, the time to translate a sentence and draw every view of
the visible tab, and to answer each control change inside a tab; browser side (with `--browser`), the time from a
click to the new figure on the page.

    python -m bench.app_latency --threads 2                     # server side, about a minute on 2 idle cores
    python -m bench.app_latency --threads 2 --browser           # and in headless Chromium (Playwright)
    python -m bench.app_latency --repeats 1 --browser-repeats 1 --browser   # a smoke run

Server side calls the app's own event handlers (`webapp.translation.translate`, `webapp.tabs.attention.view`, ...,
given the app's `served` model) in this process, each
followed by the Gradio postprocessing of its outputs (plotly figures to JSON, images to PNG files), which is the
work the server does per event; not the network, queue or browser. A translation is timed with the views the app
draws after every translation (attention and decoding steps, whatever tab is shown; the app runs them as separate
events, here one after the other), and with the positional tab, drawn when it is the tab in view. The PNG/JSON
downloads are timed apart: the app prepares them after the view is on screen. Goals (issue 10): translate + visible
tab <= 500 ms, a control change <= 150 ms, on 2 cores; (issue 11) each experiment (switching heads off, sampling,
beam search traced, head diagnostics, gradient attribution) <= 1 s for a 12-word sentence. Browser side runs
`python app.py` on a free port and measures, in Chromium, the click to the moment the figure shows what was clicked
(Playwright's own round trips included, a few ms).

Model: `--model` (default assets/model) in the app's precision (`MODEL_DTYPE` applies, as in the app). Each case
runs `--repeats` times after one untimed warm-up; p50 and max milliseconds are reported. The last line of the
output is a JSON summary.
"""

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request

from bench.common import ROOT, percentile, print_json, print_table, set_threads

SENTENCE = "We are going to the beach tomorrow with all of our friends."  # 12 words
OTHER_SENTENCE = "She bought a new car last week because the old one was broken."  # 12 words, for the browser
GOALS_MS = {"translate": 500.0, "change": 150.0, "experiment": 1000.0}
CHROMIUM = "/usr/bin/chromium"


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.app_latency", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=str(ROOT / "assets" / "model"), help="model directory")
    p.add_argument("--sentence", default=SENTENCE, help="the English sentence translated")
    p.add_argument("--repeats", type=int, default=10, help="timed runs per server-side case")
    p.add_argument("--browser", action="store_true", help="also time clicks in headless Chromium")
    p.add_argument("--browser-repeats", type=int, default=5, help="timed runs per browser case")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    return p.parse_args(argv)


def load_app(model_dir):
    """The app module, serving `model_dir` (it reads MODEL_DIR when imported)."""
    os.environ["MODEL_DIR"] = str(model_dir)
    import app

    if app.served is None:
        raise SystemExit(f"no model: {app.load_error}")
    return app


def postprocess(values):
    """What Gradio does with a handler's outputs before sending them: plotly figures to JSON, images to PNG."""
    import gradio as gr
    import numpy as np
    from plotly.graph_objects import Figure

    for value in values if isinstance(values, tuple) else (values,):
        if isinstance(value, Figure):
            gr.Plot().postprocess(value)
        elif isinstance(value, np.ndarray):
            gr.Image(format="png").postprocess(value)


def timed(fn, repeats):
    """Milliseconds of `fn()` (its outputs postprocessed) over `repeats` runs after one warm-up run."""
    postprocess(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        postprocess(fn())
        times.append((time.perf_counter() - start) * 1000)
    return times


def server_cases(app, sentence):
    """(case, kind of goal, function) for every event the app answers on the server."""
    from webapp import tokens, translation
    from webapp.tabs import attention, heads, positions, steps

    served = app.served
    translate, attention_view = served.bind(translation.translate), served.bind(attention.view)
    positions_tab, attribution_view = served.bind(positions.draw), served.bind(steps.attribution_view)
    settings = {  # the decoding controls: decoding, beam width, temperature, top-k, seed
        "greedy": ("greedy", 4, 1.0, 0, 0), "beam": ("beam", 4, 1.0, 0, 0), "sampling": ("sampling", 4, 0.8, 10, 1)}
    inspection = translate(sentence, *settings["greedy"])[-1]
    n_steps = tokens.decoding_steps(inspection)
    drawn = positions_tab(inspection, None)[-1]
    d_model = served.cfg.d_model
    view = lambda kind="cross", layer=1, head="mean", rows="input", style="heatmap": (
        lambda: attention_view(inspection, kind, layer, head, rows, style))

    def translate_then(*tab_views, decoding="greedy"):
        def run():
            outputs = translate(sentence, *settings[decoding])
            return outputs[:3] + tuple(v for draw in tab_views for v in draw(outputs[-1]))
        return run

    follow = [lambda insp: attention_view(insp, "cross", 1, "mean", "input", "heatmap"),  # after every
              lambda insp: (steps.reset_step(insp), *steps.step_view(insp, 1)),  # translation, whatever tab is shown
              lambda insp: (heads.diagnostics_view(insp, "cross", "entropy"),)]
    heads_off = ([], [], ["cross L1 H1", "cross L2 H2"])  # ticked per kind: encoder, decoder, cross

    def switch_heads_off():
        html, off = heads.switch_heads_off(served, sentence, *settings["greedy"], *heads_off)
        return html, *steps.step_view(off, 1)

    def attribution(method, step=1, cached=None):
        return lambda: attribution_view(inspection, method, step, True, cached)[0]

    cached = attribution_view(inspection, "gradient_x_input", 1, True, None)[1]
    return [
        ("translate + attention and step views", "translate", translate_then(*follow)),
        ("translate + those + positional tab", "translate", translate_then(
            *follow, lambda insp: positions_tab(insp, None))),
        ("attention: kind", "change", view(kind="encoder")),
        ("attention: layer", "change", view(layer=2)),
        ("attention: head", "change", view(head="2")),
        ("attention: all heads (grid)", "change", view(head="all")),
        ("attention: rows by produced token", "change", view(rows="produced")),
        ("attention: lines view", "change", view(style="lines")),
        ("attention: lines, all heads", "change", view(head="all", style="lines")),
        ("steps: step", "change", lambda: steps.step_view(inspection, min(3, n_steps))),
        ("positional: dimensions", "change", lambda: positions.curves(served, [0, d_model // 8, d_model // 4])),
        ("positional: tab reopened", "change", lambda: positions_tab(inspection, drawn)),
        ("heads: diagnostics, another kind or measure", "change",
         lambda: heads.diagnostics_view(inspection, "encoder", "previous")),
        ("experiment: 2 heads off (both translations + step view)", "experiment", switch_heads_off),
        ("experiment: sampling (translate + views)", "experiment", translate_then(*follow, decoding="sampling")),
        ("experiment: beam 4 traced (translate + views)", "experiment", translate_then(*follow, decoding="beam")),
        ("experiment: attribution, gradient × input", "experiment", attribution("gradient_x_input")),
        ("experiment: attribution, integrated gradients", "experiment", attribution("integrated_gradients")),
        ("attribution: next step (computed once)", "change", attribution("gradient_x_input", 2, cached)),
        ("downloads (after the view): PNG + JSON", None,
         lambda: attention.download_files(app.downloads, inspection, "cross", 1, "mean")),
    ]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(model_dir, timeout=300):
    """`python app.py` on a free port, until the block ends."""
    port = free_port()
    env = {**os.environ, "MODEL_DIR": str(model_dir), "GRADIO_SERVER_PORT": str(port),
           "GRADIO_SERVER_NAME": "127.0.0.1"}
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"app.py exited with {proc.returncode}")
            with contextlib.suppress(OSError):
                urllib.request.urlopen(url + "config", timeout=5)
                break
            if time.time() > deadline:
                raise SystemExit(f"app.py did not answer on {url} within {timeout} s")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def click_until(page, click, predicate, arg):
    """Milliseconds from `click()` until the page's JS `predicate(arg)` holds."""
    start = time.perf_counter()
    click()
    page.wait_for_function(predicate, arg=arg, timeout=120_000, polling="raf")
    return (time.perf_counter() - start) * 1000


TITLE_HAS = "([id, text]) => (document.querySelector(`#${id} .gtitle`)?.textContent || '').includes(text)"
TICKS_DIFFER = "([id, old]) => { const t = [...document.querySelectorAll(`#${id} .xtick text`)]" \
               ".map(e => e.textContent).join(' '); return t && t !== old; }"


def browser_cases(page, sentences, repeats):
    """{case: milliseconds per run}: translations, then attention controls, then decoding steps."""
    radio = lambda elem_id, name: lambda: page.locator(f'#{elem_id} label[data-testid="{name}-radio-label"]').click()
    ticks = lambda: page.locator("#attention-heatmap .xtick text").evaluate_all(
        "e => e.map(x => x.textContent).join(' ')")
    times = {"translate (click to heatmap)": [], "attention: layer": [], "attention: head": [], "steps: Next": []}

    def translate(sentence):
        page.locator("#english textarea").fill(sentence)
        return click_until(page, page.locator("#translate").click, TICKS_DIFFER, ["attention-heatmap", ticks()])

    for i in range(repeats + 1):  # the first round warms up
        runs = {"translate (click to heatmap)": translate(sentences[i % 2]),
                "attention: layer": click_until(page, radio("layer", "2"), TITLE_HAS, ["attention-heatmap", "layer 2"]),
                "attention: head": click_until(page, radio("head", "1"), TITLE_HAS, ["attention-heatmap", "head 1"])}
        radio("layer", "1")()
        radio("head", "mean")()
        page.wait_for_function(TITLE_HAS, arg=["attention-heatmap", "layer 1 · mean"], timeout=120_000)
        page.get_by_role("tab", name="Decoding step by step").click()
        page.wait_for_function(TITLE_HAS, arg=["step-candidates", "Step 1:"], timeout=120_000)
        runs["steps: Next"] = click_until(page, page.get_by_role("button", name="Next ▶").click, TITLE_HAS,
                                          ["step-candidates", "Step 2:"])
        page.get_by_role("tab", name="Attention").click()
        if i:
            for case, ms in runs.items():
                times[case].append(ms)
    return times


def run_browser(model_dir, sentence, repeats):
    from playwright.sync_api import sync_playwright

    with serve(model_dir) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url)
            page.wait_for_function(TITLE_HAS, arg=["attention-heatmap", "layer 1"], timeout=120_000)
            return browser_cases(page, [sentence, OTHER_SENTENCE], repeats)
        finally:
            browser.close()


def summary(results):
    rows, out = [], {}
    for case, (goal, times) in results.items():
        p50, worst = percentile(times, 50), max(times)
        limit = GOALS_MS.get(goal)
        rows.append([case, f"{p50:.0f}", f"{worst:.0f}", f"<= {limit:.0f}" if limit else "-",
                     ("yes" if p50 <= limit else "NO") if limit else "-"])
        out[case] = {"p50_ms": round(p50, 1), "max_ms": round(worst, 1), "goal_ms": limit}
    print_table(["case", "p50 ms", "max ms", "goal", "met"], rows)
    return out


def main(argv=None):
    args = parse_args(argv)
    threads = set_threads(args.threads)
    app = load_app(args.model)
    print(f"model {args.model} in {app.MODEL_DTYPE}, {threads} torch threads; sentence: {args.sentence!r} "
          f"({len(args.sentence.split())} words)\n\nserver side ({args.repeats} runs per case):")
    server = {case: (goal, timed(fn, args.repeats)) for case, goal, fn in server_cases(app, args.sentence)}
    result = {"model": args.model, "dtype": app.MODEL_DTYPE, "threads": threads, "server": summary(server)}
    if args.browser:
        print(f"\nbrowser side, click to figure ({args.browser_repeats} runs per case):")
        clicks = run_browser(args.model, args.sentence, args.browser_repeats)
        result["browser"] = summary({case: (None, times) for case, times in clicks.items()})
    print_json(result)


if __name__ == "__main__":
    main()
