"""One payload per translation: everything the page's views of one sentence need, shipped with the translation so
that every click after it (kind, layer, head, step, measure...) is drawn in the browser with no round trip, as bertviz
ships its numbers once to the JavaScript that draws them (`webapp/views.js` reads it, each tab's script draws).

Attention weights are the bulk: (layers, heads, queries, keys) for three kinds. Each map travels as bytes (`packed`), a
weight w as round(255 w) (base64 of uint8, row-major): the colour scale has 256 steps anyway, every weight is within
1/510 of the model's, and a weight takes about one and a third bytes of JSON (`bench/app_latency.py` reports the
payload's size, bench/results/app_latency.json keeps it). Everything else is small and rounded to 4 decimals.
"""

import base64
import itertools

import numpy as np

from interpretability import embedding_norms, input_report
from interpretability.diagnostics import head_diagnostics
from interpretability.internals import STACKS, TEMPERATURES, firing_share, output_distribution, write_ratios

from .attention_kinds import ATTENTION_KINDS, attention_maps
from .tokens import output_tokens

LEVELS = 255  # a weight w travels as round(LEVELS * w), one byte
DECIMALS = 4
_ids = itertools.count(1)  # each payload's id: a view can tell a new translation from the one it shows


def quantized(values, scale, dtype):
    """Numbers as few bytes: {"shape", "scale", "type", "bytes"}, each value v as round(scale · v), clipped to the
    range of `dtype` (a numpy integer type: "uint8", "int16"), little-endian, row-major, base64; NaN as 0. The page
    reads it back with views.js's `dequantize`."""
    values = np.nan_to_num(np.asarray(values, dtype=np.float64))
    kind = np.iinfo(dtype)
    ints = np.clip(np.rint(values * scale), kind.min, kind.max).astype(np.dtype(dtype).newbyteorder("<"))
    return {
        "shape": list(values.shape),
        "scale": scale,
        "type": str(dtype),
        "bytes": base64.b64encode(ints.tobytes()).decode("ascii"),
    }


def exact(values):
    """Numbers as the model holds them, float32 ({"shape", "scale": 1, "type": "float32", "bytes"}, as `quantized`
    lays them out): for numbers the page computes with and shows to the last digit."""
    values = np.asarray(values, dtype=np.dtype("float32").newbyteorder("<"))
    return {
        "shape": list(values.shape),
        "scale": 1,
        "type": "float32",
        "bytes": base64.b64encode(values.tobytes()).decode("ascii"),
    }


def dequantized(packed_values):
    """The float array of `quantized` or `exact`."""
    dtype = np.dtype(packed_values["type"]).newbyteorder("<")
    ints = np.frombuffer(base64.b64decode(packed_values["bytes"]), dtype=dtype)
    return ints.reshape(packed_values["shape"]).astype(np.float64) / packed_values["scale"]


def packed(maps):
    """Attention maps (layers, heads, queries, keys) as one byte a weight: `quantized` at LEVELS, uint8."""
    return quantized(maps, LEVELS, "uint8")


def rounded(values):
    """Numbers (a number or an array of any shape) as JSON: rounded to DECIMALS (from float64: 0.1234, not
    0.12340000271), None where not a number (NaN: a statistic that does not apply)."""
    values = np.round(np.asarray(values, dtype=np.float64), DECIMALS)
    missing = ~np.isfinite(values)
    return (np.where(missing, None, values) if missing.any() else values).tolist()


def candidates(steps):
    """Per decoding step, [[token, probability], ...]."""
    return [[[token, round(float(p), DECIMALS)] for token, p in step] for step in steps]


def input_json(report):
    """An `interpretability.InputReport` as JSON: what of the input the model may not read well."""
    return {
        "tokens": report.tokens,
        "unreadable": report.unreadable,
        "long": report.long,
        "truncated": report.truncated,
    }


def hypothesis(h):
    return {
        "tokens": h.tokens,
        "text": h.text,
        "score": rounded(h.score),
        "normalised": None if h.normalised is None else rounded(h.normalised),
        "rank": h.rank,
    }


def beam_json(trace):
    """A `BeamTrace` as JSON: per step the hypotheses kept (`live`, best first) and those finished at it."""
    if trace is None:
        return None
    return {
        "beam": trace.beam,
        "alpha": trace.alpha,
        "winner": hypothesis(trace.winner),
        "steps": [
            {"live": [hypothesis(h) for h in step.live], "finished": [hypothesis(h) for h in step.finished]}
            for step in trace.steps
        ],
    }


def diagnostics_json(inspection):
    """Per kind, each head statistic as (layers, heads) numbers (None where it does not apply) and the labels."""
    return {
        kind: {name: (value if name == "labels" else rounded(value)) for name, value in vars(stats).items()}
        for kind, stats in head_diagnostics(inspection).items()
    }


