"""What only the web page (app.py) needs, one module per tab (`tabs/`) plus the few things several tabs share.

The model library (`transformer/`, `interpretability/`) computes; this package shows. `translation` is the box above the
tabs (the sentence, decoding controls, translation and status), whose translate event ships the translation's `payload`
(every number the views draw) to the page; `views` (+ `views.js`) hands it to the views, which draw in the browser;
`tabs/` holds one module per tab (its view's HTML, JavaScript, and the handlers of its experiments), `view_json` what
the views are given besides the payload (their setup, the numbers their questions get: no Gradio, so a notebook's
views, `notebook`, share it); `served` is the loaded model as the handlers call it; `api` the HTTP API;
`attention_kinds` and `tokens` are the kinds of attention and the tokens as the tabs name them; `events` says how events
run and what the outside world reaches; `texts` and `style` are the page's prose and CSS, `page_script` how its
JavaScript modules are served and loaded; `no_model` is the page shown when no model loads. (The app's settings, and
all that makes it safe as a public Space, are in `deploy/`.)
"""
