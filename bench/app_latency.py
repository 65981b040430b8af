"""How long the web app makes a learner wait. Server side: the one event of a translation (the translation with
the payload every view draws from, `webapp.payload`), of a sentence translated just before (its inspection kept) and
of a new one, and each experiment that asks the server (switching heads off, sampling, beam search traced,
attribution, one head's numbers), and the payload's size. Browser side (`--browser`): from a click to the figure on
the page, and the requests the page sent the server meanwhile.

    python -m bench.app_latency --threads 2                     # server side, about a minute on 2 idle cores
    python -m bench.app_latency --threads 2 --browser           # and in headless Chromium (Playwright)
    python -m bench.app_latency --repeats 1 --browser-repeats 1 --browser   # a smoke run

Server side calls the app's own handlers (`webapp.translation.translate`, `webapp.tabs.heads.switch_heads_off`, ...,
given the app's `served` model) in this process, their outputs serialised to JSON as Gradio sends them; not the
network, the queue or the browser. Goals: in Chromium on 2 cores, a control change (attention kind, layer,
head; a decoding step; a query token of one head; a diagnostics measure) draws its figure within 50 ms and sends no
request; Translate shows the translation and its heatmap within 400 ms, with at most one queue join and one stream
(and the fetch of its payload); the payload of a 40-token sentence is at most 250 kB (with the model map's numbers;
150 kB before); a map box opens within 50 ms, sending at most one request; the walk's Next draws its box within 50 ms
and sends none (a token's vectors come in one request). Browser side runs `python app.py` on a
free port; a case's time runs from the click to the first frame where the figure shows what was clicked (Playwright's
own round trip included, a few ms), its requests are those the page sent from the click until 300 ms after the figure.

Model: `--model` (default assets/model) in the app's precision (`MODEL_DTYPE` applies, as in the app). Each case
runs `--repeats` times after one untimed warm-up; p50 and max milliseconds are reported. The last line of the
output is a JSON summary.
"""

import argparse
import contextlib
import gzip
import json
import os
import socket
import subprocess
import sys
import time
import types
import urllib.request

from bench.common import ROOT, add_save_argument, percentile, print_json, print_table, set_threads

SENTENCE = "We are going to the beach tomorrow with all of our friends."  # 12 words
OTHER_SENTENCE = "She bought a new car last week because the old one was broken."  # 12 words, for the browser
LONG_SENTENCE = (
    "The committee decided yesterday that the new school will be built near the old railway station, "
    "despite the protests of the many residents who live nearby."
)  # 40 tokens with </s>: the size goal
GOALS_MS = {"translate": 400.0, "change": 50.0, "experiment": 1000.0}
PAYLOAD_GOAL_KB = 250.0
CHROMIUM = "/usr/bin/chromium"


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.app_latency", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", default=str(ROOT / "assets" / "model"), help="model directory")
    p.add_argument("--sentence", default=SENTENCE, help="the English sentence translated")
    p.add_argument("--repeats", type=int, default=10, help="timed runs per server-side case")
    p.add_argument("--browser", action="store_true", help="also time clicks in headless Chromium")
    p.add_argument("--browser-repeats", type=int, default=5, help="timed runs per browser case")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    add_save_argument(p)
    return p.parse_args(argv)


def load_app(model_dir):
    """The app module, serving `model_dir` (it reads MODEL_DIR when imported)."""
    os.environ["MODEL_DIR"] = str(model_dir)
    import app

    if app.served is None:
        raise SystemExit(f"no model: {app.load_error}")
    return app


def as_sent(value):
    """What Gradio does with a handler's outputs before sending them: JSON."""
    return json.dumps(value, default=lambda _: None)


def timed(fn, repeats):
    """Milliseconds of `fn()` (its outputs serialised) over `repeats` runs after one warm-up run."""
    as_sent(fn())
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        as_sent(fn())
        times.append((time.perf_counter() - start) * 1000)
    return times


def event(**data):
    """A stand-in for the gr.EventData of a view's custom event (its data as the page sends it)."""
    return types.SimpleNamespace(_data=data, **data)


