"""Tokens as the page shows them, exactly as the tokenizer writes them ("▁" marks the start of a word): the tokens
the decoder wrote, and the HTML chips of the translation box and the heads tab (the step view draws its own, in the
page)."""

import html

from transformer.tokenizer import EOS, SPECIAL_TOKENS


def output_tokens(inspection):
    """The tokens the decoder wrote, EOS included."""
    return inspection.target_tokens[1:] + [EOS]


def token_chips(tokens, label, highlight=None, changed=(), seen=None):
    """HTML chips for tokens (escaped: a token may be a piece of the user's input); special tokens are greyed, the
    token at index `highlight` is marked, and so are those at the indices `changed` (in another colour). `seen`
    (`modeldir.seen.SeenWords`): each chip says how many training pairs held its word, and a word the model has
    rarely seen is marked."""
    chips = "".join(
        f'<span class="chip{" special" if t in SPECIAL_TOKENS else ""}{" chosen" if i == highlight else ""}'
        f'{" changed" if i in changed else ""}{" rare" if seen and seen.is_rare(i) else ""}" '
        f'title="position {i}{html.escape(seen.describe(i)) if seen else ""}">{html.escape(t)}</span>'
        for i, t in enumerate(tokens)
    )
    return f'<div class="chips"><span class="chips-label">{html.escape(label)}</span>{chips}</div>'
