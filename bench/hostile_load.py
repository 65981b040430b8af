"""What a hostile visitor of a public Space can do to the app, against `python app.py` on 127.0.0.1:

1. the page's server functions (`history`, `positional_table`) called 8 at a time while GET /gradio_api/app_id is
   polled: its latency (goal: max <= 0.2 s);
2. a burst of `--burst` beam-4 /translate requests of a long text, dealt in turn to every way in (POST
   /gradio_api/call, call/v2, run, api, and queue/join with /translate's fn_index as a number and as a string), and
   0.3 s later short greedy /call/translate ones one after another: the greedy latency (goal: each <= 1 s), per
   route how many heavy ones were let in and answered or refused, the most answered ones in flight at once (goal: no
   more than the heavy lane's places), and each heavy request answered or refused (busy) within its budget from
   arrival (goal: none answered later);
3. `--sessions` page sessions, each translating a long sentence of its own through the page's event and fetching its
   payload as the page does (by the key the event answers): the server's RSS before and after, "before" after 5
   warm-up sessions that pay the first long sentences' one-time cost (goal: <= 100 MB more; the growth from the cold
   start is reported too).

    python -m bench.hostile_load                     # the shipped model, all three (a few minutes on 2 cores)
    python -m bench.hostile_load --burst 20 --sessions 50   # a smoke run
    python -m bench.hostile_load --parts sessions    # one part

Every part is bounded in count and in time (`--part-timeout`). The last line of the output is a JSON summary.
"""

import argparse
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench.app_throughput import (
    REQUEST_TIMEOUT,
    CallError,
    call,
    call_result,
    join,
    page_call,
    page_event,
    queue_result,
    rss_mb,
    running_app,
)
from bench.common import ROOT, add_save_argument, percentile, print_json
from bench.decode_latency import find_model_dir
from deploy.settings import Settings

LONG_TEXT = (
    "The committee said on Tuesday that the new rules, which were written after a long debate between the "
    "regions and the government, will change how schools, hospitals and small companies are funded over "
    "the next ten years, and that the first results should be published before the end of the summer."
)
SHORT = "I love books."
GREEDY = ["greedy", 4, 1.0, 0, 0]
SERVER_FUNCTIONS = {"how-it-learned": "history", "positional-encoding": "positional_table"}
PARTS = ("server_functions", "burst", "sessions")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.hostile_load", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", help="model directory (default: assets/model, else runs/cpu/model)")
    p.add_argument(
        "--burst", type=int, default=300, help="beam-4 requests of a long text sent at once, by every route in turn"
    )
    p.add_argument("--sessions", type=int, default=500, help="page sessions, each translating a long sentence")
    p.add_argument("--calls", type=int, default=8, help="concurrent calls of each page server function")
    p.add_argument("--part-timeout", type=float, default=240, help="the longest one part may run, seconds")
    p.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="the parts to run (default: all)")
    p.add_argument("--startup-timeout", type=float, default=300)
    add_save_argument(p)
    args = p.parse_args(argv)
    args.model = find_model_dir(args.model)
    if args.model is None:
        p.error("--model is required here")
    return args


class Poller:
    """GET /gradio_api/app_id every 20 ms in a thread, recording each answer's latency, until stopped."""

    def __init__(self, url):
        self.url, self.seconds, self._stop = url, [], threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        with httpx.Client() as client:
            while not self._stop.is_set():
                start = time.perf_counter()
                client.get(self.url + "gradio_api/app_id", timeout=60)
                self.seconds.append(time.perf_counter() - start)
                time.sleep(0.02)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(60)


def component_ids(url):
    """{elem_id: component id} of the page's components that have an elem_id."""
    config = httpx.get(url + "config", timeout=60).json()
    return {c["props"].get("elem_id"): c["id"] for c in config["components"] if c["props"].get("elem_id")}


