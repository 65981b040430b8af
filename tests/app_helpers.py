"""The app as a process, for the tests that meet it as its users do (test_app.py) and the browser tests' one app
(conftest.py): `python app.py` on a free port, answering, then stopped as a service manager stops it."""

import contextlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from helpers import free_port

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class AppProcess:
    url: str
    pid: int
    output: str = ""  # what it printed (stdout and stderr), once it has stopped
    returncode: int | None = None


@contextlib.contextmanager
def start_app(model_dir, timeout=180, **env):
    """Run `python app.py` on a free port (with `env` on top of ours); yield it once it answers; stop it afterwards
    with SIGTERM, as a service manager does, and record what it printed and how it ended."""
    port = free_port()
    env = {
        **os.environ,
        "MODEL_DIR": str(model_dir),
        "GRADIO_SERVER_PORT": str(port),
        "GRADIO_SERVER_NAME": "127.0.0.1",
        "GRADIO_ANALYTICS_ENABLED": "False",
        **env,
    }
    proc = subprocess.Popen(
        [sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    app = AppProcess(f"http://127.0.0.1:{port}/", proc.pid)
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                pytest.fail(f"app.py exited with {proc.returncode}:\n{proc.stdout.read()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(app.url + "config", timeout=5).status_code == 200:
                    break
            if time.time() > deadline:
                pytest.fail(f"app.py did not answer on {app.url} within {timeout} s")
            time.sleep(0.1)
        yield app
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)  # a loaded machine stops slowly; a hang is still caught
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        app.output, app.returncode = proc.stdout.read(), proc.returncode
