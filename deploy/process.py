"""The server process on a public Space: its environment before Gradio and torch are imported (`prepare`: no
analytics, the allocator giving freed memory back, ZeroGPU's `spaces.GPU`), and a SIGTERM that stops it cleanly
(`stop_on_sigterm`). Imports nothing heavy: app.py calls `prepare` first."""

import ctypes
import os
import signal

M_MMAP_THRESHOLD, MMAP_THRESHOLD = -3, 64 * 1024  # glibc's mallopt option, and the size from which a block is mapped


def prepare():
    """Set the process up before anything is allocated or imported; returns what wraps every model call
    (`spaces.GPU` on a Hugging Face Space, so that on ZeroGPU hardware the model goes to the GPU it lends each call;
    elsewhere nothing)."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # the app needs no network; do not phone home
    # Gradio's queue rebuilds a summary of its last 10,000 events (a pandas DataFrame, grouped, percentiles) after
    # every event, its cost growing with the events served (docs/benchmarks.md). Every 1,000 events, over the last
    # 1,000.
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000")
    os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "1000")
    give_freed_memory_back()
    try:  # imported before torch places the model
        import spaces
    except ImportError:  # not on a Space
        return lambda fn: fn
    return spaces.GPU


def give_freed_memory_back():
    """glibc's malloc raises the size from which it maps a block on its own (up to 32 MB) each time it frees one, so
    the model's tensors soon come from its heaps, where what one of the server's many threads frees stays a hole the
    process keeps, and page sessions grew it by hundreds of MB; with the size fixed at MMAP_THRESHOLD (as
    MALLOC_MMAP_THRESHOLD_=65536 does) a freed tensor goes back to the system (measured: docs/benchmarks.md, "A
    hostile visitor"). Set before anything is allocated; an explicit
    MALLOC_MMAP_THRESHOLD_ wins, and a C library without mallopt (not glibc) is left as it is."""
    libc = ctypes.CDLL(None)
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ and hasattr(libc, "mallopt"):
        libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def stop_on_sigterm(served):
    """On SIGTERM (a Space restarting, a service manager): heavy work stops at its next model step and no more is
    taken (`served.close`), then the server stops as on Ctrl+C, with no thread left inside the model as Python exits
    (one there made the process abort). `served`: None when no model is loaded."""

    def shut_down(signum, frame):
        if served:
            served.close()
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, shut_down)