def server_functions(url, calls, timeout):
    """Part 1: every page server function called `calls` at a time (as a browser asks, gzip accepted)."""
    ids = component_ids(url)
    asks = [
        {"component_id": ids[elem_id], "fn_name": fn, "data": [], "session_hash": uuid.uuid4().hex}
        for elem_id, fn in SERVER_FUNCTIONS.items()
        for _ in range(calls)
    ]
    sizes = {}

    def ask(body):
        with httpx.Client(headers={"Accept-Encoding": "gzip"}) as client:
            start = time.perf_counter()
            response = client.post(url + "gradio_api/component_server", json=body, timeout=timeout)
            response.raise_for_status()
            sizes[body["fn_name"]] = (int(response.headers.get("content-length", 0)), len(response.content))
            return time.perf_counter() - start

    with Poller(url) as poller, ThreadPoolExecutor(len(asks)) as pool:
        seconds = list(pool.map(ask, asks))
    return {
        "calls": len(asks),
        "call_max_s": round(max(seconds), 3),
        "app_id_max_s": round(max(poller.seconds), 3),
        "app_id_p50_s": round(percentile(poller.seconds, 50), 4),
        "bytes_sent_and_json": {fn: list(size) for fn, size in sizes.items()},
    }


HEAVY = [LONG_TEXT, "beam", 4, 1.0, 0, 0]  # /translate's arguments: a beam search of 4 of a long text
ROUTES = ("call", "call/v2", "run", "api", "join", "join by string")  # every way in to /translate (issue 51)


def heavy_call(client, url, route, fn_index):
    """One beam-4 translation of LONG_TEXT asked for by `route` (`ROUTES`; "join": the queue, with /translate's
    fn_index as Gradio's client sends it, "join by string": as a string Gradio reads as one): (its outcome,
    seconds until the door let it in or not, seconds until answered or None). Outcomes: "answered", "busy" (refused
    at the door, the lane full), "busy later" (let in, then refused), "refused" (another 4xx: a route that runs
    nothing here) or "other error"."""
    start = time.perf_counter()
    if route.startswith("join"):
        session = uuid.uuid4().hex
        response = join(client, url, fn_index if route == "join" else str(fn_index), HEAVY, session)
    else:
        body = {"text": LONG_TEXT, "decoding": "beam", "beam": 4} if route == "call/v2" else {"data": HEAVY}
        response = client.post(f"{url}gradio_api/{route}/translate", json=body, timeout=REQUEST_TIMEOUT)
    door = time.perf_counter() - start
    if response.status_code != 200:
        busy = response.status_code in (429, 503) and "busy" in response.text
        return "busy" if busy else "refused" if response.status_code < 500 else "other error", door, None
    try:
        if route.startswith("join"):
            queue_result(client, url, fn_index, session)
        elif route.startswith("call"):
            call_result(client, url, f"{route}/translate", response)
    except CallError as e:
        return "busy later" if "busy" in str(e) else "other error", door, None
    return "answered", door, time.perf_counter() - start


