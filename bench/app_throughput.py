"""Sentences per second the web app serves to 1, 4 and 16 concurrent API clients, with concurrent requests decoded
together (`BATCH_SIZE=16`, the app's default) and each decoded alone (`BATCH_SIZE=1`), in one run; and whether
every answer equals the answer to a single call.

    python -m bench.app_throughput --threads 2
    python -m bench.app_throughput --sentences 8 --clients 1 4   # a smoke run

Each mode starts `python app.py` on a free port with the model of `--model` (default assets/model, else
runs/cpu/model) in the app's default device and precision, and `--threads` torch threads (OMP_NUM_THREADS; 0: the
app's default). It warms up, then for each client count, `--sentences` sentences (the first distinct English
sentences of 6-15 words of test-tatoeba.tsv) are translated through `/translate` (greedy) by that many
`gradio_client` clients at once, client k sending sentences k, k + n, k + 2n, ... one after another, each as soon as
its previous answer is back. Sentences per second: sentences / wall time from the first request to the last answer.
The clients run in this process, on the same cores as the app, as a Space's visitors do not: the numbers are for
comparing the two modes. Both modes serve one copy of the model directory, taken at the start (so a model replaced
meanwhile does not mix in). The reference answers are each mode's answers to one client: single calls, each
decoded alone. Goal on 2 CPU cores with the cpu-config model: at 16 clients, batched >= 3x the sentences per second
of unbatched, and every answer identical to the single call's. The last line of the output is a JSON summary.
"""

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from gradio_client import Client

from bench.common import DATA_DIR, ROOT, default_path, print_json, print_table
from bench.decode_latency import find_model_dir, select_sentences

GOAL_SPEEDUP = 3.0
MODES = (("unbatched", 1), ("batched", 16))  # name, BATCH_SIZE


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.app_throughput", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="model directory or Hub id (default: assets/model, else runs/cpu/model)")
    p.add_argument("--data", default=default_path(DATA_DIR / "test-tatoeba.tsv"), help="TSV with the sentences")
    p.add_argument("--sentences", type=int, default=160, help="sentences translated per client count and mode")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16], help="numbers of concurrent clients")
    p.add_argument("--warmup", type=int, default=8, help="untimed sentences per mode, once the app is up")
    p.add_argument("--threads", type=int, default=0, help="torch threads of the app (0: its default)")
    p.add_argument("--startup-timeout", type=float, default=300, help="seconds the app may take to start")
    args = p.parse_args(argv)
    args.model = find_model_dir(args.model)
    if args.data is None or args.model is None:
        p.error("--data and --model are required here (no test-tatoeba.tsv or shipped model found)")
    args.clients = sorted(set(args.clients) | {1})  # one client: the reference, single calls
    return args


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_app(args, batch_size):
    """The URL of `python app.py` serving args.model with BATCH_SIZE=batch_size, stopped (SIGTERM) afterwards."""
    port = free_port()
    env = {**os.environ, "MODEL_DIR": str(args.model), "BATCH_SIZE": str(batch_size), "GRADIO_SERVER_PORT": str(port),
           "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_ANALYTICS_ENABLED": "False"}
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    url = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryFile("w+") as log:
        app = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + args.startup_timeout
            while not answers(url):
                if app.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise SystemExit(f"app.py did not start (BATCH_SIZE={batch_size}):\n{log.read()[-3000:]}")
                time.sleep(0.5)
            yield url
        finally:
            app.terminate()
            app.wait(30)


def answers(url):
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(url + "config", timeout=5).status_code == 200
    return False


def serve(url, sentences, n_clients):
    """(seconds, Italian answers in the order of `sentences`) for `n_clients` clients sending them at once."""
    clients = [Client(url, verbose=False, analytics_enabled=False, httpx_kwargs={"timeout": 300})
               for _ in range(n_clients)]
    italian = [None] * len(sentences)

    def client_sends(k):
        for i in range(k, len(sentences), n_clients):
            italian[i] = clients[k].predict(sentences[i], api_name="/translate")[0]

    start = time.perf_counter()
    with ThreadPoolExecutor(n_clients) as pool:
        list(pool.map(client_sends, range(n_clients)))  # list(): raise what a client raised
    return time.perf_counter() - start, italian


def measure(args, sentences, warmup):
    """{(mode, clients): (sentences per second, answers)}, every mode's app started once."""
    results = {}
    for mode, batch_size in MODES:
        print(f"{mode} (BATCH_SIZE={batch_size}): starting app.py ...", flush=True)
        with running_app(args, batch_size) as url:
            serve(url, warmup, min(len(warmup), max(args.clients)))
            for n in args.clients:
                seconds, italian = serve(url, sentences, n)
                results[mode, n] = (len(sentences) / seconds, italian)
                print(f"  {n:>2} clients: {len(sentences) / seconds:7.1f} sentences/s", flush=True)
    return results


def main(argv=None):
    started = time.perf_counter()
    args = parse_args(argv)
    chosen = select_sentences(args.data, args.sentences + args.warmup, 6, 15)
    warmup, sentences = chosen[: args.warmup], chosen[args.warmup :]
    print(f"model {args.model}; {len(sentences)} sentences of 6-15 words from {args.data}; "
          f"app threads: {args.threads or 'default'}")
    model = args.model
    with tempfile.TemporaryDirectory() as copy:
        if Path(model).is_dir():
            args.model = shutil.copytree(model, Path(copy) / "model")
        results = measure(args, sentences, warmup)
    same = lambda mode, n: sum(a == b for a, b in zip(results[mode, n][1], results[mode, 1][1]))
    rows = []
    for n in args.clients:
        (unbatched, _), (batched, _) = results["unbatched", n], results["batched", n]
        rows.append({"clients": n, "unbatched_per_s": round(unbatched, 2), "batched_per_s": round(batched, 2),
                     "speedup": round(batched / unbatched, 2), "identical": same("batched", n),
                     "identical_unbatched": same("unbatched", n)})
    alike = sum(a == b for a, b in zip(results["unbatched", 1][1], results["batched", 1][1]))
    print(f"single calls, unbatched app against batched app: {alike}/{len(sentences)} identical")
    print()
    print_table(["clients", "unbatched sent/s", "batched sent/s", "speed-up", "batched = single call"],
                [[str(r["clients"]), f"{r['unbatched_per_s']:.1f}", f"{r['batched_per_s']:.1f}",
                  f"{r['speedup']:.2f}x", f"{r['identical']}/{len(sentences)}"] for r in rows])
    top = rows[-1]
    met = top["speedup"] >= GOAL_SPEEDUP and top["identical"] == len(sentences)
    print(f"\nat {top['clients']} clients: {top['speedup']:.2f}x, {top['identical']}/{len(sentences)} identical "
          f"(goal >= {GOAL_SPEEDUP:.0f}x, all identical: {'met' if met else 'NOT met'})")
    print_json({"benchmark": "app_throughput", "model": str(model), "threads": args.threads,
                "sentences": len(sentences), "single_calls_alike": alike, "rows": rows, "goal_speedup": GOAL_SPEEDUP,
                "goal_met": met, "wall_seconds": round(time.perf_counter() - started, 1)})


if __name__ == "__main__":
    main()
