"""Light batches decoded in a process of their own. On a CPU server a batch's decoding is mostly Python (a small model
runs one short tensor operation after another), and Python runs one thread at a time per process: at 16 clients the
decoding and Gradio's event loop took turns on one of the two cores (docs/benchmarks.md, "Serving under load"). A
second process that only decodes runs beside the event loop, on the other core.

It is started with `subprocess` (`python -m serving.decoding_process`), not `multiprocessing`, whose "spawn" runs
app.py again in the child to rebuild its main module. Requests and answers go through a pipe as pickles
(`multiprocessing.connection`): a batch's `(text, beam, sampling)` requests in, their generated token ids out; the
server keeps its own copy of the model for everything else (the attention maps, heavy work) and decodes a batch
itself if this process has gone.
"""

import os
import signal
import subprocess
import sys
import threading
from multiprocessing.connection import Connection

READY = "ready"


class Gone(RuntimeError):
    """The decoding process is not running (it crashed, was killed, or was closed)."""


def generate(translator, requests):
    """The generated token ids of each `(text, beam, sampling)` request, in order: the texts decoded greedily or with
    the same beam width together (one `translate_ids` per width), those sampled one by one (each draws with its own
    seed)."""
    generated, together = {}, [i for i, request in enumerate(requests) if request[2] is None]
    for beam in dict.fromkeys(requests[i][1] for i in together):  # each beam width once, in order
        same = [i for i in together if requests[i][1] == beam]
        generated.update(zip(same, translator.translate_ids([requests[i][0] for i in same], beam=beam)))
    for i, (text, beam, sampling) in enumerate(requests):
        if sampling is not None:
            generated[i] = translator.translate_ids([text], beam, sampling=sampling)[0]
    return [generated[i] for i in range(len(requests))]


class DecodingProcess:
    """`decoding(requests)` is `generate(translator, requests)` computed by a child process holding its own copy of the
    model directory `path` in `dtype` (a name of `modeldir.loading.DTYPES`) on the CPU, with `threads` torch threads;
    one batch at a time (thread-safe), once `ready`. `Gone` if the child has gone (it stays gone), `RuntimeError` with
    the child's error if a batch failed there. `close()` ends it, as does the server's exit (the child reads
    end-of-file)."""

    def __init__(self, path, dtype, threads=1, batch_timeout=60.0):
        ours, theirs = os.pipe(), os.pipe()  # (read, write) each: ours carries answers to us, theirs requests to it
        command = [sys.executable, "-m", __name__, str(theirs[0]), str(ours[1]), str(path), dtype, str(threads)]
        self._process = subprocess.Popen(command, pass_fds=(theirs[0], ours[1]), stdin=subprocess.DEVNULL)
        os.close(theirs[0])
        os.close(ours[1])
        self._requests = Connection(theirs[1], readable=False)
        self._answers = Connection(ours[0], writable=False)
        self._lock = threading.Lock()
        self._ready = False  # the child has opened its model, and has not gone since
        self.batch_timeout = batch_timeout  # seconds a batch may take before the child is taken for stuck, and stopped

    @property
    def pid(self):
        return self._process.pid

    def ready(self, timeout=0.0):
        """Whether the child has opened its model, waiting up to `timeout` seconds for it: the server starts it and
        goes on (it opens the model while Gradio builds the page), decoding its batches itself until then. False for
        good once the child has gone."""
        with self._lock:
            return self._started(timeout)

    def _started(self, timeout):
        if not self._ready:
            try:
                self._ready = self._answers.poll(timeout) and self._answers.recv() == READY
            except (OSError, EOFError):  # gone before it was ready, or closed
                pass
        return self._ready

    def __call__(self, requests, start_timeout=300.0):
        with self._lock:
            if not self._started(start_timeout):
                raise Gone(f"the decoding process did not start (exit code {self._process.poll()})")
            try:
                self._requests.send(list(requests))
                answered = self._answers.poll(self.batch_timeout)
                if answered:
                    ok, value = self._answers.recv()
            except (OSError, EOFError) as e:
                self._ready = False
                raise Gone("the decoding process has gone (its pipe closed)") from e
            if not answered:
                self._process.kill()
                self._ready = False
                raise Gone(f"the decoding process has gone (no answer within {self.batch_timeout:g} s: stopped)")
        if not ok:
            raise RuntimeError(f"the decoding process failed: {value}")
        return value

    def close(self, timeout=5.0):
        """End the child: it reads the pipe's end and exits, or, still opening its model, is stopped at once."""
        for connection in (self._requests, self._answers):
            connection.close()
        if not self._ready:
            self._process.terminate()
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def serve(requests, answers, path, dtype, threads):
    """The child: open the model, say it is ready, then answer each batch until the server closes the pipe (Ctrl+C in
    the server's terminal reaches this process too, and is left to the server)."""
    import torch

    from modeldir.directory import open_for_translation

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    torch.set_num_threads(threads)
    translator = open_for_translation(path, dtype, "cpu").translator  # reading input as the server's translator does
    try:
        answers.send(READY)
    except BrokenPipeError:  # the server has gone before the model was open
        return
    while True:
        try:
            batch = requests.recv()
        except EOFError:  # the server closed the pipe, or exited
            return
        try:
            answers.send((True, generate(translator, batch)))
        except Exception as e:  # said to the server, which raises it to the batch's callers
            answers.send((False, f"{type(e).__name__}: {e}"))


if __name__ == "__main__":
    request_fd, answer_fd, model_path, model_dtype, model_threads = sys.argv[1:]
    serve(
        Connection(int(request_fd), writable=False),
        Connection(int(answer_fd), readable=False),
        model_path,
        model_dtype,
        int(model_threads),
    )
    os._exit(0)  # the server closed the pipe: nothing is left to flush, so no interpreter teardown (torch's is slow)
