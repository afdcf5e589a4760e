"""The command line, `python -m kernels` (kernels/__main__.py): clean stdout, help for
every argument, and plain errors for bad input instead of tracebacks."""

import argparse
import json
import subprocess
import sys

import pytest

import kernels
from kernels import harness
from kernels.__main__ import build_parser, main


def _subcommands(parser):
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def test_info_stdout_is_json_and_the_banner_goes_to_stderr():
    proc = subprocess.run([sys.executable, "-m", "kernels", "info"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)  # what `python -m kernels info | jq` reads
    assert set(info) >= {"device", "numba_cuda", "numpy", "python"}
    if kernels.SIMULATOR:
        assert "running on the Numba CUDA simulator" in proc.stderr


def test_help_describes_the_tool_and_gives_examples(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--help"])
    out = capsys.readouterr().out
    assert exit.value.code == 0
    assert "Numba CUDA course" in out and "examples:" in out
    for name in _subcommands(build_parser()):
        assert f"  {name}" in out, f"{name} is not listed in --help"
        assert f"python -m kernels {name}" in out, f"no example of {name} in --help"


def test_every_command_and_argument_has_help():
    for name, sub in _subcommands(build_parser()).items():
        assert sub.description, f"`{name} --help` has no description"
        for action in sub._actions:
            assert action.help, f"{name}: argument {action.dest} has no help"


def test_bench_help_lists_the_topics(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for topic in harness.recording.TOPICS:
        assert topic in out


def test_unknown_bench_topic_is_named_before_the_gpu_is_needed(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["bench", "no-such-topic"])
    err = capsys.readouterr().err
    assert exit.value.code == 2 and "'no-such-topic'" in err and "histogram" in err
    assert "needs a CUDA GPU" not in err


@pytest.mark.skipif(not kernels.SIMULATOR, reason="the simulator refusal")
def test_bench_refuses_on_the_simulator(capsys):
    assert main(["bench", "histogram"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


@pytest.mark.parametrize("content, says", [
    (None, "no file"),
    ("{not json", "is not JSON"),
    ('{"device": {"name": "x"}}', "it has no numba_cuda, benchmarks, limits"),
    ("[1, 2]", "it has no device, numba_cuda, benchmarks, limits"),
])
def test_merge_of_a_bad_file_says_why_without_a_traceback(tmp_path, monkeypatch, capsys,
                                                          content, says):
    monkeypatch.setattr(harness.recording, "BENCH_DIR", tmp_path / "bench")
    src = tmp_path / "recording.json"
    if content is not None:
        src.write_text(content)
    assert main(["merge", str(src)]) == 2
    err = capsys.readouterr().err
    assert says in err and str(src) in err and "Traceback" not in err
    assert not (tmp_path / "bench").exists(), "a bad file must write nothing"


def test_merge_of_a_recording_writes_it(tmp_path, monkeypatch, capsys):
    original = sorted(harness.recording.BENCH_DIR.glob("*.json"))[0]
    monkeypatch.setattr(harness.recording, "BENCH_DIR", tmp_path)
    assert main(["merge", str(original)]) == 0
    merged = tmp_path / original.name
    assert f"merged into {merged}" in capsys.readouterr().out
    before, after = json.loads(original.read_text()), json.loads(merged.read_text())
    assert after["device"] == before["device"] and after["limits"] == before["limits"]
    assert after["benchmarks"].keys() == before["benchmarks"].keys()
    for key, entry in before["benchmarks"].items():
        assert after["benchmarks"][key]["rows"] == entry["rows"], key
