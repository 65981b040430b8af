"""Sharing the model among concurrent requests (serving/batching.py, deploy/lane.py): who goes in which batch, errors,
answers
identical to one-by-one translations and inspections; heavy work one at a time in order of arrival, within a budget
that stops a model run between two steps."""

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from app_helpers import ROOT
from deploy.lane import Busy, DeadlineExceeded, Lane, deadline_at, stop_at_deadline
from helpers import toy_pairs
from interpretability import inspect
from modeldir.directory import open_model
from modeldir.seen import WordCounts, write_word_counts
from serving.batching import Batcher, batched_decoder
from serving.decoding_process import DecodingProcess, Gone, generate
from transformer import Sampling


def wait_until(condition, timeout=10):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def held_batcher(max_size):
    """A Batcher whose first batch waits for `release`; `calls` lists the batches it ran."""
    calls, release = [], threading.Event()

    def fn(items):
        calls.append(list(items))
        if len(calls) == 1:
            release.wait(10)
        return [item * 10 for item in items]

    return Batcher(fn, max_size), calls, release


def test_a_lone_request_runs_at_once():
    batcher, calls, release = held_batcher(4)
    release.set()
    assert batcher(3) == 30 and calls == [[3]]


def test_requests_that_arrive_during_a_batch_go_together_into_the_next():
    batcher, calls, release = held_batcher(max_size=4)
    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(batcher, 0)
        wait_until(lambda: calls)  # the first batch runs, and holds
        rest = []
        for i in range(1, 7):  # queued one after the other, so their order is known
            rest.append(pool.submit(batcher, i))
            wait_until(lambda: len(batcher._queue) == i)
        release.set()
        assert [f.result(10) for f in [first, *rest]] == [i * 10 for i in range(7)]
    assert calls == [[0], [1, 2, 3, 4], [5, 6]]  # in order of arrival, at most max_size at once


def test_an_error_reaches_every_caller_of_its_batch_and_only_them():
    def fn(items):
        if "bad" in items:
            raise ValueError("bad input")
        return [item.upper() for item in items]

    batcher = Batcher(fn)
    with pytest.raises(ValueError, match="bad input"):
        batcher("bad")
    assert batcher("good") == "GOOD"  # the batcher goes on
    with pytest.raises(ValueError, match="1 items gave 2 results"):
        Batcher(lambda items: items * 2)("x")


@pytest.mark.parametrize("max_size", [0, -1])
def test_max_size_must_be_positive(max_size):
    with pytest.raises(ValueError, match="at least 1"):
        Batcher(lambda items: items, max_size)


def test_batched_inspections_equal_one_by_one_inspections(translator):
    """16 concurrent callers, greedy and beam search mixed: each gets what `inspect` alone gives it."""
    sentences = [en for en, _ in toy_pairs()[:16]]
    requests = [(text, 1 if i % 3 else 2) for i, text in enumerate(sentences)]
    batches = []

    def held_first(run):  # the first batch waits a moment, so that the others queue up meanwhile
        def run_and_count(items):
            batches.append(len(items))
            if len(batches) == 1:
                time.sleep(0.5)
            return run(items)

        return run_and_count

    batcher = batched_decoder(translator, inspect, max_size=16, wrap=held_first)

    def inspect_batched(text, beam):
        return batcher((text, beam, None, True))

    with ThreadPoolExecutor(16) as pool:
        batched = list(pool.map(lambda request: inspect_batched(*request), requests))
    assert sum(batches) == 16 and max(batches) > 1
    for (text, beam), got in zip(requests, batched):
        alone = inspect(translator, text, beam)
        assert got.translation == alone.translation == translator.translate(text, beam=beam)
        assert got.target_tokens == alone.target_tokens and got.source_tokens == alone.source_tokens
        np.testing.assert_allclose(got.cross_attention, alone.cross_attention, atol=1e-6)


SAMPLED = [None, Sampling(1.5, 0, 7), None]


@pytest.fixture(scope="module")
def decoding_process(tiny_model_dir):
    """The tiny model's decoding process, as the app starts it on a CPU (float32, one thread)."""
    process = DecodingProcess(tiny_model_dir, "float32")
    assert process.ready(timeout=120)
    yield process
    process.close()


@pytest.mark.parametrize("apart", [False, True], ids=["in-process", "decoding-process"])
def test_translations_and_inspections_share_batches(translator, request, apart):
    """The API's lean requests (the translation only) and the page's (with the inspection), greedy and sampled, go
    into the same batches, generated here or in the decoding process; each gets what it would alone."""
    decoding = request.getfixturevalue("decoding_process") if apart else None
    sentences = [en for en, _ in toy_pairs()[:12]]
    batches = []

    def counted(run):
        def run_and_count(items):
            batches.append(len(items))
            if len(batches) == 1:
                time.sleep(0.5)
            return run(items)

        return run_and_count

    batcher = batched_decoder(translator, inspect, max_size=16, wrap=counted, decoding=decoding)
    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda i: batcher((sentences[i], 1, SAMPLED[i % 3], i % 2 == 0)), range(12)))
    assert max(batches) > 1
    for i, (text, answer) in enumerate(zip(sentences, answers)):
        alone = translator.translate(text, sampling=SAMPLED[i % 3])
        if i % 2:
            assert answer == alone
        else:
            assert answer.translation == alone == inspect(translator, text, sampling=SAMPLED[i % 3]).translation
            assert answer.sampling == SAMPLED[i % 3]


