"""A model directory served: written by `save_model_dir` and read back whole by `open_model`, its optional files
(metrics, notes, head importance, training history, training curve) read when they are sound and left out, with a
problem said, when they are not, and files rewritten atomically."""

import html
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from helpers import REPO
from modeldir.directory import open_model, save_model_dir
from modeldir.files import (
    HEAD_IMPORTANCE,
    LOSS_CURVE,
    METRICS,
    NOTES,
    REFERENCE_SNAPSHOTS,
    SNAPSHOTS,
    write_atomic,
    write_metrics,
)
from modeldir.loading import CONFIG, WEIGHTS, WEIGHTS_SHA256, ModelLoadError, weights_sha256


def test_fp32_export_round_trips_exactly_and_stores_tied_weights_once(translator, tmp_path):
    save_model_dir(translator.model, translator.tokenizer, tmp_path, dtype=torch.float32, metrics={"note": "x"})
    assert "output_projection.weight" not in load_file(str(tmp_path / "model.safetensors"))
    directory = open_model(tmp_path)
    loaded = directory.translator
    assert directory.metrics == {"note": "x", WEIGHTS_SHA256: weights_sha256(tmp_path)} and not directory.problems
    expected = translator.model.state_dict()
    for name, tensor in loaded.model.state_dict().items():
        assert torch.equal(tensor, expected[name]), name
    assert loaded.model.output_projection.weight.data_ptr() == loaded.model.src_embed.embedding.weight.data_ptr()


def test_a_flipped_byte_in_the_weights_is_refused_against_the_sha256_the_export_recorded(translator, tmp_path):
    save_model_dir(translator.model, translator.tokenizer, tmp_path, dtype=torch.float32, metrics={})
    data = bytearray((tmp_path / WEIGHTS).read_bytes())
    data[-5] ^= 0x01  # inside the last tensor: safetensors reads it without a complaint
    (tmp_path / WEIGHTS).write_bytes(bytes(data))
    with pytest.raises(ModelLoadError, match="sha256 differs from the one metrics.json records"):
        open_model(tmp_path)
    metrics = json.loads((tmp_path / METRICS).read_text(encoding="utf-8"))
    del metrics[WEIGHTS_SHA256]  # a directory exported before the hash was recorded is not checked
    write_metrics(tmp_path / METRICS, metrics)
    assert open_model(tmp_path).translator


def test_the_shipped_weights_are_those_their_metrics_record():
    from pathlib import Path

    shipped = Path(__file__).resolve().parent.parent / "assets" / "model"
    assert json.loads((shipped / METRICS).read_text(encoding="utf-8"))[WEIGHTS_SHA256] == weights_sha256(shipped)


def test_opening_a_model_leaves_torch_dynamo_unimported(tiny_model_dir):
    """Every process that serves or scores a model opens one (the app, its decoding process, each command-line
    tool): torch._dynamo, which a meta-device model's random init imports, would slow every one of those starts."""
    opened = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; from modeldir.directory import open_model; open_model({str(tiny_model_dir)!r});"
            " print('torch._dynamo' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert opened.stdout.strip() == "False"


def test_notes_are_read_from_the_model_directory(tiny_model_dir, tmp_path):
    assert open_model(tiny_model_dir).notes == ""
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    (model_dir / NOTES).write_text("### Good at\ncats, dogs.\n", encoding="utf-8")
    assert open_model(model_dir).notes == "### Good at\ncats, dogs.\n"


BROKEN_OPTIONAL = {
    METRICS: "{",
    HEAD_IMPORTANCE: "not json",
    SNAPSHOTS: "[]",
    LOSS_CURVE: "not an image",
}


