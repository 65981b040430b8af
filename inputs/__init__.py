"""What comes in from people, checked and cleaned before the lesson's code (`transformer/`) sees it: the limits of
every decoding argument and the one whole-number check (`checks`), the text a person typed read as the model reads
best (`text`: capitals, broken characters, a 10 MB paste), whether it looks like English at all (`language`: the
page warns when it does not), and one clear error line for the command-line tools
(`command_line`). The layers above the core use these (the app and the commands through `CheckedTranslator`, which
`modeldir.directory.open_model` opens); the core itself trusts its arguments, as nanoGPT's and the Annotated
Transformer's do.
"""
