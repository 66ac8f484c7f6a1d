"""``make bench``: the benchmark list names every script, cheap ones run, model-bound ones wait."""

from __future__ import annotations

import pytest

from bench_scripts import ARCHIVE, BENCH, bench_script


@pytest.fixture
def run_bench(monkeypatch):
    return bench_script(monkeypatch, "run_bench")


def test_every_benchmark_script_is_listed_with_what_it_needs(run_bench, capsys):
    assert run_bench.main(["--list"]) == 0
    printed = capsys.readouterr().out
    root = BENCH.parent
    scripts = ({p.relative_to(root).as_posix() for p in BENCH.glob("*.py")}
               | {p.relative_to(root).as_posix() for p in ARCHIVE.glob("*.py")})
    scripts -= {"bench/run_bench.py"}
    commands = {b.command[0] for b in run_bench.BENCHMARKS}
    assert scripts <= commands
    for command in commands - {"-m"}:
        assert (root / command).is_file(), command
    for bench in run_bench.BENCHMARKS:
        assert bench.name in printed
    assert printed.count("needs:") == len(run_bench.BENCHMARKS)


def test_by_default_only_the_cheap_ones_run(run_bench, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(run_bench.subprocess, "call", lambda cmd, cwd: ran.append(cmd[1]) or 0)
    assert run_bench.main([]) == 0
    cheap = [b.command[0] for b in run_bench.BENCHMARKS if b.cheap and not b.missing()]
    assert ran == cheap
    assert not any("cold_start" in c or "agents" == c for c in ran)


def test_a_benchmark_that_cannot_run_here_is_skipped_with_the_reason(run_bench, monkeypatch,
                                                                      capsys):
    bench = run_bench.Benchmark("x", ["bench/x.py"], "m", "n", "1 s", True,
                                lambda: "the data is not here")
    monkeypatch.setattr(run_bench, "BENCHMARKS", [bench])
    monkeypatch.setattr(run_bench.subprocess, "call", lambda cmd, cwd: pytest.fail("ran"))
    assert run_bench.main(["x"]) == 0
    assert "x: skipped, the data is not here" in capsys.readouterr().out


def test_a_failing_benchmark_fails_the_run_and_unknown_names_are_refused(run_bench,
                                                                          monkeypatch):
    bench = run_bench.Benchmark("x", ["bench/x.py"], "m", "n", "1 s", True, lambda: None)
    monkeypatch.setattr(run_bench, "BENCHMARKS", [bench])
    monkeypatch.setattr(run_bench.subprocess, "call", lambda cmd, cwd: 1)
    assert run_bench.main(["x"]) == 1
    with pytest.raises(SystemExit) as info:
        run_bench.main(["nosuch"])
    assert info.value.code == 2