def test_the_decoding_process_says_a_failed_batch_and_serves_the_next(decoding_process, translator):
    with pytest.raises(RuntimeError, match="the decoding process failed: ValueError"):
        decoding_process([("I see the cat.", 0, None)])  # a beam of 0
    requests = [("I see the cat.", 1, None), ("I see the dog.", 2, None)]
    assert decoding_process(requests) == generate(translator, requests)


def test_once_the_decoding_process_has_gone_batches_are_decoded_here(translator, tiny_model_dir, caplog):
    """The server outlives its decoding process (it exits, is killed, or is stopped when stuck on a batch): the batch
    it held, and every one after, are decoded in the server's process, and the log says so once."""
    server = subprocess.run(  # a server that starts a decoding process and exits without closing it
        [sys.executable, "-c", SERVER_THAT_EXITS, str(tiny_model_dir)], cwd=ROOT, capture_output=True, text=True
    )
    assert server.returncode == 0, server.stderr
    orphan = int(server.stdout)  # ends on its own, reading the end of its pipe
    wait_until(lambda: ended(orphan))

    process = DecodingProcess(tiny_model_dir, "float32")
    batcher = batched_decoder(translator, inspect, decoding=process)
    assert process.ready(timeout=120)
    assert batcher(("I see the cat.", 1, None, False)) == translator.translate("I see the cat.")
    os.kill(process.pid, signal.SIGSTOP)  # stuck: it answers nothing, however long the server waits
    process.batch_timeout = 0.2
    with caplog.at_level(logging.ERROR):
        for text in ("I see the dog.", "I see the cat."):
            assert batcher((text, 1, None, False)) == translator.translate(text)
    assert caplog.text.count("no answer within 0.2 s: stopped): decoding in the server's process from now on") == 1
    wait_until(lambda: ended(process.pid))
    assert not process.ready()
    process.close()
    with pytest.raises(Gone):
        process([("I see the cat.", 1, None)])


def test_closed_while_it_opens_its_model_the_decoding_process_ends_quietly(tiny_model_dir, capfd):
    """A server stopped right after it started (a Space restarting): the decoding process, still opening its model,
    is stopped, and writes no traceback of a broken pipe to the server's log."""
    process = DecodingProcess(tiny_model_dir, "float32")
    process.close()  # returns once the process has ended
    assert ended(process.pid)
    assert "Error" not in capfd.readouterr().err


def ended(pid):
    """Whether process `pid` has exited (gone, or a zombie that no one has waited for)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


SERVER_THAT_EXITS = (
    "import sys; from serving.decoding_process import DecodingProcess; "
    'print(DecodingProcess(sys.argv[1], "float32").pid)'
)


def test_a_deadline_stops_a_model_run_between_steps(translator):
    stop_at_deadline(translator.model)
    stop_at_deadline(translator.model)  # once is enough: the same hooks, not two of each
    assert len(translator.model.decoder._forward_pre_hooks) == 1
    with deadline_at(time.monotonic() - 1), pytest.raises(DeadlineExceeded):
        translator.translate("I see the cat.", beam=2)
    with deadline_at(time.monotonic() + 60):
        assert translator.translate("I see the cat.", beam=2) == translator.translate("I see the cat.", beam=2)
    batcher, expected = (
        Batcher(lambda items: [translator.translate(item) for item in items]),
        translator.translate("I see the cat."),
    )
    with deadline_at(time.monotonic() - 1):  # a batch serves others: its thread's deadline is not theirs
        assert batcher("I see the cat.") == expected


def test_heavy_work_takes_turns_in_order_of_arrival_within_the_budget():
    lane, order, release = Lane(1), [], threading.Event()
    threads = [threading.Thread(target=lane.run, args=(lambda: release.wait(5), 10))]
    threads[0].start()
    time.sleep(0.05)
    for i in range(4):
        threads.append(threading.Thread(target=lane.run, args=(lambda i=i: order.append(i), 10)))
        threads[-1].start()
        time.sleep(0.05)  # arrived in this order
    with pytest.raises(Busy, match="waited 0.1 s for a turn"):  # the one running and four waiting: no turn
        lane.run(lambda: None, 0.1)
    release.set()
    for thread in threads:
        thread.join(5)
    assert order == [0, 1, 2, 3] and lane.waiting == 0


def test_the_decoding_process_reads_input_as_the_servers_translator_does(tiny_model_dir, tmp_path):
    """The decoding process opens its model as the server does (`open_model`), word counts and all: a rarely
    capitalised first word is read in lower case there too (`inputs.text.lower_rare_capitals`), or the page would show
    the tokens the server read beside a translation of others."""
    model = shutil.copytree(tiny_model_dir, tmp_path / "model")
    counts = WordCounts(0)
    counts.add([("the cat", "il gatto")] * 60 + [("Tom", "Tom")] * 30)  # "Cat" is never met capitalised
    write_word_counts(model, counts)
    served = open_model(model).translator
    assert served.source_text("Cat sees the dog.") == "cat sees the dog."
    process = DecodingProcess(model, "float32")
    try:
        assert process.ready(timeout=120)
        (ids,) = process([("Cat sees the dog.", 1, None)])
    finally:
        process.close()
    assert ids == served.translate_ids(["Cat sees the dog."])[0] == served.translate_ids(["cat sees the dog."])[0]
