"""The figure model (kmmlib/bench/model.py): Run records -> rows."""

import pytest

from kmmlib.bench import catalogue, guest, model


def runs_of(text):
    return [r for r in guest.parse(text).runs if r.ok]


def test_modeled_slowdown_uses_the_latencies():
    assert model.modeled_slowdown(1.0) == 1.0
    assert model.modeled_slowdown(0.0) == 250 / 80
    host = model.Latencies(fast_ns=100, slow_ns=300)
    assert model.modeled_slowdown(0.5, host) == 2.0


def test_time_average_weights_by_the_time_a_sample_stands_for():
    samples = [{"t": 1.0, "v": 1.0}, {"t": 4.0, "v": 2.0},
               {"t": 5.0, "v": None}]
    # 1 s at 1.0, 3 s at 2.0; the None sample is left out
    assert model.time_average(samples, lambda s: s["v"]) == 7.0 / 4
    assert model.time_average(samples, lambda s: s["v"], since=2.0) == 2.0
    assert model.time_average([], lambda s: 1.0) is None


def test_hit_vs_oracle_needs_pages_on_the_fast_node():
    assert model.hit_vs_oracle({"hit": 0.4, "ohit": 0.8}) == 0.5
    assert model.hit_vs_oracle({"hit": 0.0, "ohit": 0.0}) is None
    assert model.hit_vs_oracle({"hit": 0.4}) is None


def test_rows_of_the_quick_run(quick_log):
    table = model.derive(runs_of(quick_log), quick=True)
    assert sorted(table) == ["a", "c", "f"]
    a = table["a"]
    assert list(a) == ["numab", "kmmscand", "damon-paddr", "kmm-all-off",
                       "oracle"]
    assert isinstance(a["numab"], model.TierRow)
    assert a["oracle"].slowdown == 1.0
    # 0.5 s samples from 0.5 s: each stands for 0.5 s
    samples = next(r for r in runs_of(quick_log) if r.name == "a/numab")\
        .samples
    by_hand = sum((s["hit"] * 80 + (1 - s["hit"]) * 250) / 80
                  for s in samples) / len(samples)
    assert a["numab"].slowdown == pytest.approx(by_hand)
    assert f"{a['numab'].slowdown:.2f}" == "1.38"
    assert a["numab"].t90_vs_numab == 1.0
    assert a["kmmscand"].t90_vs_numab == pytest.approx(1.9 / 3.0)
    # (c)'s DAMON run never reached 50%: -1 in the R line, None here
    assert table["c"]["damon-paddr"].t50_s is None
    # its promotions are pgmigrate_success - pgdemote_* (none: 0 MB)
    assert table["c"]["damon-paddr"].promoted_mb == 0
    assert table["c"]["damon-paddr"].mbps is None


def test_kmmscand_cpu_is_its_threads(quick_log):
    """All of kmmscand's work is its thread's: the row has that CPU time
    and no figure of work done in the processes' own context."""
    table = model.derive(runs_of(quick_log), quick=True)
    kmm = table["a"]["kmmscand"]
    assert kmm.kmmscand_cpu_s == 1.24
    assert not [k for k in kmm.to_json() if "owner" in k]


def test_quick_tlb_ipi_rate_is_per_second_of_the_run_itself(quick_log):
    """tierbench counts TLB shootdowns over the run: a QUICK=1 run lasts
    QUICK_SECONDS, not the workload's full length."""
    runs = runs_of(quick_log)
    res = next(r for r in runs if r.name == "a/kmmscand").result
    assert res is not None and res["tlb_shootdowns"] == 120
    quick = model.derive(runs, quick=True)["a"]["kmmscand"]
    assert isinstance(quick, model.TierRow)
    assert catalogue.QUICK_SECONDS == 12
    assert quick.tlb_ipis_per_s == 120 / 12
    full = model.derive(runs, quick=False)["a"]["kmmscand"]
    assert isinstance(full, model.TierRow)
    assert full.tlb_ipis_per_s == 120 / catalogue.WORKLOADS["a"].seconds


def test_server_rows(server_log):
    table = model.derive(runs_of(server_log), quick=False)
    s = table["s"]
    assert list(s) == ["none", "numab", "kmmscand", "numab#2",
                       "kmmscand#2", "oracle"]
    row = s["kmmscand"]
    assert isinstance(row, model.ServerRow)
    # a server's system time is the application's
    assert row.app_sys_s == row.server_sys_s == 4.5
    assert row.lost_keys == 0
    assert row.server_sys_us_per_get == pytest.approx(1e6 * 4.5 / 228775)
    assert row.ops_vs_oracle == pytest.approx(9151 / 9400)
    assert [r.slowdown is not None for r in model.runs_of(s, "numab")] \
        == [True, True]


def test_failed_runs_are_left_out(quick_log):
    runs = guest.parse(quick_log).runs
    runs[0].status = 1
    table = model.derive(runs, quick=True)
    assert "numab" not in table["a"]
    # ratios to numab have nothing to divide by
    assert table["a"]["kmmscand"].t90_vs_numab is None


def test_stalled_runs_name_the_guest_stall(quick_log):
    stalled = model.stalled_runs(runs_of(quick_log), quick=True)
    assert stalled == ["(f) kmmscand: the guest stalled 1.6 s in all, 0.8 s "
                       "at most at once; kmmscand CPU 1.47 s"]


def test_stalled_runs_name_a_stalled_copy():
    run = guest.Run("kmmscand", "a", result={"kmmscand_cpu_s": 3.0},
                    status=0,
                    copy={"kmmscand_copy_max_s": 2.5,
                          "kmmscand_copy_max_pages": 1})
    assert model.stalled_runs([run], quick=False) == [
        "(a) kmmscand: one migrate_pages() call of kmmscand took 2.5 s "
        "for 1 page"]
    # a CPU that did not charge the thread waited for a CPU: not a stall
    run.result = {"kmmscand_cpu_s": 0.5}
    assert model.stalled_runs([run], quick=False) == []


def test_row_json_has_the_table_keys(quick_log):
    row = model.derive(runs_of(quick_log), quick=True)["a"]["numab"]
    doc = row.to_json()
    for key in ("slowdown", "hit_pct", "kmmscand_cpu_s", "app_sys_s",
                "damon_cpu_s", "tlb_ipis_per_s", "vmstat", "damon"):
        assert key in doc
