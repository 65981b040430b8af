"""`python -m training.recipes.hardest`: the human pairs a model gets most wrong, ranked by its own loss."""

import pytest

from helpers import toy_pairs, write_tsv
from modeldir.directory import open_model
from training.data import read_tsv
from training.evaluate import reference_loss, reference_losses
from training.recipes.hardest import hardest, main


def mixed_pairs():
    """30 toy pairs the tiny model learnt, every third of the first 27 given another pair's Italian (a translation it
    would never write) -> (pairs, indices of the 9 mismatched ones)."""
    pairs = toy_pairs()[:30]
    mismatched = set(range(0, 27, 3))
    return [(src, pairs[(i + 7) % len(pairs)][1] if i in mismatched else tgt) for i, (src, tgt) in enumerate(pairs)], (
        mismatched
    )


def test_each_pairs_loss_stays_with_its_pair_and_adds_up_to_the_mean(tiny_model_dir):
    translator = open_model(tiny_model_dir).translator
    pairs, mismatched = mixed_pairs()
    losses = reference_losses(translator, pairs, batch_size=4)  # batches in length order, answers in input order
    per_token = [loss / tokens for loss, tokens in losses]
    assert min(per_token[i] for i in mismatched) > max(per_token[i] for i in range(len(pairs)) if i not in mismatched)
    assert [tokens for _, tokens in losses] == [
        len(translator.tokenizer.encode(tgt).ids) + 1 for _, tgt in pairs
    ]  # the reference and its EOS
    mean = sum(loss for loss, _ in losses) / sum(tokens for _, tokens in losses)
    assert reference_loss(translator, pairs, batch_size=7) == pytest.approx(mean, abs=1e-4)


def test_the_hardest_share_comes_after_the_skipped_share_ranked_by_loss_per_token():
    pairs = [(f"en {i}", f"it {i}") for i in range(10)]
    losses = [(1.0, 10), (9.0, 3), (4.0, 1), (2.0, 2), (8.0, 2), (0.5, 1), (6.0, 1), (3.0, 10), (7.0, 7), (5.0, 1)]
    # per token: 0.1, 3, 4, 1, 4.0, 0.5, 6, 0.3, 1, 5 -> ranked 6, 9, 2, 4, 1, ...
    assert hardest(pairs, losses, share=0.3) == [pairs[6], pairs[9], pairs[2]]
    assert hardest(pairs, losses, share=0.2, skip=0.1) == [pairs[9], pairs[2]]
    assert hardest(pairs, losses, share=1.0)[-1] == pairs[0]


def test_the_command_writes_the_mismatched_pairs_first(tiny_model_dir, tmp_path, capsys):
    pairs, mismatched = mixed_pairs()
    data = write_tsv(tmp_path / "human.tsv", pairs)
    out = tmp_path / "out" / "hard.tsv"
    main(["--model", str(tiny_model_dir), "--data", str(data), "--out", str(out), "--share", "0.3", "--skip", "0"])
    written, skipped = read_tsv(out)
    assert skipped == 0 and sorted(written) == sorted(pairs[i] for i in mismatched)
    assert "the 9 hardest of 30 pairs" in capsys.readouterr().err


@pytest.mark.parametrize("flags", [["--share", "0"], ["--share", "0.6", "--skip", "0.5"], ["--skip", "-1"]])
def test_shares_that_make_no_sense_are_refused(flags, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--model", "m", "--data", "d.tsv", "--out", "o.tsv", *flags])
    assert exit_info.value.code == 2
    assert "--s" in capsys.readouterr().err
