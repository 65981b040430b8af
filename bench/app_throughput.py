"""What the web app's server spends per API request, and how many sentences per second it serves to 1, 4 and 16
concurrent API clients, with concurrent requests decoded together (`BATCH_SIZE=16`, the app's default) and each
decoded alone (`BATCH_SIZE=1`); whether every answer equals the answer to a single call; and what 500 new sessions
cost the server in memory.

    python -m bench.app_throughput --threads 1
    python -m bench.app_throughput --sentences 16 --clients 1 4 --sessions 20   # a smoke run
    python -m bench.app_throughput --app-dir /path/to/an/older/checkout           # the same load on another version

Each mode starts `python app.py` (of `--app-dir`, default this checkout) on a free port of 127.0.0.1 with the model
of `--model` (default assets/model, else runs/cpu/model) in the app's default device and precision (`--dtype` to
choose), and `--threads` torch threads (OMP_NUM_THREADS; 0: the app's default). The clients are light: plain HTTP
(httpx) against Gradio's REST routes, POST /gradio_api/call/translate then its result stream, greedy decoding, so that
the load is the server's and not a heavy client library's. For each client count, `--sentences` sentences (the first
distinct English sentences of 6-15 words of test-tatoeba.tsv) are sent, client k sending sentences k, k + n, ... one
after another. Sentences per second: sentences / wall time from the first request to the last answer. Server CPU per
request: the app process's CPU time (user + system, /proc/PID/stat) over the load / requests; the clients' CPU is
counted apart (this process). Alone: the model's own CPU per sentence in this process (float16 and float32, one
torch thread unless `--threads`), one by one and in batches of 16, the floor under the server's. Ceiling
(`--ceiling`): the same app with a model that costs nothing (its translation is the input), the most sentences per
second Gradio itself can serve here.

Sessions (`--sessions N`): the growth of the server's resident memory (RSS) over N new page sessions (each
translating one sentence through the page's own event, as a browser does, so that each keeps its translation's
Inspection), then over N API calls (each a new session); twice, the first time on a server just warmed up.

Goals on 2 CPU cores with the cpu-config model: at 16 clients, <= 30 ms of server CPU per greedy request and >= 3x
the sentences per second of one client; every answer identical to the single call's; 500 sessions <= 50 MB. The last
line of the output is a JSON summary. Every load is bounded (a count of requests, a timeout on each).
"""

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bench.common import DATA_DIR, ROOT, add_save_argument, default_path, percentile, print_json, print_table
from bench.decode_latency import find_model_dir, select_sentences

GOAL_SPEEDUP = 3.0
GOAL_CPU_MS = 30.0
GOAL_SESSIONS_MB = 50.0
GOAL_SESSIONS = 500
MODES = (("unbatched", 1), ("batched", 16))  # name, BATCH_SIZE
GREEDY = ["greedy", 4, 1.0, 0, 0]  # /translate's decoding arguments after the text: greedy (the page's defaults)
HOST = "127.0.0.1"  # loopback only
REQUEST_TIMEOUT = 120  # seconds one request may take


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.app_throughput", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", help="model directory or Hub id (default: assets/model, else runs/cpu/model)")
    p.add_argument("--data", default=default_path(DATA_DIR / "test-tatoeba.tsv"), help="TSV with the sentences")
    p.add_argument("--app-dir", default=str(ROOT), help="the checkout whose app.py is served (default: this one)")
    p.add_argument("--sentences", type=int, default=160, help="sentences translated per client count and mode")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16], help="numbers of concurrent clients")
    p.add_argument("--modes", nargs="+", default=[m for m, _ in MODES], choices=[m for m, _ in MODES])
    p.add_argument("--warmup", type=int, default=8, help="untimed sentences per mode, once the app is up")
    p.add_argument("--threads", type=int, default=0, help="torch threads of the app (0: its default)")
    p.add_argument("--dtype", help="MODEL_DTYPE of the app (default: the app's)")
    p.add_argument("--ceiling", action="store_true", help="also serve with a model that costs nothing")
    p.add_argument("--sessions", type=int, default=0, help="new sessions whose memory is measured (0: none)")
    p.add_argument("--startup-timeout", type=float, default=300, help="seconds the app may take to start")
    add_save_argument(p)
    args = p.parse_args(argv)
    args.model = find_model_dir(args.model)
    if args.data is None or args.model is None:
        p.error("--data and --model are required here (no test-tatoeba.tsv or shipped model found)")
    args.clients = sorted(set(args.clients) | {1})  # one client: the reference, single calls
    return args