def server_cases(app, sentence):
    """(case, kind of goal, function) for every event the app answers on the server."""
    from webapp import translation
    from webapp.payload import request_json
    from webapp.served import Recent
    from webapp.tabs import heads, inside_head, model_map, steps

    served = app.served
    translate = served.bind(translation.translate)
    settings = {  # the decoding controls: decoding, beam width, temperature, top-k, seed
        "greedy": ("greedy", 4, 1.0, 0, 0),
        "beam": ("beam", 4, 1.0, 0, 0),
        "sampling": ("sampling", 4, 0.8, 10, 1),
    }
    heads_off = ([], [], ["cross L1 H1", "cross L2 H2"])  # ticked per kind: encoder, decoder, cross
    shown = request_json(sentence, 1, None)  # what the model map's boxes send: the greedy translation

    def attribute(method):
        return lambda: steps.attribute(  # noqa: E731
            served, sentence, *settings["greedy"], event(method=method, request=1)
        )

    def translate_anew():
        """The translate event of a sentence no recent inspection holds: what a new sentence costs."""
        served.recent = Recent(served.recent.max_bytes, served.recent.size)
        return translate(sentence, *settings["greedy"])

    return [
        (
            "translate: translation, status, chips and payload",
            "translate",
            lambda: translate(sentence, *settings["greedy"]),
        ),
        ("translate a new sentence (no recent inspection)", "translate", translate_anew),
        (
            "experiment: sampling (translation and payload)",
            "experiment",
            lambda: translate(sentence, *settings["sampling"]),
        ),
        (
            "experiment: beam 4 traced (translation and payload)",
            "experiment",
            lambda: translate(sentence, *settings["beam"]),
        ),
        (
            "experiment: 2 heads off (both translations, payload)",
            "experiment",
            lambda: heads.switch_heads_off(served, sentence, *settings["greedy"], *heads_off),
        ),
        ("experiment: attribution, gradient × input, every step", "experiment", attribute("gradient_x_input")),
        ("experiment: attribution, integrated gradients, every step", "experiment", attribute("integrated_gradients")),
        (
            "one head's numbers, every query token",
            "experiment",
            lambda: inside_head.head_numbers(
                served, sentence, *settings["greedy"], event(translation=1, kind="cross", layer=2, head=2)
            ),
        ),
        (
            "map: a box's vectors (a feed-forward's hidden units, every token)",
            "experiment",
            lambda: model_map.map_numbers(
                served, event(translation=1, shown=shown, box="feed-forward", stack="decoder", index=0)
            ),
        ),
        (
            "map: a token's walk (every box's vectors, an Italian step)",
            "experiment",
            lambda: model_map.map_numbers(
                served, event(translation=1, shown=shown, box="walk", stack="decoder", index=2)
            ),
        ),
    ]


