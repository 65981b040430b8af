"""The HTTP API: what scripts call (gradio_client, or REST at /gradio_api/call/NAME), apart from the page's own
events, which are private (`events.make_private`). Each endpoint checks its arguments at the door and says what is
wrong with one in a gr.Error naming it and its range, and keeps nothing once it has answered.

- `/translate`: the translation only, none of the page's work (no teacher-forced pass for the attention maps, no HTML,
  no session state). It equals the page's translation of the same text and settings.
- `/inspect`: the translation with its tokens, every attention map and each step's candidates, as JSON.
- `/sample`, `/ablate`: sampling, and heads switched off.

Light work (one hypothesis of a short text) and heavy work (beam search, long texts, heads off, /inspect) go by the
lanes of `served.ServedModel`. Each endpoint has its own Gradio concurrency group, sized so that heavy
requests waiting for their turn never fill the light ones' (`register`).

Sessions (`lighter_sessions`): Gradio 6 opens a session for every API call made without one (each REST call) and,
for every new session, builds the configuration of every component of the page (5 ms of CPU, 200 kB kept), and at
every event that of each component it reads or writes, with its value, used only for deep links, which this app has
not; it never forgets a session (up to 10,000), and keeps a closed page's state for an hour whatever its
time_to_live. Here a configuration is built only if asked for (a deep link would show the components' first values),
an API call's session is forgotten seconds after it ends, and any session idle for `state_ttl` goes with its state.
"""

import copy
import datetime
import math
import numbers
import time

import gradio as gr

from inputs.checks import MAX_SEED, MAX_TEMPERATURE, MIN_TEMPERATURE, check_whole_number
from interpretability import input_report
from interpretability.inspection import MAX_CANDIDATES
from transformer import Sampling
from transformer.model import head_grid

from .payload import candidates, input_json, rounded
from .tabs.heads import parse_head_name
from .translation import MAX_BEAM, decoding_label, one_line

DECODINGS = ("greedy", "beam", "sampling")
API_SESSION_IDLE_S = 5  # an API call's session is forgotten this long after its last call (it holds nothing)


# --- Arguments -------------------------------------------------------------------------------------------------------


