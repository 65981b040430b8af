"""Score a model directory on a TSV test set with sacreBLEU and chrF (batched decoding).

    python -m training.evaluate --model assets/model --data data/en-it/test-tatoeba.tsv [--beam 4]
    python -m training.evaluate --model assets/model --data data/en-it/test-tatoeba.tsv --limit 2000 --variants
    python -m training.evaluate --model assets/model --data data/en-it/test-tatoeba.tsv --by-length
    python -m training.evaluate --model runs/x/model --data data/en-it/dev.tsv --compare assets/model

`--variants` also scores the English as people type it: lower-cased without final punctuation, and in capitals
(the Italian references unchanged). `--by-length` also scores the pairs by English length (1-5, 6-10, 11-20, 21+
words). `--loss` also computes the model's teacher-forced cross-entropy per reference token (no label smoothing):
the same loss on training pairs and on dev pairs says how far the model has learnt its training data by heart. The
last line printed is one JSON object: bleu, chrf, n, beam, seconds, the variant and length scores, and the loss;
where an English sentence occurs in more than one pair (Tatoeba's several translations of it), also
`multi_reference`: each sentence scored once against all its references, so that one sentence's 18 pairs do not
weigh 18 times.
`--compare OTHER` translates the set with another model too and says whether the two differ by more than the set's
own sampling could make them: sacreBLEU's paired bootstrap resampling (Koehn, 2004), on BLEU and chrF.
`--record NAME` stores every score in the model's metrics.json as records with data NAME and the command that
produced them (the multi-reference one as subset "each sentence once"). `--dtype float16` runs the model as the app
does; batched decoding is faster in float32 on CPUs without float16 arithmetic, one sentence at a time
(`--batch-size 1`) in float16.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import sacrebleu
import torch
import torch.nn.functional as F
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest
from tqdm import tqdm

from modeldir.card import write_model_card
from modeldir.directory import open_model
from modeldir.files import (
    EACH_SENTENCE_ONCE,
    METRICS,
    Score,
    add_score,
    decoding_name,
    read_metrics,
    write_metrics,
)
from modeldir.loading import DTYPES
from transformer.tokenizer import PAD_ID, encode_batch

from .cli import check_writable, command_line, non_negative_int, positive_int, run_cli
from .data import load_pairs, retype, teacher_forced_batch

# The ways of typing `--variants` scores; "capitals, as typed" turns the translator's sentence-casing off
# (`Translator.unshout`), to show what the model alone makes of words spelled in capitals.
VARIANTS = ("lower-cased, no final punctuation", "capitals", "capitals, as typed")
LENGTH_BUCKETS = ((1, 5), (6, 10), (11, 20), (21, None))  # English words, inclusive


def translate_all(translator, sources, beam=1, batch_size=256, progress=True, desc="decoding"):
    """The translation of each of `sources`, in order. Each distinct sentence is decoded once: Tatoeba gives one
    English sentence several translations, as as many pairs (dev.tsv's 2,001 pairs hold 864 English sentences)."""
    distinct = list(dict.fromkeys(sources))
    translations = []
    chunks = range(0, len(distinct), batch_size)
    for i in tqdm(chunks, desc=f"{desc} (beam {beam})", unit="batch", disable=not progress, leave=False):
        translations += translator.translate(distinct[i : i + batch_size], beam=beam)
    by_source = dict(zip(distinct, translations))
    return [by_source[src] for src in sources]


def corpus_scores(hypotheses, references):
    return {
        "bleu": round(sacrebleu.corpus_bleu(hypotheses, [references]).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(hypotheses, [references]).score, 2),
        "n": len(references),
    }


def multi_reference_scores(pairs, hypotheses):
    """BLEU and chrF with each English sentence counted once, against all its references -> dict (n: sentences).
    Scored pair by pair, a sentence with 12 references weighs 12 times, and one changed word in its translation
    moves dev BLEU by a third of a point; scored this way, any of its references may match."""
    grouped = {}
    for (src, tgt), hyp in zip(pairs, hypotheses):
        grouped.setdefault(src, (hyp, []))[1].append(tgt)
    sentences = [hyp for hyp, _ in grouped.values()]
    streams = max(len(refs) for _, refs in grouped.values())
    columns = [[refs[i] if i < len(refs) else None for _, refs in grouped.values()] for i in range(streams)]
    return {
        "bleu": round(sacrebleu.corpus_bleu(sentences, columns).score, 2),
        "chrf": round(sacrebleu.corpus_chrf(sentences, columns).score, 2),
        "n": len(grouped),
    }


def score(translator, pairs, beam=1, batch_size=256, progress=True):
    """Translate the English side of `pairs` and score against the Italian side -> dict."""
    start = time.time()
    hypotheses = translate_all(translator, [src for src, _ in pairs], beam, batch_size, progress)
    return {
        **corpus_scores(hypotheses, [tgt for _, tgt in pairs]),
        "beam": beam,
        "seconds": round(time.time() - start, 1),
        "hypotheses": hypotheses,
    }


@torch.inference_mode()
def reference_losses(translator, pairs, batch_size=256, progress=False):
    """Each pair's teacher-forced cross-entropy (nats, no label smoothing) summed over its Italian reference tokens,
    EOS included, and its number of tokens -> [(loss, tokens)] in the order of `pairs`. The model is fed the
    reference; references longer than the model takes are cut. Pairs go through in order of length, so a batch
    holds little padding."""
    model, tokenizer = translator.model, translator.tokenizer
    sources = [ids[: translator.max_source_tokens] for ids in encode_batch(tokenizer, [src for src, _ in pairs])]
    targets = [ids[: model.cfg.max_len - 1] for ids in encode_batch(tokenizer, [tgt for _, tgt in pairs])]
    order = sorted(range(len(pairs)), key=lambda i: (len(targets[i]), len(sources[i])))
    out = [None] * len(pairs)
    chunks = range(0, len(order), batch_size)
    for i in tqdm(chunks, desc="reference loss", unit="batch", disable=not progress, leave=False):
        rows = order[i : i + batch_size]
        batch = teacher_forced_batch([sources[r] for r in rows], [targets[r] for r in rows])
        src, tgt_in, tgt_out = (ids.to(translator.device) for ids in batch)  # (B, S), (B, T), (B, T)
        logits = model(src, tgt_in).float()  # (B, T, V)
        token_loss = F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=PAD_ID, reduction="none")  # (B, T)
        for r, loss, tokens in zip(rows, token_loss.sum(1).tolist(), (tgt_out != PAD_ID).sum(1).tolist()):
            out[r] = (loss, tokens)
    return out


