"""The page's CSS: the token chips (`tokens.token_chips`) and the beam table of the step view (`tabs.steps`)."""

CSS = """
.chips { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 4px 0; }
.chips-label { font-weight: 600; min-width: 5.5em; }
.chip { font-family: var(--font-mono); font-size: 1.05em; padding: 2px 8px; border-radius: 6px;
        background: var(--color-accent-soft); border: 1px solid var(--border-color-accent); white-space: pre; }
.chip.special { opacity: 0.6; font-style: italic; }
.chip.chosen { background: #ff9f43; color: black; font-weight: 700; }
.chip.changed { background: #e84393; color: white; font-weight: 700; }
table.beam { border-collapse: collapse; margin: 4px 0 10px; font-family: var(--font-mono); }
table.beam th, table.beam td { border: 1px solid var(--border-color-primary); padding: 2px 8px; text-align: left; }
table.beam tr.on-path, table.beam tr.winner { background: var(--color-accent-soft); }
table.beam .not-top { color: #e84393; font-weight: 700; }
"""
