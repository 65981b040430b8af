"""Grow a trained model deeper without changing what it computes, to go on training it with more layers.

    python -m training.recipes.deepen --model assets/model --encoder-layers 8 --out runs/deep8
    python -m training.train --config deep --init-from runs/deep8 --train ... --out runs/deep8-part1

The new encoder layers go on top of the old ones, below the encoder's final LayerNorm, and their two output
projections (the attention's `w_o` and the feed-forward network's `w_2`, weights and biases) start at zero. In a
pre-norm layer each sublayer adds its output to the residual stream, `x + sublayer(norm(x))`, so a layer that adds
zero twice is the identity: the grown model translates exactly as the one it grew from. Training then moves the
zeroed projections first (their gradient is not zero, since their inputs are not) and the rest of each new layer
after them, from the old model's knowledge instead of from nothing: with one GPU session's minutes, a model trained
from scratch does not catch up with the shipped model's 154M target tokens. (Growing a trained stack is Gong et al.,
2019, "Efficient Training of BERT by Progressively Stacking"; zero-initialised residual branches, Zhang et al.,
2019, "Fixup Initialization".)

The encoder, because it runs once a sentence and a decoder layer once a token: `python -m bench.model_shapes
--shape n_encoder_layers=8` times the grown shape. A post-norm model cannot grow so, since its LayerNorm after the
residual sum changes `x` even when the sublayer adds zero. The grown model keeps the old one's tokenizer, metrics
history and training snapshots; its training record says how it grew.
"""

import argparse
from dataclasses import replace
from pathlib import Path

import torch

from modeldir.directory import open_model, save_remade_model
from modeldir.loading import DTYPES
from transformer.model import Transformer

from ..cli import check_writable, command_line, positive_int, run_cli

ZEROED = ("self_attention.w_o", "feed_forward.w_2")  # the outputs each new layer adds to the residual stream


def deepen(model, encoder_layers, seed=0):
    """A new Transformer with `encoder_layers` encoder layers: the old layers first, with every weight of `model`,
    then new ones that compute the identity (their other weights initialised as a new model's, seeded)."""
    cfg = model.cfg
    if not cfg.norm_first:
        raise ValueError("only a pre-norm model (norm_first) can grow by identity layers")
    if encoder_layers <= cfg.n_encoder_layers:
        raise ValueError(f"--encoder-layers {encoder_layers}: the model already has {cfg.n_encoder_layers}")
    torch.manual_seed(seed)
    grown = Transformer(replace(cfg, n_encoder_layers=encoder_layers))
    missing, unexpected = grown.load_state_dict(model.state_dict(), strict=False)
    assert not unexpected and all(name.startswith("encoder.layers.") for name in missing)
    with torch.no_grad():
        for layer in grown.encoder.layers[cfg.n_encoder_layers :]:
            for name in ZEROED:
                projection = layer.get_submodule(name)
                projection.weight.zero_()
                projection.bias.zero_()
    return grown


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m training.recipes.deepen",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--model", required=True, help="the model directory to grow")
    p.add_argument("--encoder-layers", type=positive_int, required=True, help="encoder layers of the grown model")
    p.add_argument("--out", required=True, help="directory of the grown model")
    p.add_argument(
        "--export-dtype",
        choices=DTYPES,
        default="float16",
        help="precision of the written weights (default float16, as the trainer exports them: a model it "
        "exported keeps its weights exactly)",
    )
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    check_writable(args.out, "--out")
    base = open_model(args.model, dtype="float32", device="cpu")
    old = base.translator.model
    model = deepen(old, args.encoder_layers)
    grown = {
        "encoder_layers": [old.cfg.n_encoder_layers, args.encoder_layers],
        "command": command_line("training.recipes.deepen", argv),
    }
    out = Path(args.out)
    save_remade_model(base, model, base.translator.tokenizer, out, DTYPES[args.export_dtype], {"grown": grown})
    print(
        f"grown from {old.cfg.n_encoder_layers} to {args.encoder_layers} encoder layers "
        f"({old.num_parameters():,} -> {model.num_parameters():,} parameters) into {out}"
    )


if __name__ == "__main__":
    run_cli(main)
