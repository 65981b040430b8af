"""What Gradio spends on the session it opens for every REST call (`/gradio_api/call/NAME` without a session): the
configuration of every component of the page, built in `gradio.state_holder.SessionState` on the event loop, by kind
of component. The app's page, as app.py builds it (its model: MODEL_DIR, default assets/model).

    python -m bench.session_cost --repeat 30
"""

import argparse
import collections
import json
import time

from gradio.state_holder import SessionState

import app


def cpu_ms(fn, repeat):
    """CPU milliseconds per call of `fn`, after three calls to warm up."""
    for _ in range(3):
        fn()
    start = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - start) / repeat * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="sessions built per measure")
    args = parser.parse_args()
    demo, by_kind = app.demo, collections.Counter()
    for block_id, block in demo.blocks.items():
        by_kind[type(block).__name__] += cpu_ms(
            lambda: demo.default_config.config_for_block(block_id, [], block), args.repeat
        )
    result = {
        "components": len(demo.blocks),
        "session_ms": round(cpu_ms(lambda: SessionState(demo), args.repeat), 2),
        "by_kind_ms": {kind: round(ms, 2) for kind, ms in by_kind.most_common(5)},
    }
    print(
        f"{result['components']} components: {result['session_ms']} ms of CPU per new session; by kind: "
        + ", ".join(f"{kind} {ms} ms" for kind, ms in result["by_kind_ms"].items())
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
