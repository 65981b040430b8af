"""How much BLEU each attention head is worth: every head of every kind switched off alone
(`interpretability.ablation`), the first pairs of a TSV file translated again, and the corpus BLEU compared with the
intact model's.

    python -m training.head_importance --model assets/model --data data/en-it/dev.tsv [--limit 500]

Writes head_importance.json into the model directory (the app reads it with `modeldir.files.read_head_importance`):
the data's name, the number of pairs, the decoding, the intact BLEU, this command, and per kind a table of BLEU
drops, one list of heads per layer. A positive drop means the translation is worse without the head; one near 0
(either sign) that the model does not need it on this data. Each head costs one translation of the pairs, so the shipped
model's 40 heads cost 41 translations of them.
"""

import argparse
import json
from pathlib import Path

import torch
from tqdm import tqdm

from interpretability.ablation import ablated, every_head
from interpretability.kinds import head_grid
from modeldir.directory import open_model
from modeldir.files import HEAD_IMPORTANCE, decoding_name, write_atomic

from .cli import check_writable, command_line, positive_int, run_cli
from .evaluate import pairs_to_score, score


def head_importance(translator, pairs, beam=1, batch_size=256, progress=True):
    """-> (intact BLEU, {kind: [[BLEU drop per head] per layer]}) of `translator` on `pairs`."""

    def bleu(heads_off):
        return score(ablated(translator, heads_off), pairs, beam, batch_size, progress=False)["bleu"]

    intact = bleu([])
    drop = {
        kind: [[0.0] * n_heads for _ in range(n_layers)]
        for kind, (n_layers, n_heads) in head_grid(translator.model.cfg).items()
    }
    heads = every_head(translator.model.cfg)
    for kind, layer, head in tqdm(heads, desc="heads switched off", unit="head", disable=not progress):
        drop[kind][layer][head] = round(intact - bleu([(kind, layer, head)]), 2)
    return intact, drop


def format_table(drop):
    """The drops as text: per kind, a row per layer and a column per head, numbered from 1 as in the app."""
    lines = []
    for kind, table in drop.items():
        lines.append(f"{kind:<9}" + "".join(f"{f'head {h}':>9}" for h in range(1, len(table[0]) + 1)))
        lines += [
            f"{f'layer {layer}':<9}" + "".join(f"{x:>+9.2f}" for x in row) for layer, row in enumerate(table, start=1)
        ]
    return "\n".join(lines)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m training.head_importance",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", required=True, help="model directory; head_importance.json is written into it")
    parser.add_argument("--data", required=True, help="TSV file of English<TAB>Italian pairs")
    parser.add_argument("--limit", type=positive_int, default=500, help="use the first N pairs")
    parser.add_argument("--beam", type=positive_int, default=1, help="beam width (1 = greedy)")
    parser.add_argument("--threads", type=positive_int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--batch-size", type=positive_int, default=256)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    directory = open_model(args.model)
    check_writable(directory.path, "--model")
    translator = directory.translator
    pairs = pairs_to_score(args.data, args.limit)
    bleu, drop = head_importance(translator, pairs, args.beam, args.batch_size, progress=not args.no_progress)
    importance = {
        "data": Path(args.data).stem,
        "n": len(pairs),
        "decoding": decoding_name(args.beam),
        "bleu": bleu,
        "command": command_line("training.head_importance", argv),
        "drop": drop,
    }
    path = directory.path / HEAD_IMPORTANCE
    write_atomic(path, json.dumps(importance, indent=2) + "\n")
    print(f"BLEU {bleu} with every head, on {len(pairs)} pairs of {args.data}; BLEU lost with one head switched off:")
    print(format_table(drop))
    print(f"wrote {path}")


if __name__ == "__main__":
    run_cli(main)
