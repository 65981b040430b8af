"""The payload of one translation (webapp/payload.py), from which the page draws every view: its maps are the
inspection's within the rounding of one byte per weight, its candidates, beam and diagnostics are the library's, it is
plain JSON of a bounded size, and each payload has an id of its own."""

import json

import numpy as np
import pytest

from interpretability import embedding_norms, inspect
from interpretability.diagnostics import head_diagnostics
from transformer import Sampling
from webapp.payload import LEVELS, dequantized, packed, translation_payload

SENTENCE = "I see the cat and we love the dog."


@pytest.fixture(scope="module")
def inspection(translator):
    return inspect(translator, SENTENCE)


def test_maps_travel_within_half_a_level_of_the_models(translator, inspection):
    payload = json.loads(json.dumps(translation_payload(translator, inspection, "greedy")))  # as the page gets it
    for kind, maps in [
        ("encoder", inspection.encoder_attention),
        ("decoder", inspection.decoder_attention),
        ("cross", inspection.cross_attention),
    ]:
        shipped = dequantized(payload["attention"][kind])
        assert shipped.shape == maps.shape
        assert np.abs(shipped - maps).max() <= 0.5 / LEVELS + 1e-9


def test_packing_keeps_the_extremes_and_reads_nan_as_zero():
    maps = np.array([[[[0.0, 1.0], [np.nan, 0.5]]]])
    assert dequantized(packed(maps)).tolist() == [[[[0.0, 1.0], [0.0, 128 / 255]]]]


def test_tokens_candidates_diagnostics_and_norms_are_the_librarys(translator, inspection):
    payload = translation_payload(translator, inspection, "greedy")
    assert payload["source_tokens"] == inspection.source_tokens
    assert payload["output_tokens"] == inspection.target_tokens[1:] + ["</s>"]
    assert [[token for token, _ in step] for step in payload["candidates"]] == [
        [token for token, _ in step] for step in inspection.top_candidates
    ]
    stats = head_diagnostics(inspection)["cross"]
    assert np.allclose(np.array(payload["diagnostics"]["cross"]["entropy"], dtype=float), stats.entropy, atol=1e-4)
    assert payload["diagnostics"]["cross"]["labels"] == stats.labels
    assert payload["diagnostics"]["decoder"]["alignment"][0][0] is None  # NaN: the statistic does not apply
    embedding, position = embedding_norms(translator, inspection.source_tokens)
    assert np.allclose(payload["norms"]["embedding"], embedding, atol=1e-3)
    assert np.allclose(payload["norms"]["position"], position, atol=1e-3)
    assert payload["beam"] is None and payload["sampled_from"] is None


def test_beam_search_and_sampling_join_the_payload(translator):
    beam = translation_payload(translator, inspect(translator, SENTENCE, beam=3), "beam search (3 beams)")
    assert beam["beam"]["beam"] == 3 and beam["beam"]["winner"]["text"] == beam["translation"]
    assert all(len(step["live"]) <= 3 for step in beam["beam"]["steps"])
    sampled = translation_payload(translator, inspect(translator, SENTENCE, sampling=Sampling(1.5, 3, 7)), "sampling")
    assert sampled["sampling"] == {"temperature": 1.5, "top_k": 3, "seed": 7}
    assert all(len(step) <= 3 for step in sampled["sampled_from"])


def test_each_payload_has_a_new_id(translator, inspection):
    ids = [translation_payload(translator, inspection, "greedy")["id"] for _ in range(3)]
    assert ids[0] < ids[1] < ids[2]


def test_a_long_sentence_stays_small(translator):
    """One byte per weight: three kinds of maps of a 40-token sentence in well under 150 kB of JSON (the tiny test
    model has few layers; bench/app_latency.py reports the size for the shipped model)."""
    text = " ".join(["the cat sees the dog"] * 8)
    inspection = inspect(translator, text)
    size = len(json.dumps(translation_payload(translator, inspection, "greedy")))
    numbers = sum(
        m.size for m in (inspection.encoder_attention, inspection.decoder_attention, inspection.cross_attention)
    )
    assert len(inspection.source_tokens) >= 40
    assert size < 1.5 * numbers + 20_000  # a byte per weight is 4/3 characters of base64


def test_the_maps_numbers_are_the_recorded_ones(translator, inspection):
    from interpretability.internals import TEMPERATURES, firing_share, output_distribution, write_ratios

    shipped = json.loads(json.dumps(translation_payload(translator, inspection, "greedy")))["map"]
    internals = inspection.internals
    for name in ("encoder", "decoder"):
        stack = internals.stack(name)
        assert np.allclose(
            shipped[name]["scaled"], np.linalg.norm(stack.embedding, axis=-1) * internals.scale, atol=1e-3
        )
        assert np.allclose(shipped[name]["stream"], np.linalg.norm(stack.stream, axis=-1), atol=1e-3)
        assert np.allclose(shipped[name]["ratios"], write_ratios(stack), atol=1e-4)
        assert np.allclose(shipped[name]["norm_std"], stack.norm_inputs.std(-1), atol=1e-4)
        assert np.allclose(shipped[name]["firing"], firing_share(stack), atol=1e-4)
    ids, logits, rest = output_distribution(internals.logits)
    output = shipped["output"]
    assert output["tokens"] == [[translator.tokenizer.id_to_token(i) for i in row] for row in ids.tolist()]
    travelled = {key: np.array(output[key], dtype=np.float64) for key in ("logits", "rest")}  # null: NaN
    for key, values in (("logits", logits), ("rest", rest)):  # a token a decoding rule forbade travels as null
        assert np.allclose(np.nan_to_num(travelled[key], nan=-np.inf), values, atol=1e-4)
    assert output["temperatures"] == list(TEMPERATURES) and shipped["tied"] is translator.model.cfg.tie_embeddings
    assert [step[0] for step in output["tokens"]][:-1] == inspection.target_tokens[1:]  # greedy: the top logit
