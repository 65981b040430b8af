"""The app's start, as a Space's visitor waits for it after a restart: `python app.py` launched, seconds until its
page answers (GET /config), then until its first translation comes back; and the CPU seconds its processes (the
server and its decoding process) spent by then. Each of `--runs` starts is a fresh process; the median is reported.

    python -m bench.app_start [--model DIR] [--runs 3] [--save app_start]

The last line of the output is a JSON summary.
"""

import argparse
import statistics
import time

import httpx

from bench.app_throughput import GREEDY, call, cpu_seconds, running_app
from bench.common import ROOT, add_save_argument, print_json, print_table
from bench.decode_latency import find_model_dir

SENTENCE = "The cat sleeps on the sofa."


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.app_start", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", help="model directory (default: assets/model)")
    p.add_argument("--runs", type=int, default=3, help="how many times the app is started")
    add_save_argument(p)
    return p.parse_args(argv)


def one_start(model):
    """(seconds until the page answers, seconds until the first translation, CPU seconds by then) of one start."""
    start = time.perf_counter()
    with running_app(ROOT, model) as (url, pid):
        answered = time.perf_counter() - start
        with httpx.Client() as client:
            call(client, url, "translate", [SENTENCE, *GREEDY])
        translated = time.perf_counter() - start
        cpu = cpu_seconds(pid)
    return answered, translated, cpu


def main(argv=None):
    args = parse_args(argv)
    model = find_model_dir(args.model)
    if model is None:
        raise SystemExit("no model: pass --model DIR (assets/model is the shipped one)")
    runs = [one_start(model) for _ in range(args.runs)]
    medians = [round(statistics.median(column), 2) for column in zip(*runs)]
    print_table(
        ["", "page answers (s)", "first translation (s)", "CPU (s)"],
        [[f"run {i + 1}", *(f"{value:.2f}" for value in run)] for i, run in enumerate(runs)]
        + [["median", *(f"{value:.2f}" for value in medians)]],
    )
    result = dict(zip(("page_answers_s", "first_translation_s", "cpu_s"), medians))
    print_json({"model": model, "runs": args.runs, **result}, args.save)


if __name__ == "__main__":
    main()
