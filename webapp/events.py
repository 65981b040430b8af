"""How the page's views run their events (`QUIET`), and the one-line refusal every handler raises (`Refusal`, from
`deploy.routes`, which keeps the outside world to what the page and the API need)."""

from deploy.routes import Refusal

__all__ = ["QUIET", "Refusal"]

# A view's events: not in the API, no spinner, and every trigger run with its own data. ("always_last" queues one more
# run for the clicks made during a run, but runs it with an earlier click's event data: quick clicks then left the
# head on screen unanswered. Each view asks only for what it has not got, and the lanes bound what runs.)
QUIET = dict(api_visibility="private", show_progress="hidden", trigger_mode="multiple")
