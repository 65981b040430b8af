"""The model directory, below training and serving, which both use it: its files (`files`), its model card
(`card`), where a model runs (`device`), and writing and opening one (`directory`).


    model.safetensors  weights (float16/bfloat16/float32; tied matrices stored once)
    config.json        the TransformerConfig
    tokenizer.json     the BPE tokenizer
    metrics.json       parameters, training (minutes, steps, data, hardware, commands), history, scores
    loss_curve.png     train loss and dev BLEU against training minutes (optional)
    notes.md           what this model is good and bad at, and its data credits, in Markdown (optional)
    head_importance.json  BLEU lost with each attention head switched off (training.head_importance; optional)
    training_snapshots.json  how it learned: probe sentences' translations and cross-attention at each evaluation
                       (training.snapshots; optional), and from_scratch_snapshots.json, those of a from-scratch run
                       of the same architecture, for a model whose own history does not start at step 0
    README.md          the Hugging Face Hub's model card, written from the files above (`card`)

A model directory may also be a model repository on the Hugging Face Hub ("user/name"): `hub_snapshot` fetches it.
"""
