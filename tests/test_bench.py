"""bench.common: what every benchmark shares; here, `--save NAME` checked before a run of minutes starts."""

import argparse

import pytest

from bench import app_start, decode_latency
from bench.common import RESULTS, result_name


@pytest.mark.parametrize("name", ["app_latency", "decode_latency-float16", "rules.v2"])
def test_a_plain_name_is_a_result_name(name):
    assert result_name(name) == name


@pytest.mark.parametrize("name", ["", "/tmp/run", "../run", "results/run", "run.json", ".hidden"])
def test_a_path_or_a_file_name_is_refused(name):
    with pytest.raises(argparse.ArgumentTypeError, match="bench/results/NAME.json"):
        result_name(name)


@pytest.mark.parametrize("main", [app_start.main, decode_latency.main])
def test_a_path_given_to_save_stops_the_run_before_it_starts(main, tmp_path, capsys):
    before = sorted(RESULTS.iterdir())
    with pytest.raises(SystemExit) as stopped:
        main(["--save", str(tmp_path / "run.json")])
    assert stopped.value.code == 2
    assert "not a path" in capsys.readouterr().err
    assert sorted(RESULTS.iterdir()) == before and not list(tmp_path.iterdir())
