"""The HTTP API: what scripts call (gradio_client, or REST at /gradio_api/call/NAME), apart from the page's own
events, which are private (`deploy.routes.make_private`). Each endpoint checks its arguments at the door and says
what is wrong with one in a gr.Error naming it and its range, and keeps nothing once it has answered.

- `/translate`: the translation only, none of the page's work (no teacher-forced pass for the attention maps, no HTML,
  no session state). It equals the page's translation of the same text and settings.
- `/inspect`: the translation with its tokens, every attention map and each step's candidates, as JSON.
- `/sample`, `/ablate`: sampling, and heads switched off.

Light work (one hypothesis of a short text) and heavy work (beam search, long texts, heads off, /inspect) go by the
lanes of `served.ServedModel`. Each endpoint has its own Gradio concurrency group, sized so that heavy
requests waiting for their turn never fill the light ones' (`register`).

Gradio opens a session for every API call made without one (each REST call); how many it keeps is bounded by
`launch(state_session_capacity=...)` (`deploy.harden`, MAX_SESSIONS), the oldest dropped first.
"""

import inspect as inspect_module

import gradio as gr

from deploy.admission import admitted
from deploy.routes import Refusal
from inputs.checks import echo
from inputs.request import one_line, parse_request, whole
from interpretability import input_report
from interpretability.inspection import MAX_CANDIDATES
from interpretability.kinds import head_grid

from . import translation
from .payload import candidates, input_json, rounded
from .tabs import heads, inside_head, steps
from .tabs.heads import parse_head_name
from .translation import decoding_label

# --- Arguments -------------------------------------------------------------------------------------------------------


def request_argument(served, text, decoding="greedy", beam=4, temperature=1.0, top_k=0, seed=0):
    """The `Request` of an endpoint's arguments (`inputs.request.parse_request`: only those its decoding uses are
    read); a gr.Error naming the first one wrong, with its range."""
    try:
        return parse_request(text, decoding, beam, temperature, top_k, seed, vocab_size=served.cfg.vocab_size)
    except ValueError as e:
        raise Refusal(str(e)) from e


def whole_argument(name, value, low, high):
    """`value` as an int (4.0 is 4); a gr.Error naming `name` and low..high otherwise."""
    try:
        return whole(name, value, low, high)
    except ValueError as e:
        raise Refusal(str(e)) from e


def heads_argument(served, heads):
    """(kind, 0-based layer, 0-based head) of each head name, duplicates once; a gr.Error unless `heads` is a list of
    this model's head names."""
    grid = head_grid(served.cfg)
    n_heads = sum(layers * heads_per_layer for layers, heads_per_layer in grid.values())
    if not isinstance(heads, (list, tuple)) or not all(isinstance(name, str) for name in heads):
        raise Refusal(f"heads must be a list of head names such as ['cross L2 H3', 'encoder L1 H1'], got {echo(heads)}")
    names = list(dict.fromkeys(name.strip() for name in heads))
    if len(names) > n_heads:
        raise Refusal(f"heads: this model has {n_heads} heads, got {len(names)} names")
    try:
        return [parse_head_name(name, grid) for name in names]
    except ValueError as e:
        raise Refusal(f"heads: {e}") from e


# --- Endpoints -------------------------------------------------------------------------------------------------------


def translate(
    served, text: str, decoding: str = "greedy", beam: int = 4, temperature: float = 1.0, top_k: int = 0, seed: int = 0
) -> str:
    """English -> Italian, the translation only (the page's translation of the same text and settings). `decoding`:
    "greedy", "beam" (with `beam`, the width, 1-8) or "sampling" (with `temperature` 0.01-100, `top_k` (0: all
    tokens) and `seed`: the same seed gives the same translation). A text longer than the model reads is translated
    from its beginning, as on the page; /inspect's `input.truncated` says whether it was cut."""
    request = request_argument(served, text, decoding, beam, temperature, top_k, seed)
    if not request.text.strip():
        return ""
    return served.translate(request.text, request.beam, request.sampling)


def sample(served, text: str, temperature: float = 1.0, top_k: int = 0, seed: int = 0) -> str:
    """English -> Italian by sampling: each token drawn from the model's distribution at `temperature` (0.01-100)
    among the `top_k` most probable (0: all); the same seed gives the same translation."""
    request = request_argument(served, text, "sampling", 1, temperature, top_k, seed)
    if not request.text.strip():
        return ""
    return served.translate(request.text, 1, request.sampling)


def ablate(served, text: str, heads: list[str], beam: int = 1) -> str:
    """English -> Italian with the attention heads `heads` switched off (their output zeroed before W_O), each named
    "<kind> L<layer> H<head>", kind encoder, decoder or cross, e.g. ["cross L2 H3", "encoder L1 H1"]; `beam`: the
    beam width, 1-8 (1: greedy)."""
    request = request_argument(served, text, "beam", beam)
    chosen = heads_argument(served, heads)
    if not request.text.strip():
        return ""
    return served.translate(request.text, request.beam, None, chosen)