def most_at_once(intervals):
    """The most of the (start, end) intervals that overlap at one moment."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def burst(url, n_heavy, budget, places, timeout):
    """Part 2: `n_heavy` beam-4 requests of LONG_TEXT at once, dealt in turn to the `ROUTES`; from 0.3 s later, short
    greedy /call/translate requests one after another while the heavy ones last (at most `timeout` s). Per route,
    how many the door let in and answered or refused; the most answered ones held between the door and their answer
    at one moment (goal: at most the lane's `places`, its slots and its line)."""
    heavy, greedy, done = [], [], threading.Event()
    fn_index = page_event(url, "translate")
    # made before the burst: making 100 clients (an SSL context each) holds this process's GIL for seconds
    clients = [httpx.Client() for _ in range(n_heavy + 1)]

    def one_heavy(i):
        route = ROUTES[i % len(ROUTES)]
        heavy.append((route, *heavy_call(clients[i], url, route, fn_index)))

    def greedy_ones():
        time.sleep(0.3)
        end = time.monotonic() + timeout
        while not done.is_set() and time.monotonic() < end:
            start = time.perf_counter()
            call(clients[-1], url, "translate", [SHORT, *GREEDY])
            greedy.append(time.perf_counter() - start)
            time.sleep(0.2)

    sender = threading.Thread(target=greedy_ones)
    sender.start()
    with ThreadPoolExecutor(n_heavy) as pool:
        list(pool.map(one_heavy, range(n_heavy)))
    done.set()
    sender.join(timeout)
    for client in clients:
        client.close()
    outcomes = ("answered", "busy", "busy later", "refused", "other error")
    answered = [(door, seconds) for _, outcome, door, seconds in heavy if outcome == "answered"]
    return {
        "heavy": n_heavy,
        "routes": {
            route: {outcome: sum(r == route and o == outcome for r, o, *_ in heavy) for outcome in outcomes}
            for route in ROUTES
        },
        "heavy_answered": len(answered),
        "places": places,
        "heavy_most_at_once": most_at_once([(door, seconds) for door, seconds in answered if door < seconds]),
        "heavy_answered_max_s": round(max((s for _, s in answered), default=0), 2),
        "budget_s": budget,
        "heavy_answered_after_budget": sum(s > budget + 1 for _, s in answered),  # 1 s: the client's overhead
        "greedy": len(greedy),
        "greedy_p50_s": round(percentile(greedy, 50), 3) if greedy else None,
        "greedy_max_s": round(max(greedy), 3) if greedy else None,
        "greedy_over_1_s": sum(s > 1 for s in greedy),
        "greedy_s": [round(s, 2) for s in greedy],
    }


WARM_UP_SESSIONS = 5  # the first long sentences' one-time cost (the allocator's pools, the kernels' buffers)


def sessions(url, pid, n, timeout):
    """Part 3: `n` page sessions, each translating a long sentence of its own (4 at a time): the RSS they add, after
    WARM_UP_SESSIONS sessions that pay what the first long sentences cost once (reported too: `rss_cold_mb`)."""
    fn_index = page_event(url, "page_translate")
    carrier = component_ids(url).get("translation-payload")
    cold, end, errors = rss_mb(pid), time.monotonic() + timeout, []

    def session(i):
        if time.monotonic() > end:
            return False
        session_hash = uuid.uuid4().hex
        with httpx.Client(headers={"Accept-Encoding": "gzip"}) as client:
            try:
                reference = page_call(client, url, fn_index, [f"{LONG_TEXT} Number {i}.", *GREEDY], session_hash)[3]
                client.post(
                    url + "gradio_api/component_server",
                    timeout=timeout,
                    json={  # as the page fetches it
                        "component_id": carrier,
                        "fn_name": "payload",
                        "data": reference["key"],
                        "session_hash": session_hash,
                    },
                ).raise_for_status()
            except (CallError, httpx.HTTPError) as e:
                errors.append(str(e)[:120])
        return True

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(session, range(-WARM_UP_SESSIONS, 0)))
        before = rss_mb(pid)
        made = sum(pool.map(session, range(n)))
    after = rss_mb(pid)
    return {
        "sessions": made,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "rss_cold_mb": round(cold),
        "rss_before_mb": round(before),
        "rss_after_mb": round(after),
        "rss_added_mb": round(after - before),
        "rss_added_from_cold_mb": round(after - cold),
    }


def main(argv=None):
    args = parse_args(argv)
    budget = 30.0
    defaults = Settings.from_environment({})  # the app's lane, as the bench starts it
    places = defaults.heavy_slots + defaults.heavy_waiting
    summary = {"model": str(args.model)}
    with running_app(
        str(ROOT), args.model, startup_timeout=args.startup_timeout, env={"HEAVY_BUDGET_S": str(budget)}
    ) as (url, pid):
        call(httpx.Client(), url, "translate", [SHORT, *GREEDY])  # warm up
        parts = {
            "server_functions": lambda: server_functions(url, args.calls, args.part_timeout),
            "burst": lambda: burst(url, args.burst, budget, places, args.part_timeout),
            "sessions": lambda: sessions(url, pid, args.sessions, args.part_timeout),
        }
        for name in args.parts:
            summary[name] = parts[name]()
            print(f"{name}:", summary[name], flush=True)
    print_json(summary, save_as=args.save)


if __name__ == "__main__":
    main()
