"""The headline (kmmlib/bench/headline.py): which mechanism is lowest,
and when the figures are even."""

from kmmlib.bench import guest, headline, model
from kmmlib.bench.headline import Spread, verdict

NAMES = {c: n for c, n, _ in headline.MECHANISMS}


def one(v):
    return Spread.of([v])


def test_a_tie_as_shown_is_even():
    """(k) of the full run of 2026-11-27: 2.63x and 2.63x were printed as
    NUMA balancing's win."""
    v = verdict({"numab": one(2.6284), "kmmscand": one(2.6301),
                 "damon-paddr": one(2.65)})
    assert v is not None
    assert v.lowest == ("numab", "kmmscand")
    assert v.even and v.single
    assert v.text(NAMES) == "NUMA balancing = kmmscand"


def test_with_one_run_each_only_ties_are_even():
    v = verdict({"numab": one(2.63), "kmmscand": one(2.64)})
    assert v is not None
    assert v.lowest == ("numab",) and not v.even and v.single
    assert v.text(NAMES) == "NUMA balancing"


def test_all_even():
    v = verdict({"numab": one(1.0), "kmmscand": one(1.004),
                 "damon-paddr": one(0.996)})
    assert v is not None and v.text(NAMES) == "even"


def test_ranges_that_overlap_are_even():
    v = verdict({"numab": Spread(1.20, 1.30, 3),
                 "kmmscand": Spread(1.25, 1.28, 3),
                 "damon-paddr": Spread(1.31, 1.50, 3)})
    assert v is not None
    assert v.lowest == ("numab", "kmmscand") and not v.single


def test_ranges_apart_are_a_win():
    v = verdict({"numab": Spread(1.40, 1.45, 2),
                 "kmmscand": Spread(1.20, 1.39, 2)})
    assert v is not None
    assert v.lowest == ("kmmscand",)
    # touching ends count as overlapping
    v = verdict({"numab": Spread(1.39, 1.45, 2),
                 "kmmscand": Spread(1.20, 1.39, 2)})
    assert v is not None and v.even


def test_one_run_against_a_range():
    v = verdict({"numab": one(1.30), "kmmscand": Spread(1.25, 1.35, 3)})
    assert v is not None and v.even and not v.single


def test_nothing_to_compare():
    assert verdict({}) is None
    v = verdict({"kmmscand": one(1.1)})
    assert v is not None and v.text(NAMES) == "-"


def test_spread_text():
    assert Spread.of([1.234, None]) == Spread(1.23, 1.23, 1)
    assert Spread(1.2, 1.25, 2).text("x") == "1.20-1.25x"
    assert Spread(1.2, 1.2, 1).text("x") == "1.20x"
    assert Spread.of([None]) is None


def table_of(text, quick):
    return model.derive([r for r in guest.parse(text).runs if r.ok], quick)


def test_quick_headline(quick_log):
    h = headline.headline(table_of(quick_log, True))
    assert h is not None and h.single
    header, rows = h.cells(short=False)
    assert header == ["workload", "NUMA balancing", "kmmscand", "DAMON",
                      "oracle", "lowest", "runs", "kmmscand CPU s",
                      "DAMON CPU s", "app sys s NUMA balancing",
                      "app sys s kmmscand"]
    assert rows[0] == ["(a)", "1.38x", "1.19x", "1.17x", "1.00x", "DAMON",
                       "1", "1.24", "1.34", "1.80", "0.19"]
    # both 1.09x as shown: even, not a win of the lower raw figure
    assert rows[1][:7] == ["(c)", "1.09x", "1.09x", "3.12x", "1.00x",
                           "NUMA balancing = kmmscand", "1"]
    assert rows[2][5] == "kmmscand"
    assert "Each figure is one run" in h.legend()


def test_server_headline_uses_ranges(server_log):
    h = headline.headline(table_of(server_log, False))
    assert h is not None and not h.single
    header, rows = h.cells(short=False)
    assert "DAMON" not in header            # DAMON did not run
    assert rows == [["(s)", "1.91-1.95x", "1.73-1.76x", "1.23x", "kmmscand",
                     "2", "0.90-0.95", "6.10-6.30", "4.45-4.50"]]
    assert "runs: each configuration's runs" in h.legend()


def test_terminal_is_one_screen(quick_log):
    table = table_of(quick_log, True)
    lines = headline.terminal(headline.headline(table), table)
    assert lines[0].startswith("Mechanisms side by side")
    assert lines[1].split() == ["modeled", "slowdown", "CPU", "s", "app",
                                "sys", "s"]
    assert lines[3].split()[:6] == ["(a)", "1.38x", "1.19x", "1.17x",
                                    "1.00x", "DAMON"]
    assert len(lines) <= 24
    assert max(len(line) for line in lines) <= 120


def test_other_configurations_when_chosen(quick_log):
    table = table_of(quick_log, True)
    assert headline.other_configs(table) == ["kmm-all-off"]
    lines = headline.terminal(headline.headline(table), table,
                              headline.other_configs(table))
    i = lines.index("Other configurations, modeled slowdown:")
    assert lines[i + 1].split() == ["workload", "kmm-all-off"]
    assert lines[i + 4].split() == ["(f)", "-"]


def test_no_mechanism_no_headline(quick_log):
    table = table_of(quick_log, True)
    only = {w: {c: r for c, r in cfgs.items() if c == "oracle"}
            for w, cfgs in table.items()}
    assert headline.headline(only) is None