def inspect(
    served,
    text: str,
    decoding: str = "greedy",
    beam: int = 4,
    temperature: float = 1.0,
    top_k: int = 0,
    seed: int = 0,
    candidates: int = 5,
) -> dict:
    """The translation and what the model saw and produced for it, as JSON: the English and Italian tokens
    (`target_tokens`: "<s>" then the tokens written), every attention map (`attention`: encoder, decoder and cross,
    each layers x heads x queries x keys, rows adding up to 1, rounded to 4 decimals), the `candidates` most probable
    next tokens at each step ([token, probability]; 1-100) and what of the input the model may not read well
    (`input`). Decoding settings as for /translate."""
    request = request_argument(served, text, decoding, beam, temperature, top_k, seed)
    candidates = whole_argument("candidates", candidates, 1, MAX_CANDIDATES)
    if not request.text.strip():
        raise Refusal("text is empty: there is nothing to inspect")
    beam, sampling = request.beam, request.sampling
    return served.heavy(
        lambda: inspection_json(served.inspect_alone(request.text, beam, sampling, candidates), beam, sampling)
    )


def inspection_json(inspection, beam=1, sampling=None):
    """An `Inspection` as plain JSON (see `inspect`)."""
    answer = {
        "translation": inspection.translation,
        "decoding": decoding_label(beam, sampling),
        "source_tokens": inspection.source_tokens,
        "target_tokens": inspection.target_tokens,
        "attention": {
            "encoder": rounded(inspection.encoder_attention),
            "decoder": rounded(inspection.decoder_attention),
            "cross": rounded(inspection.cross_attention),
        },
        "candidates": candidates(inspection.top_candidates),
        "input": input_json(input_report(inspection)),
    }
    if sampling is not None:
        answer["sampled_from"] = candidates(inspection.tempered_candidates)
    return answer


ENDPOINTS = {"translate": translate, "inspect": inspect, "sample": sample, "ablate": ablate}


def register(served):
    """The API's endpoints, each with its concurrency group and its `ticket` for the door (`endpoint_ticket`):
    /translate (light and heavy work alike: its group has room for every heavy request the lane holds, running or in
    line, beside a full batch of light ones, and heavy ones beyond that are refused at once, so that greedy requests
    never queue behind heavy ones: `served.ServedModel.concurrency`) and the heavy endpoints /inspect, /sample,
    /ablate (a group of their own). The lanes bound the work done at once; the groups bound the threads that wait for
    them."""
    groups = {"translate": dict(concurrency_id="api-translate", concurrency_limit=served.concurrency)}
    heavy = dict(concurrency_id="api-heavy", concurrency_limit=served.batch_size)
    for name, fn in ENDPOINTS.items():
        gr.api(
            admitted(served.bind(fn), served.lane, endpoint_ticket(served, name)),
            api_name=name,
            **groups.get(name, heavy),
        )


def endpoint_ticket(served, name):
    """Whether a call of the endpoint `name` with these arguments (in order) is heavy work (`ticketed`)."""

    def ticket(text, decoding="greedy", beam=4, *rest):
        if name != "translate":
            decoding, beam = "greedy", 1
        return ticketed(served, name, text, decoding, beam)

    return ticket


def admit_page_events(demo, served):
    """Each page event of `demo` whose handler may do heavy work gets the `ticket` the door asks
    (`deploy.admission`): whether its inputs ask for heavy work, by `ticketed`'s rules (a translation with a beam or
    of a long text; heads switched off and attribution always). Returns how many events it marked."""

    def as_translated(text, decoding="greedy", beam=4, *rest):
        return ticketed(served, "translate", text, decoding, beam)

    tickets = {
        translation.translate: as_translated,
        inside_head.head_numbers: as_translated,
        heads.switch_heads_off: lambda *inputs: True,
        steps.attribute: lambda *inputs: True,
    }
    marked = 0
    for fn in demo.fns.values():
        handler = getattr(inspect_module.unwrap(fn.fn), "__func__", None) if fn.fn else None
        if handler in tickets:
            fn.fn = admitted(fn.fn, served.lane, tickets[handler])
            marked += 1
    return marked


def ticketed(served, name, text, decoding="greedy", beam=4):
    """Whether a call of the endpoint `name` with these raw arguments is heavy work, let in at the door only with a
    place in the heavy lane: /inspect and /ablate always; /translate with a beam; /translate and /sample of a long
    text."""
    if name in ("inspect", "ablate"):
        return True
    if not isinstance(text, str):
        return False
    if name == "translate" and decoding == "beam" and beam != 1:
        return True
    # no token is 64 characters long: a text this long has more tokens than light work takes, uncounted
    return len(text) > 64 * served.light_tokens or not served.is_light(one_line(text)[0])