def reference_loss(translator, pairs, batch_size=256):
    """Mean cross-entropy (nats) of each Italian reference token of `pairs` (`reference_losses`)."""
    losses = reference_losses(translator, pairs, batch_size)
    return round(sum(loss for loss, _ in losses) / sum(tokens for _, tokens in losses), 4)


def paired_bootstrap(hypotheses, other_hypotheses, references, resamples=1000):
    """Whether two models' translations of one set differ by more than chance: sacreBLEU's paired bootstrap
    resampling (Koehn, 2004; its fixed seed), which scores both on the same resampled sets of sentences ->
    {"bleu"|"chrf": {"difference": this - other, "p_value", "ci95": half-width of this model's 95% interval}}. A
    difference with a p-value above 0.05 is one that another sample of as many sentences could turn around."""
    metrics = {"BLEU": BLEU(), "chrF2": CHRF()}
    test = PairedTest(
        [("other", other_hypotheses), ("this", hypotheses)], metrics, [references], test_type="bs", n_samples=resamples
    )
    _, results = test()
    out = {}
    for name, key in (("BLEU", "bleu"), ("chrF2", "chrf")):
        other, this = results[name]
        out[key] = {
            "difference": round(this.score - other.score, 2),
            "p_value": round(float(this.p_value), 4),
            "ci95": round(float(this.ci), 2),
        }
    return out


def pairs_to_score(path, limit=None):
    """The first `limit` pairs (all, without a limit) of a TSV file; malformed lines are skipped, and said so."""
    pairs, skipped = load_pairs(path)
    if skipped:
        print(f"skipped {skipped} malformed lines in {path}", file=sys.stderr)
    return pairs[:limit] if limit else pairs


def typed_as(variant, text):
    """The English of `text` as the `--variants` variant types it."""
    return retype(text, "lower, no final punctuation" if variant.startswith("lower") else "capitals")


def length_bucket_name(low, high):
    return f"{low}-{high} words" if high else f"{low}+ words"


def scores_by_length(pairs, hypotheses):
    """{bucket name: scores} of the pairs whose English has that many words (empty buckets left out)."""
    out = {}
    for low, high in LENGTH_BUCKETS:
        idx = [i for i, (src, _) in enumerate(pairs) if low <= len(src.split()) <= (high or len(src.split()))]
        if idx:
            out[length_bucket_name(low, high)] = corpus_scores([hypotheses[i] for i in idx], [pairs[i][1] for i in idx])
    return out


