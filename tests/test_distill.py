"""`python -m training.recipes.distill`: the teacher's beam translations, one line per pair, resumed after a stop."""

import pytest

from helpers import toy_pairs, write_tsv
from training.data import read_tsv
from training.recipes.distill import distill, lines_done, main, tsv_line


def test_every_english_sentence_gets_the_teachers_beam_translation(translator, tmp_path):
    pairs = toy_pairs()[:20]
    out = tmp_path / "kd.tsv"
    assert distill(translator, pairs, out, beam=3, chunk=8, progress=False) == 20
    distilled, skipped = read_tsv(out)
    assert skipped == 0
    assert [src for src, _ in distilled] == [src for src, _ in pairs]
    assert [tgt for _, tgt in distilled] == translator.translate([src for src, _ in pairs], beam=3)


def test_a_stopped_run_goes_on_where_it_stopped_and_drops_a_half_written_line(translator, tmp_path):
    pairs = toy_pairs()[:20]
    whole = tmp_path / "whole.tsv"
    distill(translator, pairs, whole, beam=2, chunk=20, progress=False)
    out = tmp_path / "kd.tsv"
    assert distill(translator, pairs, out, beam=2, chunk=6, max_minutes=1e-9, progress=False) == 6  # one chunk
    with open(out, "a", encoding="utf-8") as f:
        f.write("half a li")  # killed while writing the next line
    assert lines_done(out) == 6 and out.read_text(encoding="utf-8").endswith("\n")
    assert distill(translator, pairs, out, beam=2, chunk=6, progress=False) == 20
    assert out.read_text(encoding="utf-8") == whole.read_text(encoding="utf-8")


def test_a_line_keeps_one_pair_whatever_the_sentence_holds():
    assert tsv_line("a\tb\n c", "d\r\ne") == "a b c\td e\n"


def test_an_output_longer_than_its_input_is_refused(translator, tmp_path):
    out = write_tsv(tmp_path / "kd.tsv", toy_pairs()[:5])
    with pytest.raises(ValueError, match="has 5 lines but the input only 3 pairs"):
        distill(translator, toy_pairs()[:3], out, progress=False)


def test_the_command_line_writes_the_file_and_refuses_to_overwrite_its_input(tiny_model_dir, tmp_path, capsys):
    data = write_tsv(tmp_path / "toy.tsv", toy_pairs()[:10])
    out = tmp_path / "kd" / "toy.tsv"
    main(["--model", str(tiny_model_dir), "--data", str(data), "--out", str(out), "--beam", "2", "--no-progress"])
    assert len(read_tsv(out)[0]) == 10
    assert "10 of 10 pairs translated (beam 2), complete" in capsys.readouterr().err
    with pytest.raises(ValueError, match="must not be one of the files it reads"):
        main(["--model", str(tiny_model_dir), "--data", str(data), "--out", str(data)])
