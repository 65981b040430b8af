"""Whether heavy work starves light work: how long a short greedy translation takes while many API clients run a mixed
load of short greedy, long greedy, beam search of 8, sampling and heads switched off.

    python -m bench.mixed_load                       # 32 clients for 60 s
    python -m bench.mixed_load --clients 10 --seconds 10   # a smoke run
    python -m bench.mixed_load --app-dir /path/to/an/older/checkout

Starts `python app.py` (of `--app-dir`, default this checkout) on a free loopback port with the model of `--model`,
then `--clients` light HTTP clients (httpx, Gradio's REST routes) each send one kind of request after another, for
`--seconds` (and at most `--max-requests` each), the kinds dealt in turn: short greedy (/translate, sentences of 6-15
words of test-tatoeba.tsv), long greedy (/translate, news sentences of 40+ tokens of dev-news.tsv, or test sentences
joined), beam 8 (/translate), sampling (/sample) and ablation (/ablate, two heads off). Every kind's latency (p50, p95,
max), answers and errors (what the server said); the server's CPU. Goal: short greedy p50 <= 2 s with 32 clients for
60 s. The last line of the output is a JSON summary.
"""

import argparse
import shutil
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import httpx

from bench.app_throughput import CallError, call, cpu_seconds, running_app
from bench.common import DATA_DIR, ROOT, default_path, percentile, print_json, print_table
from bench.decode_latency import find_model_dir, select_sentences
from training.data import read_tsv

GOAL_P50_S = 2.0
KINDS = ("short greedy", "long greedy", "beam 8", "sampling", "ablation")


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.mixed_load", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", help="model directory (default: assets/model, else runs/cpu/model)")
    p.add_argument("--data", default=default_path(DATA_DIR / "test-tatoeba.tsv"), help="short sentences (TSV)")
    p.add_argument("--long-data", default=default_path(DATA_DIR / "dev-news.tsv"), help="long sentences (TSV)")
    p.add_argument("--app-dir", default=str(ROOT), help="the checkout whose app.py is served (default: this one)")
    p.add_argument("--clients", type=int, default=32, help="concurrent clients, the kinds dealt in turn")
    p.add_argument("--seconds", type=float, default=60, help="how long the clients send")
    p.add_argument("--max-requests", type=int, default=2000, help="the most requests one client sends")
    p.add_argument("--threads", type=int, default=0, help="torch threads of the app (0: its default)")
    p.add_argument("--dtype", help="MODEL_DTYPE of the app (default: the app's)")
    p.add_argument("--startup-timeout", type=float, default=300)
    args = p.parse_args(argv)
    args.model = find_model_dir(args.model)
    if args.data is None or args.model is None:
        p.error("--data and --model are required here")
    return args


def long_sentences(args, short, n=50, min_words=40):
    """News sentences of at least `min_words` words, else short ones joined to that length."""
    if args.long_data:
        pairs, _ = read_tsv(args.long_data)
        found = [en for en, _ in pairs if len(en.split()) >= min_words][:n]
        if found:
            return found
    return [" ".join(short[i : i + 6]) for i in range(0, 6 * n, 6)]


def request_for(kind, i, short, long):
    """(endpoint, data) of the i-th request of a kind."""
    text = short[i % len(short)]
    if kind == "short greedy":
        return "translate", [text, "greedy", 4, 1.0, 0, 0]
    if kind == "long greedy":
        return "translate", [long[i % len(long)], "greedy", 4, 1.0, 0, 0]
    if kind == "beam 8":
        return "translate", [text, "beam", 8, 1.0, 0, 0]
    if kind == "sampling":
        return "sample", [text, 0.8, 0, i]
    return "ablate", [text, ["cross L1 H1", "encoder L1 H2"], 1]


def main(argv=None):
    started = time.perf_counter()
    args = parse_args(argv)
    short = select_sentences(args.data, 200, 6, 15)
    long = long_sentences(args, short)
    kinds = [KINDS[k % len(KINDS)] for k in range(args.clients)]
    print(
        f"app {args.app_dir}; model {args.model}; {args.clients} clients for {args.seconds:g} s: "
        + ", ".join(f"{kinds.count(k)} {k}" for k in KINDS)
    )
    latencies, errors, lock = defaultdict(list), defaultdict(list), threading.Lock()
    with tempfile.TemporaryDirectory() as copy:
        model = shutil.copytree(args.model, Path(copy) / "model") if Path(args.model).is_dir() else args.model
        with running_app(args.app_dir, model, 16, args.threads, args.dtype, args.startup_timeout) as (url, pid):
            with httpx.Client() as warm:
                for kind in KINDS:
                    call(warm, url, *request_for(kind, 0, short, long))
            stop = time.monotonic() + args.seconds

            def client(k):
                with httpx.Client() as http:
                    for i in range(args.max_requests):
                        if time.monotonic() >= stop:
                            return
                        start = time.perf_counter()
                        try:
                            call(http, url, *request_for(kinds[k], k + i * args.clients, short, long))
                            with lock:
                                latencies[kinds[k]].append(time.perf_counter() - start)
                        except (CallError, httpx.HTTPError) as e:
                            with lock:
                                errors[kinds[k]].append(str(e)[:200])

            cpu_before, wall_before = cpu_seconds(pid), time.perf_counter()
            threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - wall_before
            server_cpu = cpu_seconds(pid) - cpu_before
    rows = {}
    for kind in KINDS:
        seconds = latencies[kind]
        rows[kind] = {
            "clients": kinds.count(kind),
            "answers": len(seconds),
            "errors": len(errors[kind]),
            "p50_s": round(percentile(seconds, 50), 3) if seconds else None,
            "p95_s": round(percentile(seconds, 95), 3) if seconds else None,
            "max_s": round(max(seconds), 3) if seconds else None,
            "first_error": errors[kind][0] if errors[kind] else None,
        }
    print()
    print_table(
        ["kind", "clients", "answers", "errors", "p50 s", "p95 s", "max s"],
        [
            [
                k,
                str(r["clients"]),
                str(r["answers"]),
                str(r["errors"]),
                f"{r['p50_s']}",
                f"{r['p95_s']}",
                f"{r['max_s']}",
            ]
            for k, r in rows.items()
        ],
    )
    for kind, row in rows.items():
        if row["first_error"]:
            print(f"{kind}, first error: {row['first_error']}")
    p50 = rows["short greedy"]["p50_s"]
    met = p50 is not None and p50 <= GOAL_P50_S
    answered = sum(r["answers"] for r in rows.values())
    print(
        f"\nshort greedy p50 {p50} s under the mixed load (goal <= {GOAL_P50_S:g} s: {'met' if met else 'NOT met'}); "
        f"server CPU {server_cpu:.1f} s over {wall:.1f} s ({100 * server_cpu / wall:.0f}% of one core), "
        f"{answered} answers"
    )
    print_json(
        {
            "benchmark": "mixed_load",
            "app_dir": args.app_dir,
            "model": str(args.model),
            "clients": args.clients,
            "seconds": args.seconds,
            "threads": args.threads,
            "dtype": args.dtype,
            "kinds": rows,
            "server_cpu_s": round(server_cpu, 1),
            "wall_s": round(wall, 1),
            "goal_p50_s": GOAL_P50_S,
            "goal_met": met,
            "wall_seconds": round(time.perf_counter() - started, 1),
        }
    )


if __name__ == "__main__":
    main()
