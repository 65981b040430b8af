"""Tokens as the page shows them, exactly as the tokenizer writes them ("▁" marks the start of a word): the tokens
the decoder wrote, its steps, and the HTML chips of the translation box, the step view and the heads tab."""

import html

from transformer.tokenizer import EOS, SPECIAL_TOKENS


def output_tokens(inspection):
    """The tokens the decoder wrote, EOS included."""
    return inspection.target_tokens[1:] + [EOS]


def decoding_steps(inspection):
    """Number of decoder steps: one per generated token plus the step that produced EOS."""
    return len(inspection.target_tokens)


def step_tokens(inspection, step):
    """(prefix the decoder sees, token it chose) at 1-based `step`."""
    targets = inspection.target_tokens
    return targets[:step], targets[step] if step < len(targets) else EOS


def token_chips(tokens, label, highlight=None, changed=()):
    """HTML chips for tokens (escaped: a token may be a piece of the user's input); special tokens are greyed, the
    token at index `highlight` is marked, and so are those at the indices `changed` (in another colour)."""
    chips = "".join(
        f'<span class="chip{" special" if t in SPECIAL_TOKENS else ""}{" chosen" if i == highlight else ""}'
        f'{" changed" if i in changed else ""}" title="position {i}">{html.escape(t)}</span>'
        for i, t in enumerate(tokens)
    )
    return f'<div class="chips"><span class="chips-label">{html.escape(label)}</span>{chips}</div>'