def payload_sizes(app):
    """{sentence: (tokens, kB of JSON, kB gzip-compressed)} of the translate event's payload."""
    from webapp import translation

    sizes = {}
    for name, text in [("12 words", SENTENCE), ("40 tokens", LONG_SENTENCE)]:
        key = app.served.bind(translation.translate)(text, "greedy", 4, 1.0, 0, 0)[3]["key"]
        payload = json.loads(gzip.decompress(app.served.payloads.get(key)))  # kept gzip-encoded for its page
        plain = as_sent(payload).encode()
        sizes[name] = {
            "source_tokens": len(payload["source_tokens"]),
            "target_tokens": len(payload["target_tokens"]),
            "kB": round(len(plain) / 1000, 1),
            "kB_gzip": round(len(gzip.compress(plain)) / 1000, 1),
        }
    return sizes


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(model_dir, timeout=300):
    """`python app.py` on a free port, until the block ends."""
    port = free_port()
    env = {
        **os.environ,
        "MODEL_DIR": str(model_dir),
        "GRADIO_SERVER_PORT": str(port),
        "GRADIO_SERVER_NAME": "127.0.0.1",
    }
    proc = subprocess.Popen(
        [sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
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


# Browser side. Each case: (tab to open first, the click, what the figure shows once the click is drawn).
ATTENTION = "document.querySelector('#attention-heatmap')"
DRAWN = {
    "attention": f"([key, value]) => {ATTENTION}?.dataset[key] === value",
    "step": "(step) => document.querySelector('#step-panel')?.dataset.step === step",
    "query": "(query) => document.querySelector('#inside-head .inside-head')?.dataset.query === query",
    "measure": "(m) => !!document.querySelector(`#head-diagnostics .diagnostics-table[data-measure='${m}']`)",
    # the model map: the box opened, drawn from the payload; its vectors drawn (after a request at a first opening);
    # the output box redrawn at the temperature set
    "map": "(box) => { const r = document.querySelector('#model-map .model-map'); return r?.dataset.open === box "
    "&& r.dataset.state !== 'empty'; }",
    "map vectors": "(box) => { const r = document.querySelector('#model-map .model-map'); return r?.dataset.open === "
    "box && r.dataset.state === 'drawn'; }",
    "temperature": "(t) => document.querySelector('#model-map .model-map')?.dataset.temperature === t",
    # the walk ("Follow a token") at a token's box, its numbers drawn
    "walk": "(w) => { const r = document.querySelector('#model-map .model-map'); return r?.dataset.walk === w "
    "&& r.dataset.state === 'drawn'; }",
    # the new payload drawn: its id published, and the heatmap's rows are its Italian tokens
    "translation": "(old) => { const p = window.translatorStore?.get('translation'); const c = document.querySelector("
    "'#attention-heatmap canvas'); return !!p && p.id !== old && c?.__matrix?.length === "
    "p.target_tokens.length; }",
}


# From a click, dispatched in the page, to the frame after the one where the figure shows it (what a person sees),
# timed by the page's own clock: Playwright's round trips are not in it. With a `value`, the input is set to it instead
# (a slider moved); an SVG element, which has no click(), gets a click event.
CLICK_TO_FIGURE = """async ([selector, predicate, arg, value]) => {
  const drawn = eval(predicate), target = document.querySelector(selector);
  const start = performance.now();
  if (value !== null) {
    target.value = value;
    target.dispatchEvent(new Event("input", {bubbles: true}));
  } else if (target.click) target.click();
  else target.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  while (!drawn(arg)) await new Promise(requestAnimationFrame);
  await new Promise(requestAnimationFrame);
  return performance.now() - start;
}"""


def click_until(page, selector, predicate, arg, value=None):
    """(milliseconds from a click on `selector` (or its value set to `value`) until the page's JS `predicate(arg)`
    holds and a frame is drawn, the URLs the page requested from the click until 300 ms after)."""
    sent = []
    listener = lambda request: sent.append(request.url)  # noqa: E731 (one object: added, then removed)
    page.on("request", listener)
    ms = page.evaluate(CLICK_TO_FIGURE, [selector, predicate, arg, value])
    page.wait_for_timeout(300)
    page.remove_listener("request", listener)
    return ms, [url for url in sent if not url.endswith((".woff2", ".woff", ".ttf"))]


def radio(name, value):
    """The selector of the view's radio `name` (an input's name) choosing `value`."""
    return f'input[name="{name}"][value="{value}"]'


def open_tab(page, tab, ready):
    """Show the tab `tab` and wait for its view's `ready` selector: a tab's module is loaded and mounted when the tab
    is first shown, so its controls exist only then."""
    page.locator(f"#tab-{tab}-button").click()
    page.wait_for_selector(ready, timeout=120_000)


def browser_round(page, sentence):
    """{case: (ms, requests)} of one round: a translation, then each control."""
    old = page.evaluate("() => window.translatorStore?.get('translation')?.id ?? null")
    page.locator("#english textarea").fill(sentence)
    runs = {"translate (click to heatmap)": click_until(page, "#translate", DRAWN["translation"], old)}
    for case, name, value, key in [
        ("attention: layer", "attention-layer", "2", "layer"),
        ("attention: head", "attention-head", "1", "head"),
        ("attention: kind", "attention-kind", "encoder", "kind"),
    ]:
        runs[case] = click_until(page, radio(name, value), DRAWN["attention"], [key, value])
    for name, value in [("attention-kind", "cross"), ("attention-layer", "1"), ("attention-head", "mean")]:
        page.locator(radio(name, value)).click()
    open_tab(page, "steps", "#step-panel .step-next")
    runs["steps: Next"] = click_until(page, "#step-panel .step-next", DRAWN["step"], "2")
    page.locator("#tab-head-button").click()
    page.wait_for_function(
        "() => document.querySelector('#inside-head .inside-head')?.dataset.state === 'drawn'", timeout=120_000
    )
    page.wait_for_timeout(500)  # the head's request, answered, may still close its stream: not the click's
    page.wait_for_selector(f"#inside-head {radio('ih-query', '2')}")  # its query tokens drawn, under load too
    runs["inside one head: another query token"] = click_until(page, radio("ih-query", "2"), DRAWN["query"], "2")
    open_tab(page, "heads", radio("measure", "previous"))
    runs["heads: diagnostics measure"] = click_until(page, radio("measure", "previous"), DRAWN["measure"], "previous")
    page.locator(radio("measure", "entropy")).click()
    open_tab(page, "map", '#model-map [data-box="decoder-add-feed-forward"]')
    box = lambda name: f'#model-map [data-box="{name}"]'  # noqa: E731
    runs["map: open a box"] = click_until(
        page, box("decoder-add-feed-forward"), DRAWN["map"], "decoder-add-feed-forward"
    )
    runs["map: open a box, first opening (its vectors asked)"] = click_until(
        page, box("decoder-feed-forward"), DRAWN["map vectors"], "decoder-feed-forward"
    )
    page.locator(box("softmax")).click()
    page.locator("#model-map .map-temperature").fill("1")
    runs["output: temperature"] = click_until(page, "#model-map .map-temperature", DRAWN["temperature"], "0.5", "0.5")
    runs["walk: follow a token (its vectors asked)"] = click_until(
        page, f"#model-map {radio('map-walk-encoder', '1')}", DRAWN["walk"], "encoder:1:0"
    )
    runs["walk: next box"] = click_until(page, "#model-map .map-walk-next", DRAWN["walk"], "encoder:1:1")
    page.locator("#tab-attention-button").click()
    return runs


def run_browser(model_dir, sentences, repeats):
    """{case: [(ms, requests), ...]} over `repeats` rounds after one warm-up round, alternating `sentences`."""
    from playwright.sync_api import sync_playwright

    with serve(model_dir) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.add_init_script("globalThis.translatorTestHooks = true")  # what is drawn, read (webapp/store.js)
            page.goto(url)
            page.locator("#tab-attention-button").click()  # the heatmap is drawn once shown (the map is the first tab)
            page.wait_for_function(DRAWN["translation"], arg=None, timeout=120_000)
            rounds = [browser_round(page, sentences[i % 2]) for i in range(repeats + 1)][1:]
            return {case: [r[case] for r in rounds] for case in rounds[0]}
        finally:
            browser.close()


def requests_summary(runs):
    """The requests of a case's runs: the most any run sent, and those of the run that sent the most, by kind."""
    most = max((sent for _, sent in runs), key=len)
    kinds = {}
    for url in most:
        kind = url.split("?")[0].rsplit("/gradio_api/", 1)[-1]
        kinds[kind] = kinds.get(kind, 0) + 1
    return len(most), kinds


def summary(results):
    rows, out = [], {}
    for case, (goal, times) in results.items():
        p50, worst = percentile(times, 50), max(times)
        limit = GOALS_MS.get(goal)
        rows.append(
            [
                case,
                f"{p50:.0f}",
                f"{worst:.0f}",
                f"<= {limit:.0f}" if limit else "-",
                ("yes" if p50 <= limit else "NO") if limit else "-",
            ]
        )
        out[case] = {"p50_ms": round(p50, 1), "max_ms": round(worst, 1), "goal_ms": limit}
    print_table(["case", "p50 ms", "max ms", "goal", "met"], rows)
    return out


def main(argv=None):
    args = parse_args(argv)
    threads = set_threads(args.threads)
    app = load_app(args.model)
    print(
        f"model {args.model} in {app.SETTINGS.dtype}, {threads} torch threads; sentence: {args.sentence!r} "
        f"({len(args.sentence.split())} words)\n\nserver side ({args.repeats} runs per case):"
    )
    server = {case: (goal, timed(fn, args.repeats)) for case, goal, fn in server_cases(app, args.sentence)}
    result = {"model": args.model, "dtype": app.SETTINGS.dtype, "threads": threads, "server": summary(server)}
    sizes = payload_sizes(app)
    print(f"\npayload of one translation (JSON as sent; goal <= {PAYLOAD_GOAL_KB:g} kB for 40 tokens):")
    print_table(
        ["sentence", "tokens (English / Italian)", "kB", "kB gzip"],
        [
            [name, f"{s['source_tokens']} / {s['target_tokens']}", f"{s['kB']}", f"{s['kB_gzip']}"]
            for name, s in sizes.items()
        ],
    )
    result["payload"], result["payload_goal_kB"] = sizes, PAYLOAD_GOAL_KB
    if args.browser:
        print(f"\nbrowser side, click to figure ({args.browser_repeats} runs per case):")
        runs = run_browser(args.model, [args.sentence, OTHER_SENTENCE], args.browser_repeats)
        goals = {case: "translate" if case.startswith("translate") else "change" for case in runs}
        result["browser"] = summary({case: (goals[case], [ms for ms, _ in r]) for case, r in runs.items()})
        for case, r in runs.items():
            result["browser"][case]["requests"], result["browser"][case]["requests_by_kind"] = requests_summary(r)
        print_table(
            ["case", "requests (most in a run)", "by kind"],
            [[case, str(v["requests"]), json.dumps(v["requests_by_kind"])] for case, v in result["browser"].items()],
        )
    print_json(result, save_as=args.save)


if __name__ == "__main__":
    main()