def record(model_dir, records):
    """Add score records to the model's metrics.json (same data/decoding/precision/variant/subset replaced), and
    rewrite its model card (README.md) with them."""
    path = Path(model_dir) / METRICS
    metrics = read_metrics(path)
    for rec in records:
        add_score(metrics, rec)
    write_metrics(path, metrics)
    write_model_card(model_dir)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m training.evaluate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", required=True, help="model directory (model.safetensors, config.json, tokenizer.json)"
    )
    parser.add_argument("--data", required=True, help="TSV file of English<TAB>Italian pairs")
    parser.add_argument("--beam", type=positive_int, default=1, help="beam width (1 = greedy)")
    parser.add_argument("--limit", type=positive_int, help="score only the first N pairs")
    parser.add_argument("--batch-size", type=positive_int, default=256)
    parser.add_argument("--dtype", choices=DTYPES, default="float32", help="precision the model runs in")
    parser.add_argument("--threads", type=positive_int, help="torch CPU threads (default: torch's)")
    parser.add_argument(
        "--variants", action="store_true", help="also score lower-cased/unpunctuated and capitals input"
    )
    parser.add_argument("--by-length", action="store_true", help="also score by English length (words)")
    parser.add_argument("--loss", action="store_true", help="also the teacher-forced loss per reference token")
    parser.add_argument(
        "--compare",
        metavar="OTHER_MODEL",
        help="also translate with OTHER_MODEL and test the difference (paired bootstrap)",
    )
    parser.add_argument("--record", metavar="NAME", help="store the scores in the model's metrics.json as data NAME")
    parser.add_argument("--show", type=non_negative_int, default=3, help="print this many example translations")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    directory = open_model(args.model, dtype=args.dtype)
    # The other model opened before any decoding: a wrong --compare is said at once, not after the first run.
    other = open_model(args.compare, dtype=args.dtype).translator if args.compare else None
    if args.record:
        check_writable(directory.path, "--record")
    translator = directory.translator
    pairs = pairs_to_score(args.data, args.limit)
    result = score(translator, pairs, beam=args.beam, batch_size=args.batch_size)
    for (src, ref), hyp in list(zip(pairs, result["hypotheses"]))[: args.show]:
        print(f"EN  {src}\nREF {ref}\nOUT {hyp}\n")
    command = command_line("training.evaluate", argv)
    common = dict(
        data=args.record or Path(args.data).stem,
        decoding=decoding_name(args.beam),
        precision=args.dtype,
        command=command,
    )
    records = [Score(**common, **{k: result[k] for k in ("bleu", "chrf", "n", "seconds")})]
    summary = {k: result[k] for k in ("bleu", "chrf", "n", "beam", "seconds")}
    summary.update(data=str(args.data), dtype=args.dtype)
    repeated = len({src for src, _ in pairs}) < len(pairs)
    if repeated:
        summary["multi_reference"] = multi_reference_scores(pairs, result["hypotheses"])
        records.append(Score(**common, **summary["multi_reference"], subset=EACH_SENTENCE_ONCE))
    if args.variants:
        summary["variants"] = {}
        for variant in VARIANTS:
            translator.unshout = not variant.endswith("as typed")
            hyps = translate_all(
                translator, [typed_as(variant, src) for src, _ in pairs], args.beam, args.batch_size, desc=variant
            )
            scores = corpus_scores(hyps, [tgt for _, tgt in pairs])
            summary["variants"][variant] = scores
            records.append(Score(**common, **scores, variant=variant))
    if args.by_length:
        summary["by_length"] = scores_by_length(pairs, result["hypotheses"])
        records += [Score(**common, **scores, subset=name) for name, scores in summary["by_length"].items()]
    if args.loss:
        summary["loss"] = reference_loss(translator, pairs, args.batch_size)
    if other:
        other_hypotheses = translate_all(other, [src for src, _ in pairs], args.beam, args.batch_size, desc="other")
        references = [tgt for _, tgt in pairs]
        summary["compare"] = {
            "model": str(args.compare),
            **corpus_scores(other_hypotheses, references),
            **({"multi_reference": multi_reference_scores(pairs, other_hypotheses)} if repeated else {}),
            "paired_bootstrap": paired_bootstrap(result["hypotheses"], other_hypotheses, references),
        }
    if args.record:
        record(directory.path, records)
    print(json.dumps(summary))


if __name__ == "__main__":
    run_cli(main)
