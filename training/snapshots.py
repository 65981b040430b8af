"""How the model learned: at step 0 and at every evaluation the trainer translates a few fixed probe sentences and
keeps, for each, the greedy translation and every cross-attention map (rounded), with the train loss and dev BLEU of
that moment. The history lives in OUT/training_snapshots.json and is copied beside the exported model, where the
app's "How it learned" tab plays it. `--resume` cuts it back to the checkpoint's step; `--init-from` continues the
history of the model it starts from, so a model trained in several parts has one history, its steps counted from
the first part's step 0.
"""

import json
import os
import time
from pathlib import Path

import numpy as np

from interpretability import inspect
from modeldir.files import SNAPSHOTS

DECIMALS = 2  # attention weights kept to 0.01: what a heatmap shows, and the file stays small

# Short and long, with a reordering (adjective after the noun), a number, names, a question, a set phrase.
DEFAULT_PROBES = (
    "I love you.",
    "The red car is mine.",
    "Where is the station?",
    "Tom has three sisters.",
    "We have 25 apples.",
    "She doesn't like black coffee.",
    "My grandmother makes the best lasagna in the whole world.",
    "I have been living in Rome for ten years.",
    "Can you tell me how to get to the museum?",
    "If it rains tomorrow, we will stay at home and watch a film.",
)


def rounded(array):
    """Nested lists of `array`'s values to DECIMALS places, exact zeros written as 0 (a third of the bytes)."""
    return (
        [rounded(row) for row in array]
        if array.ndim > 1
        else [round(v, DECIMALS) or 0 for v in np.asarray(array, dtype=float).tolist()]
    )


def probe(translator, sentence, generated=None):
    """What the model makes of one probe sentence now: its tokens, greedy translation and cross-attention.
    `generated`: that translation's token ids, when decoded in one batch with the other probes."""
    seen = inspect(translator, sentence, generated=generated)
    return {
        "source_tokens": seen.source_tokens,
        "target_tokens": seen.target_tokens,
        "translation": seen.translation,
        "cross_attention": rounded(seen.cross_attention),
    }  # (layers, heads, target tokens, source tokens)


class History:
    """The snapshots of a run and of the runs it continues: {"probes", "parts", "snapshots", "curve"}."""

    def __init__(self, path, data):
        self.path = Path(path)
        self.data = data

    @classmethod
    def start(cls, out, probes, command, init_dir=None, init_steps=0, init_minutes=0.0):
        """A new run's history: empty, or that of the --init-from model (`init_dir`), whose `init_steps` steps and
        `init_minutes` minutes this part's are counted after. The probes of the history it continues are kept."""
        previous = Path(init_dir) / SNAPSHOTS if init_dir else None
        if previous and previous.is_file():
            data = json.loads(previous.read_text(encoding="utf-8"))
        else:
            data = {"probes": list(probes), "parts": [], "snapshots": [], "curve": []}
        data["parts"].append(
            {
                "first_step": init_steps,
                "first_minutes": init_minutes,
                "command": command,
                "continues": str(init_dir) if init_dir else None,
                "history_before": bool(init_dir) and not data["snapshots"],
            }
        )
        return cls(Path(out) / SNAPSHOTS, data)

    @classmethod
    def resume(cls, out, step):
        """The history of the run in `out`, without what was recorded after its checkpoint's `step` (a resumed run
        records it again)."""
        path = Path(out) / SNAPSHOTS
        data = json.loads(path.read_text(encoding="utf-8"))
        last = data["parts"][-1]["first_step"] + step
        data["snapshots"] = [s for s in data["snapshots"] if s["step"] <= last]
        data["curve"] = [c for c in data["curve"] if c[0] <= last]
        return cls(path, data)

    @property
    def part(self):
        return self.data["parts"][-1]

    def record(self, translator, step, minutes, dev_bleu=None):
        """Snapshot the probes at this part's `step` (the model in eval mode), with the latest train loss of the
        curve; returns the seconds it took."""
        losses = [loss for _, loss, _ in self.data["curve"] if loss is not None]
        train_loss = losses[-1] if losses and step else None
        start = time.time()
        sentences = self.data["probes"]
        generated = translator.translate_ids(sentences)  # together: an early model writes to its length cap, slowly
        probes = [probe(translator, sentence, ids) for sentence, ids in zip(sentences, generated)]
        seconds = time.time() - start
        self.data["snapshots"].append(
            {
                "step": self.part["first_step"] + step,
                "minutes": round(self.part["first_minutes"] + minutes, 2),
                "part": len(self.data["parts"]),
                "train_loss": train_loss,
                "dev_bleu": dev_bleu,
                "seconds": round(seconds, 3),
                "probes": probes,
            }
        )
        return seconds

    def add_curve_point(self, step, train_loss=None, dev_bleu=None):
        """A point of the loss and dev curves ([step, train loss, dev BLEU], None where not measured)."""
        self.data["curve"].append([self.part["first_step"] + step, train_loss, dev_bleu])

    def overhead(self, train_seconds):
        """Share of this part's training time spent recording snapshots."""
        part = len(self.data["parts"])
        spent = sum(s["seconds"] for s in self.data["snapshots"] if s["part"] == part)
        return spent / max(train_seconds, 1e-9)

    def save(self, path=None):
        """Write the history (atomically: a crash mid-write never leaves half a file)."""
        path = Path(path or self.path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, path)
