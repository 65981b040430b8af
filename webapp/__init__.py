"""What only the web page (app.py) needs, one module per tab (`tabs/`) plus the few things several tabs share.

The model library (`transformer/`, `interpretability/`) computes; this package shows. `tabs/` holds one module per tab
(its figures, HTML, JavaScript and event handlers); `translation` is the box above the tabs (the sentence, decoding
controls, translation and status); `served` is the loaded model as the handlers call it; `attention_kinds`, `tokens`
and `plots` are the view metadata, token chips and plotly helpers several tabs use; `events` says how events run and
which tab is in view; `texts`, `style` and `page_script` are the page's prose, CSS and script; `downloads` keeps the
files of the download buttons; `no_model` is the page shown when no model loads.
"""
