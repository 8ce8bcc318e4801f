"""table.md (kmmlib/bench/tables.py) and the report that writes it and
ends make bench with the headline (kmmlib/bench/runner.py)."""

import json
import os

import pytest

from kmmlib.bench import guest, model, render, runner, tables

from conftest import FIXTURES, fixture_text

GOLDEN = os.path.join(FIXTURES, "bench-quick.table.md")


def quick_table(quick_log):
    runs = [r for r in guest.parse(quick_log).runs if r.ok]
    return runs, model.derive(runs, quick=True)


def cells_of(md, first):
    """The cells of the Markdown row whose first cell is first."""
    for line in md.splitlines():
        if line.startswith(f"| {first} |"):
            return [c.strip() for c in line.strip("|").split("|")]
    raise AssertionError(f"no row {first}")


def test_rows_have_a_cell_per_column(quick_log):
    _, table = quick_table(quick_log)
    for w, cfgs in table.items():
        header, rows = tables.workload_table(w, cfgs, list(cfgs))
        assert header == tables.COLUMNS
        assert all(len(r) == len(header) for r in rows)
        columns = tables.counter_columns(cfgs)
        assert columns[:len(tables.COUNTERS)] == list(tables.COUNTERS)
        assert ("kmmscand_pte_scanned", "kmmscand_pte_scanned") in columns
        rows = tables.counter_rows(cfgs, list(cfgs), columns)
        assert all(len(r) == len(columns) + 1 for r in rows)


def test_server_table(server_log):
    runs = [r for r in guest.parse(server_log).runs if r.ok]
    table = model.derive(runs, quick=False)
    header, rows = tables.workload_table("s", table["s"], list(table["s"]))
    assert header == tables.SERVER_COLUMNS
    assert rows[0][0] == "none" and rows[0][-1] == "0/524288"
    assert [r[0] for r in rows] == list(table["s"])


def test_markdown(quick_log):
    runs, table = quick_table(quick_log)
    order = list(dict.fromkeys(r.config for r in runs))
    md = tables.markdown(table, order, "make bench --quick: HEADER",
                         stalled=model.stalled_runs(runs, True),
                         lost=["(a) numab"])
    assert md.startswith("make bench --quick: HEADER\n\nMechanisms side by "
                         "side:\n")
    assert "Workload (a): 192 MiB hot set, uniform" in md
    assert "(80 ns fast, 250 ns slow, the VM's HMAT figures)" in md
    # TLB IPIs/s is the last column: 120 shootdowns in a 12 s run
    a_kmm = [c for c in md.split("Workload (a)")[1].splitlines()
             if c.startswith("| kmmscand |")][0]
    assert a_kmm.split("|")[-2].strip() == "10"
    assert "- (f) kmmscand: the guest stalled 1.6 s" in md
    assert md.endswith("overran; bench.sh copy_trace_kb): (a) numab\n")


def test_markdown_matches_the_golden_file(quick_log):
    """table.md's format is what make series and results/ quote: a change
    to it must be on purpose (KMM_UPDATE_GOLDEN=1 rewrites the file)."""
    runs, table = quick_table(quick_log)
    order = list(dict.fromkeys(r.config for r in runs))
    md = tables.markdown(table, order, "make bench --quick: FIXTURE")
    if os.environ.get("KMM_UPDATE_GOLDEN") == "1":
        with open(GOLDEN, "w", encoding="utf-8") as f:
            f.write(md)
    assert md == fixture_text("bench-quick.table.md")


def test_host_latencies_in_the_legend():
    lat = model.Latencies(fast_ns=110, slow_ns=390)
    assert "(110 ns fast, 390 ns slow, this host's HMAT figures)" in \
        tables.legend(lat)


def test_aligned():
    lines = render.aligned(["name", "value"], [["a", "1.00x"], ["bb", "2"]],
                           groups=[("figures", 1, 1)])
    assert lines == ["        figures", "  name  value", "  a     1.00x",
                     "  bb        2"]


@pytest.fixture
def no_plots(monkeypatch):
    monkeypatch.setattr(runner, "plot", lambda json_path, out_dir: [])


def test_report_ends_with_the_headline(quick_log, tmp_path, capsys,
                                       no_plots):
    runs, _ = quick_table(quick_log)
    order = list(dict.fromkeys(r.config for r in runs))
    md = runner.report(runs, True, ["a", "c", "f"], order, "HEADER LINE",
                       str(tmp_path))
    out = capsys.readouterr().out
    assert (tmp_path / "table.md").read_text() == md
    tail = out[out.index("HEADER LINE"):].splitlines()
    assert tail[1].startswith("Mechanisms side by side")
    assert " ".join(tail).endswith("only equal figures are called even.")
    # the wide tables are in table.md only
    assert "Workload (a)" not in out and "counters" not in out
    assert "disturbed by the emulator, rerun it: (f) kmmscand" in out
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["quick"] is True and doc["seed"] == 42
    assert doc["runs"][0]["config"] == "numab"
    assert doc["table"]["a"]["kmmscand"]["tlb_ipis_per_s"] == 10.0
    assert doc["workloads"]["c"].startswith("32 MiB hot set")


def test_report_on_a_host_names_no_disturbed_runs(quick_log, tmp_path,
                                                  capsys, no_plots):
    runs, _ = quick_table(quick_log)
    runner.report(runs, True, ["a", "c", "f"], ["numab", "kmmscand"],
                  "H", str(tmp_path), emulated=False,
                  lat=model.Latencies(100, 300))
    out = capsys.readouterr().out
    assert "disturbed" not in out
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["latencies_ns"] == {"fast": 100, "slow": 300}


def test_publish_passes_the_run(monkeypatch):
    seen = {}

    def publish(table_md, meta):
        seen.update(table=table_md, meta=meta)
        return "results/bench.md"
    monkeypatch.setattr(runner.results, "publish", publish)
    assert runner.publish("TABLE\n", "make bench", 60) == "results/bench.md"
    assert seen["table"] == "TABLE\n"
    assert seen["meta"]["command"] == "make bench"
    assert seen["meta"]["runs"] == 60 and seen["meta"]["boots"] == 1
    assert set(seen["meta"]) == {"date", "commit", "command", "boots",
                                 "runs"}


def test_a_full_run_publishes_before_the_headline(quick_log, tmp_path,
                                                  capsys, no_plots,
                                                  monkeypatch):
    published = []
    monkeypatch.setattr(runner.results, "publish",
                        lambda md, meta: published.append((md, meta))
                        or str(tmp_path / "bench.md"))
    runs, _ = quick_table(quick_log)
    md = runner.report(runs, False, ["a", "c", "f"], ["numab"], "HEADER",
                       str(tmp_path), publish_as="make bench")
    assert published == [(md, published[0][1])]
    assert published[0][1]["runs"] == len(runs)
    out = capsys.readouterr().out
    assert out.index("published the table as") < out.index("HEADER")
    assert "% at this host CPU's own speed" not in out   # no calibration


def test_cost_model_summary():
    model = {"projected_cpu_share": 0.02, "native_factors": (2.0, 20.0)}
    assert runner.cost_model_summary(model) == (
        "cost model: kmmscand at scale would use 2.00% of one CPU as "
        "measured here, 0.10 to 1.00% at this host CPU's own speed "
        "(table.md says how)")