@pytest.mark.parametrize("name", BROKEN_OPTIONAL)
def test_a_broken_optional_file_is_left_out_and_said(tiny_model_dir, tmp_path, name, caplog):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    (model_dir / name).write_text(BROKEN_OPTIONAL[name], encoding="utf-8")
    directory = open_model(model_dir)
    assert directory.translator.translate("I see the cat.") == "io vedo il gatto."
    assert len(directory.problems) == 1 and name in directory.problems[0]
    assert name in caplog.text
    field = {METRICS: "metrics", HEAD_IMPORTANCE: "head_importance", SNAPSHOTS: "history", LOSS_CURVE: "loss_curve"}
    assert not getattr(directory, field[name])


def test_sound_optional_files_are_read(tiny_model_dir):
    directory = open_model(tiny_model_dir)
    assert directory.problems == []
    assert directory.metrics["training"]["steps"] > 0
    assert directory.loss_curve == tiny_model_dir / LOSS_CURVE
    assert directory.history["snapshots"][0]["step"] == 0


def test_atomic_writes_leave_the_old_file_whole_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / METRICS
    write_metrics(path, {"scores": [1]})

    def full_disk(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pathlib.Path.write_text", full_disk)
    with pytest.raises(OSError, match="No space"):
        write_atomic(path, "{}")
    monkeypatch.undo()
    assert json.loads(path.read_text(encoding="utf-8")) == {"scores": [1]}
    assert [p.name for p in tmp_path.iterdir()] == [METRICS]  # no temporary file left behind


BROKEN_HISTORIES = [
    (SNAPSHOTS, {"snapshots": [{}], "probes": []}, 'snapshot 1: "step" must be a whole number >= 0'),
    (SNAPSHOTS, {"snapshots": [{"step": "x"}], "probes": 3}, '"probes" must be a list of sentences'),
    (
        SNAPSHOTS,
        {"snapshots": [{"step": 1, "minutes": 2, "probes": []}], "probes": ["a"]},
        'snapshot 1: "probes" must hold one record per probe sentence',
    ),
    (REFERENCE_SNAPSHOTS, {"snapshots": [{"step": 1}], "probes": []}, 'snapshot 1: "minutes" must be a number'),
    (
        REFERENCE_SNAPSHOTS,
        {"snapshots": [{"step": 0, "minutes": 1, "probes": []}], "probes": [], "parts": [{}]},
        '"parts" must be a list of objects, each with its "command"',
    ),
]


@pytest.mark.parametrize("name, history, reason", BROKEN_HISTORIES)
def test_a_history_the_page_could_not_draw_is_left_out_with_its_reason_and_the_page_says_so(
    tiny_model_dir, tmp_path, name, history, reason, caplog
):
    from webapp.tabs.model_card import left_out_markdown

    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    (model_dir / name).write_text(json.dumps(history), encoding="utf-8")
    directory = open_model(model_dir)
    assert len(directory.problems) == 1 and name in directory.problems[0] and reason in directory.problems[0]
    assert caplog.text.count(reason) == 1  # one logged line
    assert not (directory.history if name == SNAPSHOTS else directory.reference_history)
    assert html.escape(reason) in left_out_markdown(directory.problems)
    assert left_out_markdown([]) == ""


@pytest.mark.parametrize("name", [CONFIG, WEIGHTS])
def test_a_required_file_that_cannot_be_read_is_not_called_missing(tiny_model_dir, tmp_path, name):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    (model_dir / name).unlink()
    (model_dir / name).mkdir()  # there, but no file to read (as one without read permission)
    with pytest.raises(ModelLoadError) as error:
        open_model(model_dir)
    assert str(error.value) == f"{model_dir / name}: cannot read it (Is a directory)"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file whatever its permissions")
def test_a_model_directory_without_read_permission_says_permission_denied(tiny_model_dir, tmp_path):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    (model_dir / WEIGHTS).chmod(0)
    with pytest.raises(ModelLoadError, match="cannot read it \\(Permission denied\\)"):
        open_model(model_dir)


def test_a_config_that_is_a_list_says_so(tiny_model_dir, tmp_path):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, model_dir)
    (model_dir / CONFIG).write_text('["a"]', encoding="utf-8")
    with pytest.raises(ModelLoadError, match="invalid config: expected a JSON object, got a list"):
        open_model(model_dir)
