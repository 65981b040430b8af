"""One call that makes a built page safe to serve as a public Space (`harden`)."""

from starlette.middleware import Middleware

from .admission import HeavyAdmission
from .routes import BodyLimit, NoUploads, PreparedAnswers, PublicRoutesOnly, check_inputs, compression, make_private
from .settings import MEGABYTE


def harden(demo, served, settings, public=()):
    """Make every event of the page `demo` so far private (`make_private`; none named as an endpoint of `public`,
    the API's names, registered after this) with its inputs checked (`check_inputs`), and return the arguments of
    `demo.launch` that bound what a visitor can take. Threads: enough for every concurrency group at its limit, so
    that one kind of work waiting never takes another's. Limits (docs/deployment.md): no uploads (`NoUploads`,
    Gradio's max_file_size 0 behind it), request bodies (`BodyLimit`), sessions kept (Gradio's
    state_session_capacity); answers compressed (`compression`), the page's prepared data sent with no session built
    (`PreparedAnswers`); every call of an event read once, and only the API's endpoints called by name
    (`PublicRoutesOnly`); heavy work refused at the door when the heavy lane is full (`HeavyAdmission`). `served`:
    None when no model is loaded: then the page's one event (saying so) is its API, and stays public."""
    if served:
        make_private(demo, reserved=public)
        check_inputs(demo)
    middleware = [
        Middleware(NoUploads),
        Middleware(BodyLimit, max_bytes=settings.body_mb * MEGABYTE),
        compression(),
        Middleware(PreparedAnswers, blocks=demo),
        Middleware(PublicRoutesOnly, blocks=demo),
    ]
    if served:
        middleware.append(Middleware(HeavyAdmission, served=served, blocks=demo))
    return dict(
        max_threads=12 * settings.batch_size + 64,
        max_file_size=0,
        state_session_capacity=settings.sessions,
        app_kwargs={"middleware": middleware},
    )
