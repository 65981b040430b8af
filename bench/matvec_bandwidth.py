"""Why one-sentence decoding waits on memory: the speed of matrix-vector products against how many weights they
touch, in float32 and float16.

    python -m bench.matvec_bandwidth --threads 1

A decoder step at batch 1 multiplies one vector by every decoder weight matrix and by the output projection:
for the cpu config 4.8M weights per step (3 decoder layers, 2.75M, cross-attention keys and values being cached;
the 8,000 x 256 output projection, 2.05M), 19.2 MB in float32. This script cycles `F.linear(x, W)` over distinct
256 x 256 matrices holding `--params` million weights in all, and prints the time per product and the weight bytes
read per second. Once the weights outgrow the processor's cache, the rate drops to what memory delivers; float16
weights halve the bytes, so the same products stay in cache longer and cost less beyond it. The last line is a JSON
summary.
"""

import argparse
import time

import torch
import torch.nn.functional as F

from bench.common import print_json, print_table, set_threads

SIZE = 256  # d_model of the cpu config


def time_products(n_matrices, dtype, products=3000):
    """Seconds per product, cycling over n_matrices distinct SIZE x SIZE matrices."""
    weights = [torch.randn(SIZE, SIZE).to(dtype) for _ in range(n_matrices)]
    x = torch.randn(1, SIZE).to(dtype)
    rounds = max(2, products // n_matrices)
    with torch.inference_mode():
        for w in weights:  # warm-up: first touch, kernel selection
            F.linear(x, w)
        start = time.perf_counter()
        for _ in range(rounds):
            for w in weights:
                F.linear(x, w)
    return (time.perf_counter() - start) / (rounds * n_matrices)


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench.matvec_bandwidth",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--params",
        type=float,
        nargs="+",
        default=[0.25, 1, 2, 4.8, 8, 16],
        help="millions of weights cycled over (4.8: one decoder step of the cpu config)",
    )
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    args = p.parse_args(argv)
    threads = set_threads(args.threads)
    print(f"{SIZE} x {SIZE} matrix-vector products, {threads} thread(s)")
    rows = []
    for millions in args.params:
        n_matrices = max(1, round(millions * 1e6 / SIZE**2))
        for dtype in (torch.float32, torch.float16):
            seconds = time_products(n_matrices, dtype)
            rows.append(
                {
                    "million_weights": millions,
                    "dtype": str(dtype).removeprefix("torch."),
                    "megabytes": round(n_matrices * SIZE**2 * dtype.itemsize / 1e6, 1),
                    "us_per_product": round(seconds * 1e6, 2),
                    "gb_per_s": round(SIZE**2 * dtype.itemsize / seconds / 1e9, 1),
                }
            )
    print_table(
        ["weights", "dtype", "MB", "us per product", "weights GB/s"],
        [
            [
                f"{r['million_weights']:g}M",
                r["dtype"],
                f"{r['megabytes']:g}",
                f"{r['us_per_product']:.1f}",
                f"{r['gb_per_s']:.1f}",
            ]
            for r in rows
        ],
        text_columns=2,
    )
    print_json({"benchmark": "matvec_bandwidth", "size": SIZE, "threads": threads, "rows": rows})


if __name__ == "__main__":
    main()