# --- The app, and the light client (mixed_load.py uses these too) ----------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# Run as `python -c` in the app's directory: app.py with a model that costs nothing (the API's translation is its
# input; the page's is what the real model says, for the sessions). The app's own wiring, sessions and routes.
NULL_MODEL_APP = """
import sys
sys.path.insert(0, ".")
import app
app.served.translate = lambda text, beam=1, sampling=None, heads=(): text
app.launch()
"""


@contextlib.contextmanager
def running_app(app_dir, model, batch_size=16, threads=0, dtype=None, startup_timeout=300, null_model=False, env=None):
    """(URL, process id) of `python app.py` of `app_dir` serving `model` on a free loopback port, stopped (SIGTERM)
    afterwards."""
    port = free_port()
    env = {
        **os.environ,
        "MODEL_DIR": str(model),
        "BATCH_SIZE": str(batch_size),
        "GRADIO_SERVER_PORT": str(port),
        "GRADIO_SERVER_NAME": HOST,
        "GRADIO_ANALYTICS_ENABLED": "False",
        **(env or {}),
    }
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    if dtype:
        env["MODEL_DTYPE"] = dtype
    url = f"http://{HOST}:{port}/"
    command = [sys.executable, "-c", NULL_MODEL_APP] if null_model else [sys.executable, "app.py"]
    with tempfile.TemporaryFile("w+") as log:
        app = subprocess.Popen(command, cwd=app_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + startup_timeout
            while not answers(url):
                if app.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise SystemExit(f"app.py did not start (BATCH_SIZE={batch_size}):\n{log.read()[-3000:]}")
                time.sleep(0.1)
            yield url, app.pid
        finally:
            app.terminate()
            try:
                app.wait(30)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait()


def answers(url):
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(url + "config", timeout=5).status_code == 200
    return False


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (all its threads), and of its running child processes (the
    app's decoding process: `serving.decoding_process`)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(map(cpu_seconds, child_processes(pid)))


def child_processes(pid):
    """The process ids of the running children of process `pid` (Linux: /proc/PID/task/*/children)."""
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            children += map(int, (task / "children").read_text().split())
    return children


def rss_mb(pid):
    """Resident memory of process `pid`, MB."""
    with open(f"/proc/{pid}/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return kb / 1024


class CallError(RuntimeError):
    """An endpoint answered with an error (its message, as the server gave it)."""


def call(client, url, name, data):
    """The answer of POST /gradio_api/call/NAME with `data` (its output list), read from the result stream."""
    response = client.post(f"{url}gradio_api/call/{name}", json={"data": data}, timeout=REQUEST_TIMEOUT)
    return call_result(client, url, f"call/{name}", response)


def call_result(client, url, route, response):
    """The output list of the event that POST /gradio_api/ROUTE (call/NAME or call/v2/NAME) answered with
    `response`, read from the event's result stream."""
    if response.status_code != 200:
        raise CallError(f"{route}: HTTP {response.status_code}: {response.text[:300]}")
    event_id = response.json()["event_id"]
    event = None
    with client.stream("GET", f"{url}gradio_api/{route}/{event_id}", timeout=REQUEST_TIMEOUT) as stream:
        for line in stream.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                payload = json.loads(line[5:])
                if event == "error":
                    raise CallError(f"{route}: {payload}")
                return payload
    raise CallError(f"{route}: the stream ended without an answer")


def page_event(url, api_name):
    """The fn_index of the page's event named `api_name` (its translate event: "page_translate", or "translate" in
    versions where the page's event was the API's), from the page's config."""
    config = httpx.get(url + "config", timeout=30).json()
    for dependency in config["dependencies"]:
        if dependency.get("api_name") == api_name:
            return dependency["id"]
    raise SystemExit(f"no event named {api_name!r} in the page's config")


def page_call(client, url, fn_index, data, session):
    """What a browser does to run the page's event `fn_index` in session `session`: join the queue, read the
    session's stream until the event has completed. Returns its output list."""
    response = join(client, url, fn_index, data, session)
    response.raise_for_status()
    return queue_result(client, url, fn_index, session)


def join(client, url, fn_index, data, session):
    """The HTTP response of POST /gradio_api/queue/join: the event `fn_index` with `data` in session `session`."""
    body = {"data": data, "fn_index": fn_index, "session_hash": session, "event_data": None, "trigger_id": None}
    return client.post(f"{url}gradio_api/queue/join", json=body, timeout=REQUEST_TIMEOUT)


def queue_result(client, url, fn_index, session):
    """The output list of the event `fn_index` that joined the queue in session `session`, read from the session's
    stream once it has completed."""
    with client.stream(
        "GET", f"{url}gradio_api/queue/data", params={"session_hash": session}, timeout=REQUEST_TIMEOUT
    ) as stream:
        for line in stream.iter_lines():
            if not line.startswith("data:"):
                continue
            message = json.loads(line[5:])
            if message.get("msg") == "process_completed":
                if not message.get("success"):
                    raise CallError(f"page event {fn_index}: {message.get('output')}")
                return message["output"]["data"]
    raise CallError(f"page event {fn_index}: the stream ended without an answer")


def translated(answer):
    """The Italian of a /translate answer: the lean endpoint's only output, or the first of the page's."""
    return answer[0]


# --- The measurements ----------------------------------------------------------------------------------------------


def serve(url, pid, sentences, n_clients):
    """A row for `n_clients` light clients sending `sentences` at once through /translate."""
    clients = [httpx.Client() for _ in range(n_clients)]
    italian, seconds = [None] * len(sentences), [None] * len(sentences)

    def client_sends(k):
        for i in range(k, len(sentences), n_clients):
            start = time.perf_counter()
            italian[i] = translated(call(clients[k], url, "translate", [sentences[i], *GREEDY]))
            seconds[i] = time.perf_counter() - start

    server_before, own_before, start = cpu_seconds(pid), time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(n_clients) as pool:
        list(pool.map(client_sends, range(n_clients)))  # list(): raise what a client raised
    wall = time.perf_counter() - start
    server, own = cpu_seconds(pid) - server_before, time.process_time() - own_before
    for client in clients:
        client.close()
    n = len(sentences)
    return {
        "clients": n_clients,
        "sentences_per_s": round(n / wall, 2),
        "server_cpu_ms_per_request": round(1000 * server / n, 2),
        "client_cpu_ms_per_request": round(1000 * own / n, 2),
        "latency_p50_ms": round(1000 * percentile(seconds, 50), 1),
        "latency_p95_ms": round(1000 * percentile(seconds, 95), 1),
    }, italian


def idle_cpu(pid, seconds=3.0):
    """The server's CPU milliseconds per second while nobody calls it (its queue's polling)."""
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return round(1000 * (cpu_seconds(pid) - before) / seconds, 2)


def measure_mode(args, batch_size, sentences, warmup, null_model=False):
    """(rows, answers per client count, idle CPU, resident memory in MB of the server and of its decoding process
    after the load) of one app."""
    rows, answers_by_n = [], {}
    with running_app(
        args.app_dir, args.model, batch_size, args.threads, args.dtype, args.startup_timeout, null_model
    ) as (url, pid):
        serve(url, pid, warmup, min(len(warmup), max(args.clients)))
        idle = idle_cpu(pid)
        for n in args.clients:
            row, italian = serve(url, pid, sentences, n)
            rows.append(row)
            answers_by_n[n] = italian
            print(
                f"  {n:>2} clients: {row['sentences_per_s']:7.1f} sentences/s, server "
                f"{row['server_cpu_ms_per_request']:6.1f} ms CPU per request, clients "
                f"{row['client_cpu_ms_per_request']:.1f}, p50 {row['latency_p50_ms']:.0f} ms",
                flush=True,
            )
        memory = {"server": round(rss_mb(pid)), "decoding_process": round(sum(map(rss_mb, child_processes(pid))))}
    return rows, answers_by_n, idle, memory


def model_alone(args, sentences):
    """The model's CPU milliseconds per sentence in this process, in float16 and float32 (or `--dtype`) on `--threads`
    torch threads (default 1): one by one, and in batches of 16. The floor under the server's."""
    import torch

    from modeldir.device import pick_device
    from modeldir.directory import open_model

    torch.set_num_threads(args.threads or 1)
    result = {"threads": torch.get_num_threads()}
    for dtype in [args.dtype] if args.dtype else ["float16", "float32"]:
        translator = open_model(args.model, dtype=dtype, device=pick_device(None)).translator
        translator.translate_ids(sentences[:16])
        start = time.process_time()
        for text in sentences:
            translator.translate_ids([text])
        alone = (time.process_time() - start) / len(sentences)
        start = time.process_time()
        for i in range(0, len(sentences), 16):
            translator.translate_ids(sentences[i : i + 16])
        batched = (time.process_time() - start) / len(sentences)
        result[dtype] = {"one_by_one_cpu_ms": round(1000 * alone, 2), "batch16_cpu_ms": round(1000 * batched, 2)}
    return result


def measure_sessions(args, sentences, n, rounds=2):
    """The server's RSS growth over `n` new page sessions (each translating one sentence with the page's event, as a
    browser does, and keeping its translation), then over `n` API calls (each a new session), `rounds` times: the
    first round also pays for what a fresh server grows into once (its threads, its allocator's pools), the next ones
    for the sessions alone."""
    with running_app(args.app_dir, args.model, 16, args.threads, args.dtype, args.startup_timeout) as (url, pid):
        names = {d.get("api_name") for d in httpx.get(url + "config", timeout=30).json()["dependencies"]}
        fn_index = page_event(url, "page_translate" if "page_translate" in names else "translate")
        page, api, start = [], [], time.monotonic()
        with httpx.Client() as client:
            for i in range(20):  # warm up: the first sessions, the model's first calls
                page_call(client, url, fn_index, [sentences[i % len(sentences)], *GREEDY], uuid.uuid4().hex)
            time.sleep(1)
            for _ in range(rounds):
                before = rss_mb(pid)
                for i in range(n):
                    page_call(client, url, fn_index, [sentences[i % len(sentences)], *GREEDY], uuid.uuid4().hex)
                time.sleep(1)
                middle = rss_mb(pid)
                for i in range(n):
                    call(client, url, "translate", [sentences[i % len(sentences)], *GREEDY])
                time.sleep(6)  # an API call's session is forgotten 5 s after it
                page.append(round(middle - before, 1))
                api.append(round(rss_mb(pid) - middle, 1))
    return {
        "sessions": n,
        "page_sessions_mb": page,
        "api_calls_mb": api,
        "growth_mb": page[0],
        "seconds": round(time.monotonic() - start, 1),
    }


def main(argv=None):
    started = time.perf_counter()
    args = parse_args(argv)
    chosen = select_sentences(args.data, args.sentences + args.warmup, 6, 15)
    warmup, sentences = chosen[: args.warmup], chosen[args.warmup :]
    print(
        f"app {args.app_dir}; model {args.model}; {len(sentences)} sentences of 6-15 words from {args.data}; "
        f"app threads: {args.threads or 'default'}; dtype: {args.dtype or 'the app default'}"
    )
    model = args.model
    result = {
        "benchmark": "app_throughput",
        "app_dir": args.app_dir,
        "model": str(model),
        "threads": args.threads,
        "dtype": args.dtype,
        "sentences": len(sentences),
        "modes": {},
    }
    with tempfile.TemporaryDirectory() as copy:
        if Path(model).is_dir():  # one copy for every app of the run: a model replaced meanwhile does not mix in
            args.model = shutil.copytree(model, Path(copy) / "model")
        result["alone"] = model_alone(args, sentences[:64])
        print(f"the model alone, CPU per sentence: {result['alone']}")
        answers = {}
        runs = [(mode, size, False) for mode, size in MODES if mode in args.modes]
        runs += [("ceiling", 16, True)] if args.ceiling else []
        for mode, batch_size, null_model in runs:
            print(
                f"{mode} (BATCH_SIZE={batch_size}{', a model that costs nothing' if null_model else ''}): "
                "starting app.py ...",
                flush=True,
            )
            rows, answers[mode], idle, memory = measure_mode(args, batch_size, sentences, warmup, null_model)
            result["modes"][mode] = {
                "batch_size": batch_size,
                "idle_server_cpu_ms_per_s": idle,
                "resident_mb": memory,
                "rows": rows,
            }
        if args.sessions:
            print(f"sessions: {args.sessions} page sessions, then {args.sessions} API calls, twice ...", flush=True)
            result["sessions"] = measure_sessions(args, sentences, args.sessions)
            print(f"  {result['sessions']}")
    for mode, by_n in answers.items():
        if mode == "ceiling":
            continue
        for row in result["modes"][mode]["rows"]:
            row["identical"] = sum(a == b for a, b in zip(by_n[row["clients"]], by_n[1]))
        ones = result["modes"][mode]["rows"][0]["sentences_per_s"]
        for row in result["modes"][mode]["rows"]:
            row["speedup_vs_one_client"] = round(row["sentences_per_s"] / ones, 2)
    if {"batched", "unbatched"} <= answers.keys():
        result["single_calls_alike"] = sum(a == b for a, b in zip(answers["batched"][1], answers["unbatched"][1]))
    print()
    table = []
    for mode, measured in result["modes"].items():
        for row in measured["rows"]:
            table.append(
                [
                    mode,
                    str(row["clients"]),
                    f"{row['sentences_per_s']:.1f}",
                    f"{row.get('speedup_vs_one_client', 0):.2f}x",
                    f"{row['server_cpu_ms_per_request']:.1f}",
                    f"{row['client_cpu_ms_per_request']:.1f}",
                    f"{row['latency_p50_ms']:.0f}",
                    f"{row.get('identical', '-')}/{len(sentences)}" if mode != "ceiling" else "-",
                ]
            )
    print_table(
        [
            "mode",
            "clients",
            "sent/s",
            "vs 1 client",
            "server CPU ms/req",
            "client CPU ms/req",
            "p50 ms",
            "= single call",
        ],
        table,
        text_columns=2,
    )
    goals = {}
    if "batched" in result["modes"]:
        top = result["modes"]["batched"]["rows"][-1]
        goals = {
            "clients": top["clients"],
            "server_cpu_ms_per_request": top["server_cpu_ms_per_request"],
            "cpu_met": top["server_cpu_ms_per_request"] <= GOAL_CPU_MS,
            "speedup_vs_one_client": top["speedup_vs_one_client"],
            "speedup_met": top["speedup_vs_one_client"] >= GOAL_SPEEDUP,
            "identical_met": top["identical"] == len(sentences),
        }
        if "unbatched" in result["modes"]:
            unbatched = result["modes"]["unbatched"]["rows"][-1]
            goals["speedup_vs_unbatched"] = round(top["sentences_per_s"] / unbatched["sentences_per_s"], 2)
        print(
            f"\nat {top['clients']} clients, batched: {top['server_cpu_ms_per_request']:.1f} ms server CPU per "
            f"request (goal <= {GOAL_CPU_MS:.0f}: {'met' if goals['cpu_met'] else 'NOT met'}), "
            f"{top['speedup_vs_one_client']:.2f}x one client (goal >= {GOAL_SPEEDUP:.0f}x: "
            f"{'met' if goals['speedup_met'] else 'NOT met'}), {top['identical']}/{len(sentences)} identical"
        )
    if "sessions" in result:
        measured = result["sessions"]
        growth = measured["growth_mb"] * GOAL_SESSIONS / max(args.sessions, 1)
        goals["sessions_mb_per_500"] = round(growth, 1)
        goals["sessions_met"] = growth <= GOAL_SESSIONS_MB
        print(
            f"memory: {measured['growth_mb']:.1f} MB for {args.sessions} new page sessions ({growth:.1f} MB per "
            f"{GOAL_SESSIONS}; goal <= {GOAL_SESSIONS_MB:.0f} MB: {'met' if goals['sessions_met'] else 'NOT met'}); "
            f"each round: page sessions {measured['page_sessions_mb']} MB, as many API calls "
            f"{measured['api_calls_mb']} MB"
        )
    result["goals"] = goals
    result["wall_seconds"] = round(time.perf_counter() - started, 1)
    print_json(result, save_as=args.save)


if __name__ == "__main__":
    main()
