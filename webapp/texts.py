"""The page's prose, in Markdown. What describes one model (what it is good and bad at, its data's credits) lives
in that model's directory (`notes.md`), not here. How a message quotes what a client sent: `inputs.checks.echo`."""

INTRO = """# English → Italian: a Transformer, from scratch
Type English, get Italian, then open the tabs to see how the encoder–decoder Transformer of
[*Attention Is All You Need*](https://arxiv.org/abs/1706.03762) produced it. Tokens are subwords: **▁** marks the
start of a word, `</s>` ends a sentence, `<s>` starts the decoder."""

TRAIN_HELP = """### No model yet: how to get one
The app looks for a model directory in `{model_dir}` (set `MODEL_DIR` to use another). Train one with the
project's training script, then restart the app:

```bash
# the data, rebuilt from its public sources (any TSV of English<TAB>Italian lines works too):
python -m training.prepare_data --out data/en-it

# a toy model in about a minute:
python -m training.train --config tiny --train data/en-it/train.tsv --dev data/en-it/dev.tsv --out runs/tiny \\
    --limit-train 20000 --max-steps 300
MODEL_DIR=runs/tiny/model python app.py

# the real one (about two hours on 2 CPU cores):
python -m training.train --config cpu --train data/en-it/train.tsv --dev data/en-it/dev.tsv \\
    --out runs/cpu --max-minutes 120
rm -rf assets/model && cp -r runs/cpu/model assets/model && python app.py
```"""

PAYLOAD_MISSING = (
    "This translation's numbers did not reach the page (a busy server keeps them only a short while): "
    "press Translate again to see its views."
)

EMPTY_MESSAGE = "Type an English sentence (or click an example), then press **Translate**."

STEPS_HELP = """The decoder writes one token at a time. At step *t* it sees the tokens so far (starting with `<s>`),
gives every token of the vocabulary a probability, and keeps one: the most probable with greedy decoding, the one
on the best path with beam search (which can be a less probable one)."""

POSITION_HELP = """Attention itself ignores word order, so a **positional encoding** is added to each token's embedding:
PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)). Low dimensions change quickly with the
position, high ones slowly, so every position gets a distinct pattern, and nearby positions similar ones."""

CREDITS = """### Credits
Architecture: Vaswani et al., [*Attention Is All You Need*](https://arxiv.org/abs/1706.03762) (2017), explained
line by line in Harvard NLP's [*Annotated Transformer*](https://nlp.seas.harvard.edu/annotated-transformer/).
Interface: [Gradio](https://www.gradio.app)."""

SCORES_HELP = """**BLEU** (0-100) counts how many of the output's word sequences (1 to 4 words) also occur in a human
reference translation, with a penalty for outputs shorter than the reference; **chrF** (0-100) does the same with
character sequences, so it gives credit for a word that is almost right (*libro* for *libri*). Both are computed by
sacreBLEU over all the sentences of a data set. *dev (during training)* is the training script's own check, on the
first pairs of the dev set only (`eval_limit`: 1,000 in the `cpu` config, to keep the checks short); *dev* is the
whole dev set, scored after training with `training.evaluate`, hence the different counts. The dev set gives many
English sentences several translations, one pair each: *each sentence once* scores every English sentence once,
against all its translations, so a sentence with 12 counts as much as one with a single translation."""

HEADS_HELP = """Each attention sub-layer has several **heads**, each free to learn its own way of looking. Below,
every head of one kind for *your* sentence: how peaked its attention is (entropy) and where it goes — the token
itself, the previous token, `</s>`, punctuation, or (cross-attention) one English word per Italian word. A plain-words
label names the pattern where one is clear. Click a head to open it in the **Attention** tab."""

ABLATION_HELP = """**Switch heads off** and translate again: each head ticked has its output set to zero before the
output projection W_O, as if it had never been trained, so the rest of the model must do without it. The tokens that
changed are marked; the steps of the new run are below. The heatmap under it says how much each head matters over many
sentences: the dev BLEU lost when that head alone is switched off."""

SAMPLING_HELP = """With **sampling**, the next token is drawn at random from the model's distribution, reshaped by the
**temperature** (the logits divided by it: below 1 sharper, above 1 flatter) and cut to the **top-k** most probable
tokens (0: all). The same seed gives the same translation. The bars show each candidate at temperature 1 and at
yours."""

BEAM_HELP = """**Beam search** keeps the *k* best partial translations (by summed log-probability) at every step, not
just one. A hypothesis that ends (`</s>`) is set aside with its score divided by a length penalty, so short outputs
are not favoured; the best of those wins. Below, the beam at this step: a token that was not the most probable at its
step can survive because the path through it scores best overall."""

IMPORTANCE_MISSING = """*How much each head matters has not been measured for this model.* Measure it (the dev BLEU
with each head alone switched off; minutes on a CPU), then restart the app:
`python -m training.head_importance --model {model_dir} --data data/en-it/dev.tsv`"""

ATTRIBUTION_HELP = """**Attention is not explanation.** The top row is the cross-attention of this step (mean over
layers and heads): how much of each English token's vector the decoder *mixed in* while choosing the token. The bottom
row is a gradient attribution: how much the choice *depends* on each English token. *Gradient × input*: how much the
log-probability of the chosen token would change, to first order, if a token's input vector were taken away.
*Integrated gradients*: how much of the change in that log-probability, from a sentence whose words are all blanked
out (positions kept) to the real one, is due to each token (gradients averaged along the path between the two; 16
steps, slower). The two rows can disagree: mixed-in vectors differ in size and later layers can ignore them (Jain &
Wallace, 2019, [*Attention is not Explanation*](https://arxiv.org/abs/1902.10186)); ρ is their rank agreement (1: same
order, 0: unrelated, −1: reversed)."""

# HTML, not Markdown: it stands where the heads tab's result (a gr.HTML) goes.
ABLATION_NOT_YET = """<p class="ablation-empty"><i>No heads switched off yet for this sentence.</i> Tick one or more
heads above, then press <b>Translate with these heads switched off</b>: the normal translation and the one without
those heads appear here, side by side, with the steps of the new run.</p>"""