def _shown(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def text_argument(text, name="text"):
    """`text` as the page reads it (its lines as one: `translation.one_line`); a gr.Error unless it is a string."""
    if not isinstance(text, str):
        raise gr.Error(f"{name} must be a string, got {type(text).__name__} {_shown(text)}")
    return one_line(text)[0]


def whole_argument(name, value, low, high):
    """`value` as an int (a float with no fraction counts: 4.0 is 4); a gr.Error naming `name` and low..high
    otherwise (NaN, infinity, a fraction, a bool, a string, out of range)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    try:
        check_whole_number(name, value, low, high)
    except ValueError as e:
        raise gr.Error(str(e)) from e
    return value


def number_argument(name, value, low, high):
    """`value` as a float; a gr.Error naming `name` and low..high unless it is a finite number in that range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not low <= value <= high:
        raise gr.Error(f"{name} must be a number in {low:g}..{high:g}, got {_shown(value)}")
    return float(value)


def decoding_arguments(served, decoding="greedy", beam=4, temperature=1.0, top_k=0, seed=0):
    """(beam width, Sampling or None) of the page's decoding settings, each checked (only those the decoding uses,
    as on the page); a gr.Error naming the first one wrong."""
    if decoding not in DECODINGS:
        raise gr.Error(f"decoding must be one of {', '.join(map(repr, DECODINGS))}, got {_shown(decoding)}")
    if decoding == "sampling":
        return 1, sampling_argument(temperature, top_k, seed, served.cfg.vocab_size)
    return (whole_argument("beam", beam, 1, MAX_BEAM) if decoding == "beam" else 1), None


def sampling_argument(temperature, top_k, seed, vocab_size):
    """A Sampling of checked arguments (top_k up to the vocabulary's size: more would keep them all too)."""
    return Sampling(number_argument("temperature", temperature, MIN_TEMPERATURE, MAX_TEMPERATURE),
                    whole_argument("top_k", top_k, 0, vocab_size), whole_argument("seed", seed, 0, MAX_SEED))


def heads_argument(served, heads):
    """(kind, 0-based layer, 0-based head) of each head name, duplicates once; a gr.Error unless `heads` is a list of
    this model's head names."""
    grid = head_grid(served.cfg)
    n_heads = sum(layers * heads_per_layer for layers, heads_per_layer in grid.values())
    if not isinstance(heads, (list, tuple)) or not all(isinstance(name, str) for name in heads):
        raise gr.Error(f"heads must be a list of head names such as ['cross L2 H3', 'encoder L1 H1'], got "
                       f"{_shown(heads)}")
    names = list(dict.fromkeys(name.strip() for name in heads))
    if len(names) > n_heads:
        raise gr.Error(f"heads: this model has {n_heads} heads, got {len(names)} names")
    try:
        return [parse_head_name(name, grid) for name in names]
    except ValueError as e:
        raise gr.Error(f"heads: {e}") from e


# --- Endpoints -------------------------------------------------------------------------------------------------------


def translate(served, text: str, decoding: str = "greedy", beam: int = 4, temperature: float = 1.0, top_k: int = 0,
              seed: int = 0, request: gr.Request = None) -> str:
    """English -> Italian, the translation only (the page's translation of the same text and settings). `decoding`:
    "greedy", "beam" (with `beam`, the width, 1-8) or "sampling" (with `temperature` 0.01-100, `top_k` (0: all
    tokens) and `seed`: the same seed gives the same translation)."""
    _answered_without_state(request)
    text = text_argument(text)
    beam, sampling = decoding_arguments(served, decoding, beam, temperature, top_k, seed)
    if not text.strip():
        return ""
    return served.translate(text, beam, sampling)


def sample(served, text: str, temperature: float = 1.0, top_k: int = 0, seed: int = 0,
           request: gr.Request = None) -> str:
    """English -> Italian by sampling: each token drawn from the model's distribution at `temperature` (0.01-100)
    among the `top_k` most probable (0: all); the same seed gives the same translation."""
    _answered_without_state(request)
    text = text_argument(text)
    sampling = sampling_argument(temperature, top_k, seed, served.cfg.vocab_size)
    if not text.strip():
        return ""
    return served.translate(text, 1, sampling)


def ablate(served, text: str, heads: list[str], beam: int = 1, request: gr.Request = None) -> str:
    """English -> Italian with the attention heads `heads` switched off (their output zeroed before W_O), each named
    "<kind> L<layer> H<head>", kind encoder, decoder or cross, e.g. ["cross L2 H3", "encoder L1 H1"]; `beam`: the
    beam width, 1-8 (1: greedy)."""
    _answered_without_state(request)
    text = text_argument(text)
    chosen = heads_argument(served, heads)
    beam = whole_argument("beam", beam, 1, MAX_BEAM)
    if not text.strip():
        return ""
    return served.translate(text, beam, None, chosen)


def inspect(served, text: str, decoding: str = "greedy", beam: int = 4, temperature: float = 1.0, top_k: int = 0,
            seed: int = 0, candidates: int = 5, request: gr.Request = None) -> dict:
    """The translation and what the model saw and produced for it, as JSON: the English and Italian tokens
    (`target_tokens`: "<s>" then the tokens written), every attention map (`attention`: encoder, decoder and cross,
    each layers x heads x queries x keys, rows adding up to 1, rounded to 4 decimals), the `candidates` most probable
    next tokens at each step ([token, probability]; 1-100) and what of the input the model may not read well
    (`input`). Decoding settings as for /translate."""
    _answered_without_state(request)
    text = text_argument(text)
    beam, sampling = decoding_arguments(served, decoding, beam, temperature, top_k, seed)
    candidates = whole_argument("candidates", candidates, 1, MAX_CANDIDATES)
    if not text.strip():
        raise gr.Error("text is empty: there is nothing to inspect")
    return served.heavy(lambda: inspection_json(served.inspect_alone(text, beam, sampling, candidates), beam, sampling))


def inspection_json(inspection, beam=1, sampling=None):
    """An `Inspection` as plain JSON (see `inspect`)."""
    answer = {
        "translation": inspection.translation,
        "decoding": decoding_label(beam, sampling),
        "source_tokens": inspection.source_tokens,
        "target_tokens": inspection.target_tokens,
        "attention": {"encoder": rounded(inspection.encoder_attention),
                      "decoder": rounded(inspection.decoder_attention),
                      "cross": rounded(inspection.cross_attention)},
        "candidates": candidates(inspection.top_candidates),
        "input": input_json(input_report(inspection)),
    }
    if sampling is not None:
        answer["sampled_from"] = candidates(inspection.tempered_candidates)
    return answer


ENDPOINTS = {"translate": translate, "inspect": inspect, "sample": sample, "ablate": ablate}
HEAVY_ENDPOINTS = ("inspect", "sample", "ablate")


def register(served):
    """The API's endpoints, each with its concurrency group: /translate (light and heavy work alike: its group has
    room for every heavy request waiting in the lane beside a full batch of light ones, so that greedy requests never
    queue behind heavy ones) and the heavy endpoints /inspect, /sample, /ablate (a group of their own). The lanes
    bound the work done at once; the groups bound the threads that wait for them."""
    groups = {"translate": dict(concurrency_id="api-translate", concurrency_limit=4 * served.batch_size)}
    heavy = dict(concurrency_id="api-heavy", concurrency_limit=served.batch_size)
    for name, fn in ENDPOINTS.items():
        gr.api(served.bind(fn), api_name=name, **groups.get(name, heavy))


# --- Sessions --------------------------------------------------------------------------------------------------------


def _answered_without_state(request):
    """Mark the session of this API call as one that holds nothing, to be forgotten once idle (`lighter_sessions`)."""
    if request is not None and request.session_hash:
        _api_sessions[request.session_hash] = time.monotonic()


_api_sessions = {}  # session hash of an API call -> when it was last seen


class _ConfigsOnDemand(dict):
    """A session's `config_values` (each component's configuration, for deep links), built when first asked for:
    Gradio reads it whole only to make a deep link, and entry by entry (building what is missing) otherwise."""

    def __init__(self, blocks_config, page_blocks):
        super().__init__()
        self._blocks_config, self._page_blocks = blocks_config, page_blocks  # the page's, shared

    def _complete(self):
        for key, block in self._blocks_config.blocks.items():
            if key in self._page_blocks and not super().__contains__(key):
                super().__setitem__(key, self._blocks_config.config_for_block(key, [], block))

    def items(self):
        self._complete()
        return super().items()

    def values(self):
        self._complete()
        return super().values()

    def __iter__(self):
        self._complete()
        return super().__iter__()

    def __len__(self):
        self._complete()
        return super().__len__()


def lighter_sessions(state_ttl):
    """Make Gradio's sessions light (see the module's docstring): configurations built on demand, every session's
    state kept `state_ttl` seconds at most, closed or not, and every session forgotten once idle that long (an API
    call's after API_SESSION_IDLE_S). Returns False, changing nothing, if this Gradio's sessions are not laid out as
    expected (a session built both ways must hold the same attributes)."""
    from gradio import state_holder

    SessionState, StateHolder = state_holder.SessionState, state_holder.StateHolder
    if getattr(SessionState, "lighter", False):
        SessionState.state_ttl = state_ttl
        return True

    def __init__(self, blocks):
        self.blocks_config = copy.copy(blocks.default_config)
        self.config_values = _ConfigsOnDemand(self.blocks_config, blocks.blocks)
        self.state_data = {}
        self._state_ttl = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = SessionState.state_ttl  # Gradio's: an hour, whatever the State's time_to_live

    def __setitem__(self, key, value):  # Gradio's, but a component's configuration is built when asked for
        block = self.blocks_config.blocks.get(key)
        if isinstance(block, gr.State):
            self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
            self.state_data[key] = value
        else:
            self.blocks_config.blocks[key] = value
        dict.pop(self.config_values, key, None)

    def _update_config(self, key):
        dict.pop(self.config_values, key, None)  # built again, from the block as it now is, when asked for

    def _update_value_in_config(self, key, value):
        """Gradio records each value a component receives, for deep links only: not kept here."""

    with gr.Blocks() as probe:
        gr.Textbox()
    expected = set(vars(SessionState(probe)))
    lighter = {"__init__": __init__, "__setitem__": __setitem__, "_update_config": _update_config,
               "_update_value_in_config": _update_value_in_config}
    originals = {name: getattr(SessionState, name) for name in lighter}
    for name, method in lighter.items():
        setattr(SessionState, name, method)
    SessionState.state_ttl = state_ttl
    try:
        if set(vars(SessionState(probe))) != expected:
            raise TypeError(f"gradio.state_holder.SessionState holds {sorted(expected)}")
    except Exception:
        for name, method in originals.items():
            setattr(SessionState, name, method)
        return False
    SessionState.lighter = True
    expire = StateHolder.delete_all_expired_state  # Gradio's lifespan task calls it every second

    def delete_all_expired_state(self):
        expire(self)
        forget_idle_sessions(self, SessionState.state_ttl)

    StateHolder.delete_all_expired_state = delete_all_expired_state
    return True


def keep_states_at_most(demo, seconds):
    """Every gr.State of `demo` expires `seconds` after it is set, or sooner if it said so (the page's Inspection
    said an hour: a long sentence's maps are megabytes, kept for every visitor of the last hour)."""
    for block in demo.blocks.values():
        if isinstance(block, gr.State):
            block.time_to_live = min(block.time_to_live or math.inf, seconds)


def forget_idle_sessions(holder, state_ttl, now=None):
    """Forget (drop from Gradio's `holder`) the sessions of API calls idle API_SESSION_IDLE_S and holding no state,
    and every session idle `state_ttl` seconds (all its states older than that: expired). Returns how many."""
    now = time.monotonic() if now is None else now
    wall = time.time()
    forgotten = 0
    with holder.lock:
        for session, last_seen in list(_api_sessions.items()):
            if now - last_seen >= API_SESSION_IDLE_S:
                del _api_sessions[session]
                state = holder.session_data.get(session)
                if state is not None and not state.state_data:
                    forgotten += _forget(holder, session)
        for session, used in list(holder.time_last_used.items()):
            if wall - used.timestamp() >= state_ttl:
                forgotten += _forget(holder, session)
    return forgotten


def _forget(holder, session):
    holder.session_data.pop(session, None)
    holder.time_last_used.pop(session, None)
    return 1
