"""What comes in from people, checked and cleaned before the lesson's code (`transformer/`) sees it: the limits of
every decoding argument and the one whole-number check (`checks`), the text a person typed read as the model reads
best (`text`: capitals, broken characters, a 10 MB paste), and one clear error line for the command-line tools
(`command_line`). Every layer above the core (interpretability, the model directory, training, serving, the app)
uses these; the core itself trusts its arguments, as nanoGPT's and the Annotated Transformer's do.
"""
