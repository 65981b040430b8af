"""One module per tab of the page, each with its figures, HTML, JavaScript (a `.js` file beside it) and event
handlers, and a `build` function that makes the tab's components and wires their events: `attention`, `inside_head`,
`steps` (decoding step by step, with sampling, the beam and attribution), `heads` (diagnostics, switching heads off,
importance), `positions` (positional encoding), `how_it_learned` (the training history, played) and `model_card`."""