def map_json(tokenizer, internals):
    """What the model map draws at once (`webapp/tabs/model_map.py`), from an `interpretability.Internals`: per stack
    (encoder, decoder), per token the length of its embedding row before and after ×√d_model and of its position's
    encoding; the length of the residual stream entering each sublayer and leaving the last (`stream`), each
    sublayer's write ÷ the stream it adds to (`ratios`) and the write's own length (`writes`); each norm's input mean
    and standard deviation (what it subtracts and divides by); the share of feed-forward units that fire. Per
    decoding step the output layer's top logits, the log-sum-exp of the others at each of `temperatures`, so the
    page's softmax is exact for the tokens it shows, and how many tokens decoding may write (`finite`); the layer
    norms' ε; and whether the output layer's weights are the embedding's."""
    ids, logits, rest = output_distribution(internals.logits)
    stacks = {}
    for name in STACKS:
        stack = internals.stack(name)
        lengths = lambda values: rounded(np.linalg.norm(values, axis=-1))  # noqa: E731
        stacks[name] = {
            "embedding": lengths(stack.embedding),
            "scaled": lengths(stack.embedding * internals.scale),
            "position": lengths(stack.position),
            "stream": lengths(stack.stream),
            "ratios": rounded(write_ratios(stack)),
            "writes": lengths(stack.writes),
            "norm_mean": rounded(stack.norm_inputs.mean(-1)),
            "norm_std": rounded(stack.norm_inputs.std(-1)),
            "firing": rounded(firing_share(stack)),
        }
    return {
        **stacks,
        "scale": round(internals.scale, DECIMALS),
        "tied": internals.tied,
        "eps": internals.eps,
        "output": {
            "tokens": [[tokenizer.id_to_token(i) for i in row] for row in ids.tolist()],
            "logits": rounded(logits),
            "rest": rounded(rest),
            "temperatures": list(TEMPERATURES),
            "finite": np.isfinite(internals.logits).sum(-1).tolist(),
        },
    }


def translation_payload(translator, inspection, decoding):
    """The payload of one translation (`inspection`, an `Inspection` of `translator`; `decoding`: its words, e.g.
    "greedy"). Fields: id, translation, decoding, source_tokens, target_tokens (decoder inputs: <s> then the output),
    output_tokens (what each step wrote, </s> last), kinds (title, and which tokens label rows and columns), attention
    (kind -> `packed` maps), candidates (per step, the most probable next tokens), sampled_from and sampling (when
    sampled), beam (`beam_json`, when beam search), diagnostics (`diagnostics_json`), input (`input_report`), norms
    (per English token, the size of its embedding and of its position's encoding), map (`map_json`)."""
    embedding, position = embedding_norms(translator, inspection.source_tokens)
    sampling = inspection.sampling
    return {
        "id": next(_ids),
        "translation": inspection.translation,
        "decoding": decoding,
        "source_tokens": inspection.source_tokens,
        "target_tokens": inspection.target_tokens,
        "output_tokens": output_tokens(inspection),
        "kinds": {
            kind: {"title": spec.title, "rows": spec.query_side, "columns": spec.key_side}
            for kind, spec in ATTENTION_KINDS.items()
        },
        "attention": {kind: packed(attention_maps(inspection, kind)[0]) for kind in ATTENTION_KINDS},
        "candidates": candidates(inspection.top_candidates),
        "sampled_from": candidates(inspection.tempered_candidates) if sampling else None,
        "sampling": None
        if sampling is None
        else {"temperature": sampling.temperature, "top_k": sampling.top_k, "seed": sampling.seed},
        "beam": beam_json(inspection.beam_trace),
        "diagnostics": diagnostics_json(inspection),
        "input": input_json(input_report(inspection)),
        "norms": {"embedding": rounded(embedding), "position": rounded(position)},
        "map": map_json(translator.tokenizer, inspection.internals),
    }


def decoding_label(beam, sampling=None):
    """Words for a decoding: greedy, beam search with its width, or sampling with its settings."""
    if sampling is not None:
        top_k = f", top-{sampling.top_k}" if sampling.top_k else ""
        return f"sampling (temperature {sampling.temperature:g}{top_k}, seed {sampling.seed})"
    return "greedy" if beam == 1 else f"beam search ({beam} beams)"


def request_json(text, beam, sampling):
    """What the page keeps of a translation's request (the payload's `request`): the sentence as translated and its
    decoding settings, which every experiment sends back in place of the box's (SHOWN_TRANSLATION) and the URL keeps."""
    return {
        "text": text,
        "decoding": "sampling" if sampling else "beam" if beam > 1 else "greedy",
        "beam": beam,
        "temperature": sampling.temperature if sampling else 1.0,
        "top_k": sampling.top_k if sampling else 0,
        "seed": sampling.seed if sampling else 0,
    }


def shown_payload(translator, inspection, text, beam, sampling):
    """The payload the views draw (`translation_payload`) with the request it was made with (`request_json`): what
    the translate event (`webapp.translation`) and a notebook's views (`webapp.notebook`) put in the store."""
    payload = translation_payload(translator, inspection, decoding_label(beam, sampling))
    payload["request"] = request_json(text, beam, sampling)
    return payload
