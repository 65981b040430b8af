"""The model card of the page: architecture from the model's config, training and scores from its metrics.json
(read by `Translator.load`; the tables are `transformer.model_card`'s, which also writes the Hub's card), the
precision it runs in, and the model's own notes."""

from transformer.model_card import architecture_rows, scores_markdown, table, training_markdown

from .texts import CREDITS, SCORES_HELP


def architecture_markdown(translator):
    rows = architecture_rows(translator.model.cfg, translator.model.num_parameters())
    rows.append(("runs in", str(next(translator.model.parameters()).dtype).removeprefix("torch.")))
    return "\n".join(["### Architecture", *table(("part", "size"), rows)])


def model_card_markdown(translator):
    """Architecture, size, training and scores, read from the model's config and metrics.json."""
    scores = scores_markdown(translator.metrics)
    sections = [architecture_markdown(translator), training_markdown(translator.metrics),
                scores and f"{scores}\n\n{SCORES_HELP}"]
    return "\n\n".join(section for section in sections if section)


def about_markdown(translator):
    """The model's own notes (its directory's notes.md, when there is one), then the app's credits."""
    return "\n\n".join(text for text in (translator.notes.strip(), CREDITS) if text)
