"""The page's CSS (`launch(css=)`): the token chips (`tokens.token_chips`) and the beam table of the step view
(`tabs.steps`); the compact layout that puts the first view on a projector's first screen (1024×768); the heads to
switch off as a grid; inactive controls that look inactive; text colours of at least 4.5:1 contrast (WCAG AA) on the
default light Soft theme; and a visible focus ring for the keyboard (page.js makes each group of choices one Tab
stop)."""

MAX_HEADS = 16  # the heads-<n> classes of the switch-off grids (`tabs.heads`)

INK, ACCENT_INK, MUTED_INK = "#1f2937", "#3730a3", "#4b5563"  # 15:1, 9.7:1 and 7.6:1 on white
ACCENT_FILL, ACCENT_FILL_HOVER = "#4f46e5", "#4338ca"  # under white text: 6.3:1 and 8:1 (the theme's: 4.47:1)
FOCUS = "#1d4ed8"

CSS = f"""
/* Contrast: label badges ({ACCENT_INK} on the theme's pale indigo: 8.1:1; the theme's was 3.6:1), the selected tab
   (9.5:1; was 4.3:1), the footer (7.2:1; was 2.4:1), white on the Translate button and chosen radios (6.3:1; was
   4.47:1). */
.gradio-container {{
  --block-label-text-color: {ACCENT_INK}; --block-title-text-color: {ACCENT_INK};
  --block-info-text-color: {MUTED_INK}; --body-text-color-subdued: {MUTED_INK};
  --input-placeholder-color: #6b7280;
  --button-primary-background-fill: {ACCENT_FILL}; --button-primary-background-fill-hover: {ACCENT_FILL_HOVER};
  --checkbox-label-background-fill-selected: {ACCENT_FILL};
}}
[role="tablist"] button[role="tab"].selected {{ color: {ACCENT_INK}; }}
[role="tablist"] button[role="tab"] {{ color: {INK}; }}
/* The tab bar: every tab in it, on one row at 1024 px (a projector), wrapping onto more rows on a narrower screen
   (app.py: gr.Tabs(overflow_behavior="wrap")). */
[role="tablist"] button[role="tab"] {{
  padding-left: 7px !important; padding-right: 7px !important; font-size: 0.95em;
}}
footer, footer a, footer button, footer .divider {{ color: {MUTED_INK} !important; opacity: 1 !important; }}

/* The keyboard's place, always visible. */
:focus-visible {{ outline: 3px solid {FOCUS} !important; outline-offset: 2px; }}
label:has(> input[type="radio"]:focus-visible), label:has(> input[type="checkbox"]:focus-visible) {{
  outline: 3px solid {FOCUS}; outline-offset: 2px;
}}
label > input[type="radio"]:focus-visible, label > input[type="checkbox"]:focus-visible {{ outline: none !important; }}

/* Inactive controls look inactive. */
input:disabled, button:disabled {{ opacity: 0.5; cursor: not-allowed; }}

/* The first screen: a smaller title, the Translate button with one row of examples, the decoding settings folded,
   the status and chips tight, blocks closer together. */
.gradio-container {{ --layout-gap: 10px; }}
.gradio-container h1 {{ font-size: 1.6rem !important; margin: 0 0 0.2em !important; }}
#actions {{ align-items: center; flex-wrap: wrap; gap: 8px; }}
#actions > * {{ flex: 0 0 auto !important; min-width: 0 !important; width: auto !important; }}
#actions .example {{ white-space: nowrap; font-weight: 400; font-size: 0.9rem !important;
  padding: 4px 8px !important; }}
#examples-label {{ color: {MUTED_INK}; margin-left: 4px; }}
#decoding-settings {{ padding-top: 6px !important; padding-bottom: 6px !important; }}
#status p {{ margin: 0; }}
#chips .html-container {{ padding: 2px 0; }}
#chips .chips {{ margin: 0 0 4px; }}

/* The attention tab's controls: each label beside its choices, the groups side by side, two lines on a projector. */
#attention-controls > .form, #attention-controls {{ display: flex; flex-direction: row; flex-wrap: wrap;
  gap: 4px 10px; border: none; background: none; }}
#attention-controls fieldset {{ flex: 0 1 auto !important; min-width: 0 !important; width: auto !important;
  display: flex; flex-wrap: wrap;
  align-items: center; gap: 6px; padding: 6px 8px !important; }}
#attention-controls fieldset > span[data-testid="block-info"] {{ margin: 0; }}
#attention-controls fieldset .wrap {{ gap: 4px; }}
#attention-controls fieldset label {{ padding: 4px 7px; }}

/* A group of choices inside a view drawn in the browser (views.js, radioGroup), as Gradio draws a radio. */
.view-radio {{ display: inline-flex; flex-wrap: wrap; align-items: center; gap: 4px; margin: 0 8px 6px 0;
  padding: 4px 8px; border: 1px solid var(--border-color-primary); border-radius: 8px; }}
.view-radio legend {{ float: left; margin-right: 6px; font-size: 0.9em; color: {ACCENT_INK}; font-weight: 600; }}
.view-radio label {{ display: inline-flex; align-items: center; gap: 4px; padding: 3px 9px; border-radius: 6px;
  cursor: pointer; background: var(--checkbox-label-background-fill); border: 1px solid var(--border-color-primary); }}
.view-radio label:has(input:checked), .view-radio label:has(input:checked) span {{ background: {ACCENT_FILL};
  color: white; }}
.view-radio input {{ accent-color: {ACCENT_FILL}; margin: 0; }}

.chips {{ display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 4px 0; }}
.chips-label {{ font-weight: 600; min-width: 5.5em; }}
.chip {{ font-family: var(--font-mono); font-size: 1.05em; padding: 2px 8px; border-radius: 6px;
        background: var(--color-accent-soft); border: 1px solid var(--border-color-accent); white-space: pre; }}
.chip.special {{ color: {MUTED_INK}; font-style: italic; }}
.chip.chosen {{ background: #ff9f43; color: black; font-weight: 700; }}
.chip.changed {{ background: #c2185b; color: white; font-weight: 700; }}
/* A word the model's training pairs held fewer than five times (modeldir.seen): its translation is a guess. */
.chip.rare {{ outline: 2px dashed #b26a00; outline-offset: 1px; }}
table.beam {{ border-collapse: collapse; margin: 4px 0 10px; font-family: var(--font-mono); }}
table.beam th, table.beam td {{ border: 1px solid var(--border-color-primary); padding: 2px 8px; text-align: left; }}
table.beam tr.on-path, table.beam tr.winner {{ background: var(--color-accent-soft); }}
table.beam .not-top {{ color: #c2185b; font-weight: 700; }}

/* The line naming the sentence a view draws (views.js: nameSentence). */
.view-sentence {{ margin: 0 0 4px !important; font-weight: 600; overflow-wrap: anywhere; }}
/* The carrier of each translation's payload (views.carrier) draws nothing, and takes no room, unless the payload did
   not come: then its message. */
#translation-payload:not(:has(.payload-missing)) {{ display: none; }}
.payload-missing {{ margin: 0; font-weight: 600; }}

/* The model card's tables: whole words; a table wider than the screen scrolls sideways in its own box. */
.model-card table {{ display: block; max-width: 100%; overflow-x: auto; }}
.model-card th, .model-card td {{ word-break: normal !important; overflow-wrap: normal !important; hyphens: none; }}

/* A phone (390 px): every control on the screen, labels readable; the tab bar on the first screen (the examples one
   row that scrolls sideways, not four rows; the title on two lines, the introduction smaller). Gradio scopes the
   selectors inside a media query under its container: none may name .gradio-container. */
@media (max-width: 600px) {{
  #actions {{ flex-wrap: nowrap; overflow-x: auto; }}
  #intro h1 {{ font-size: 1.2rem !important; }}
  #intro p {{ font-size: 0.9rem; }}
  .diagnostics-table {{ border-spacing: 2px !important; width: 100%; table-layout: fixed; }}
  .diagnostics-table th[scope="row"] {{ width: 3.4em; }}
  .diagnostics-table td {{ padding: 0 !important; }}
  .diagnostics-grid {{ overflow-x: auto; }}
  .diagnostics-table th {{ padding: 0 2px !important; font-size: 0.85em; }}
  .diagnostics-cell {{ min-width: 0 !important; width: 100% !important; padding: 3px 2px !important; }}
  .diagnostics-number {{ font-size: 0.95em !important; }}
  .diagnostics-label {{ font-size: 0.72em !important; overflow-wrap: anywhere; }}
}}

/* The heads to switch off: one row per layer, one column per head. */
.head-grid .wrap {{ display: grid !important; gap: 6px; justify-content: start; }}
.head-grid .wrap label {{ padding: 4px 8px !important; margin: 0 !important; }}
""" + "".join(
    f".head-grid.heads-{n} .wrap {{ grid-template-columns: repeat({n}, max-content); }}\n"
    for n in range(1, MAX_HEADS + 1)
)
