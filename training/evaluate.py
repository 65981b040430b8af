"""Score a model directory on a TSV test set with sacreBLEU and chrF (batched decoding).

    python -m training.evaluate --model assets/model --data ../shared/data/en-it/test-tatoeba.tsv [--beam 4]

The last line printed is one JSON object with at least bleu, chrf, n and seconds. `--record NAME` also stores
the result in the model's metrics.json under scores[NAME][greedy|beamN], with the command that produced it.
`--dtype float16` runs the model as the app does (scores recorded as e.g. "greedy, float16"); batched decoding is
faster in float32 on CPUs without float16 arithmetic, one sentence at a time (`--batch-size 1`) in float16.
"""

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import sacrebleu
import torch
from tqdm import tqdm

from transformer import Translator
from transformer.translator import DTYPES, METRICS

from .data import load_pairs


def score(translator, pairs, beam=1, batch_size=256, progress=True):
    """Translate the English side of `pairs` and score against the Italian side -> dict."""
    start = time.time()
    hypotheses = []
    chunks = range(0, len(pairs), batch_size)
    for i in tqdm(chunks, desc=f"decoding (beam {beam})", unit="batch", disable=not progress, leave=False):
        hypotheses += translator.translate([src for src, _ in pairs[i : i + batch_size]], beam=beam)
    references = [tgt for _, tgt in pairs]
    return {
        "bleu": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(hypotheses, [references]).score, 2),
        "n": len(pairs),
        "beam": beam,
        "seconds": round(time.time() - start, 1),
        "hypotheses": hypotheses,
    }


def record(model_dir, name, result, command, dtype="float32"):
    """Store `result` in metrics.json under scores[name][decoding], decoding being greedy or beamN, followed by
    the precision when it is not float32 (e.g. "greedy, float16": the app's)."""
    path = Path(model_dir) / METRICS
    metrics = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    key = "greedy" if result["beam"] == 1 else f"beam{result['beam']}"
    if dtype != "float32":
        key += f", {dtype}"
    entry = {k: result[k] for k in ("bleu", "chrf", "n", "seconds")}
    metrics.setdefault("scores", {}).setdefault(name, {})[key] = {**entry, "command": command}
    path.write_text(json.dumps(metrics, indent=2), encoding="utf-8")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="model directory (model.safetensors, config.json, tokenizer.json)")
    parser.add_argument("--data", required=True, help="TSV file of English<TAB>Italian pairs")
    parser.add_argument("--beam", type=int, default=1, help="beam size (1 = greedy)")
    parser.add_argument("--limit", type=int, default=0, help="score only the first N pairs")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--dtype", choices=DTYPES, default="float32", help="precision the model runs in")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = default)")
    parser.add_argument("--record", metavar="NAME", help="store the scores in the model's metrics.json as NAME")
    parser.add_argument("--show", type=int, default=3, help="print this many example translations")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    translator = Translator.load(args.model, dtype=args.dtype)
    pairs, skipped = load_pairs(args.data)
    if skipped:
        print(f"skipped {skipped} malformed lines in {args.data}", file=sys.stderr)
    if args.limit:
        pairs = pairs[: args.limit]
    result = score(translator, pairs, beam=args.beam, batch_size=args.batch_size)
    for (src, ref), hyp in list(zip(pairs, result["hypotheses"]))[: args.show]:
        print(f"EN  {src}\nREF {ref}\nOUT {hyp}\n")
    if args.record:
        command = "python -m training.evaluate " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
        record(args.model, args.record, result, command, args.dtype)
    summary = {k: result[k] for k in ("bleu", "chrf", "n", "beam", "seconds")}
    summary["data"] = str(args.data)
    summary["dtype"] = args.dtype
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
