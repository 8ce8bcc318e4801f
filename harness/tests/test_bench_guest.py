"""The parser of the guest's output (kmmlib/bench/guest.py) and the
progress lines (kmmlib/bench/progress.py), on captured output."""

from kmmlib.bench import guest, progress


def test_quick_run_parses_every_run(quick_log):
    p = guest.parse(quick_log)
    assert p.done
    assert [r.name for r in p.runs[:5]] == [
        "a/numab", "a/kmmscand", "a/damon-paddr", "a/kmm-all-off",
        "a/oracle"]
    assert len(p.runs) == 14
    assert all(r.ok for r in p.runs)
    a_numab = p.runs[0]
    # 12 s of 0.5 s samples
    assert len(a_numab.samples) == 24
    assert a_numab.samples[-1]["t"] == 12.0
    assert a_numab.result is not None
    assert a_numab.result["t90"] == 3.0
    assert a_numab.result["tlb_shootdowns"] == 0
    assert a_numab.vmstat is not None
    assert a_numab.vmstat["numa_hint_faults"] == 49152
    assert a_numab.copy is not None and "app_copy_s" in a_numab.copy
    assert a_numab.damon is None
    damon = p.runs[2]
    assert damon.damon is not None
    assert damon.damon["damon_qt_exceeds"] == 14


def test_calibration_is_ptecal_before_the_runs(quick_log):
    p = guest.parse(quick_log)
    assert p.calibration == {"seq_ns": 12.9, "rand_ns": 316.1,
                             "ptes": 262144}


def test_failed_run_and_missing_end():
    p = guest.parse("B numab a\nS t=0.50 hot=1.0 cold=0.00 hit=0.01 "
                    "ohit=1.0\ntierbench: worker 3 exited\nE 1\n"
                    "B kmmscand a\nS t=0.50 hot=2.0\n")
    assert [r.status for r in p.runs] == [1, None]
    assert not any(r.ok for r in p.runs)
    assert not p.done


def test_lines_outside_a_run_and_noise_are_ignored():
    p = guest.Parser()
    assert p.line("[    1.0] random: crng init done") is None
    assert p.line("S t=1 hot=2") is None       # no run yet
    ev = p.line("tiers: memory_tier4=0 memory_tier22=1")
    assert ev is not None and ev.kind == "note"
    assert p.line("B malformed") is None       # not "B config workload"
    assert p.runs == []
    p.line("B numab a")
    assert p.line("E not-a-number") is None
    assert p.runs[0].status is None


def test_kv_keeps_numbers_only():
    assert guest.kv("a=1 b=2.5 c=x d") == {"a": 1.0, "b": 2.5}


def test_run_json_round_trip(server_log):
    p = guest.parse(server_log)
    for r in p.runs:
        doc = r.to_json()
        assert "damon" not in doc          # only lines the run had
        assert guest.Run.from_json(doc) == r


def test_progress_lines(quick_log, capsys):
    col = progress.Collector(14, clock=lambda: 100.0)
    for line in quick_log.splitlines():
        col.line(line)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "[bench] bench.sh: memory written once in 14 s"
    assert "[bench] 1/14 workload a, numab ..." in out
    first = out[out.index("[bench] 1/14 workload a, numab ...") + 1]
    assert first.startswith("[bench]     slowdown 1.38x, hit/oracle 0.82, "
                            "t50 2.4 s, t90 3.0 s")
    assert first.endswith("DAMON CPU 0.00 s  [0 s]")
    assert any("DAMON scheme: applied to 310 of 2400 regions tried, 215 of "
               "1536 MiB, quota exceeded 14 times" in line for line in out)
    assert col.done and len(col.runs) == 14


def test_server_progress_line(server_log, capsys):
    col = progress.Collector(6, clock=lambda: 0.0)
    for line in server_log.splitlines():
        col.line(line)
    out = capsys.readouterr().out
    assert ("[bench]     slowdown 1.95x, t90 20.0 s, 8400 gets/s, p99 "
            "1200 us, server sys 6.10 s, promoted 160 MiB (hot set 148 MiB), "
            "server on the fast node 160 MiB, kmmscand CPU 0.00 s, all "
            "524288 keys intact") in out
