"""The steps of the shipped model's recipe that run beside the trainer, each a command of its own: `distill` (a
model's beam-search translations to train on), `informal` (one register for "you"), `agree` (keep the teacher's
translations that agree with a human one) and `average` (checkpoint averaging). See docs/training.md."""
