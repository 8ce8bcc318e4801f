"""make check's report: the heartbeat of a quiet program and the summary
per group, on captured guest output."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kmmlib import check  # noqa: E402

# What run-tests.sh sends to the console for one program, as the guest
# wrote it (the plan, then the result lines).
GUEST = """KMM-TEST-START kmmscand
1..3
ok 1 scan_promotes_hot_set
ok 2 knobs_reject_bad_input # SKIP no slow tier
not ok 3 many_processes_promoted
KMM-TEST-END kmmscand 1
"""


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_heartbeat_shows_cases_and_budget(monkeypatch, capsys):
    clock = Clock()
    monkeypatch.setattr(check.time, "time", clock)
    prog = check.Progress({"kmmscand": 1200})
    prog.tty = False
    lines = GUEST.splitlines(keepends=True)
    prog(lines[0])
    prog(lines[1])
    prog(lines[2])
    clock.now += check.Progress.HEARTBEAT - 1
    prog.tick()
    assert "cases done" not in capsys.readouterr().out
    clock.now += 131 - check.Progress.HEARTBEAT + 1
    prog.tick()
    out = capsys.readouterr().out
    assert "kmmscand: 1 of 3 cases done, 2m11s of its 20m00s budget" in out
    for line in lines[3:]:
        prog(line)
    out = capsys.readouterr().out
    assert "FAIL many_processes_promoted" in out
    assert "kmmscand done (exit 1, 3 cases)" in out
    # After the end, nothing is running: no heartbeat.
    clock.now += 600
    prog.tick()
    assert capsys.readouterr().out == ""


def test_tally_prints_passes_once_as_counts(capsys):
    t = check.Tally()
    t.add("checkpatch patches/a.patch", "pass")
    t.add("checkpatch mm/kmmscand.c", "pass")
    t.add("KUnit kmmscand.test_history", "pass")
    t.add("kselftest kmmscand: scan_promotes_hot_set", "pass")
    t.add("kselftest kmmscand: knobs_reject_bad_input", "skip", "no slow tier")
    t.add("kselftest kmmscand: many_processes_promoted", "fail")
    t.add("no kernel splat", "pass")
    added = capsys.readouterr().out
    assert "PASS" not in added
    assert "SKIP kselftest kmmscand: knobs_reject_bad_input  (no slow tier)" \
        in added
    assert "FAIL kselftest kmmscand: many_processes_promoted" in added
    report = t.report().splitlines()
    assert report[-1] == "5 passed, 1 failed, 1 skipped"
    assert any(ln.split() == ["checkpatch", "2", "passed"] for ln in report)
    assert any(ln.split()[:2] == ["kselftest", "kmmscand"] and
               ln.endswith("1 passed, 1 failed, 1 skipped") for ln in report)
    assert "  kselftest kmmscand: many_processes_promoted" in report


# A kselftest prints a case's diagnostics before its result line.
STRESS_TAP = """TAP version 13
1..3
# oom_mid_promotion: 4 rounds, 4 OOM kills
ok 1 oom_mid_promotion
# target_node_full: node 0 free 55 MiB, high watermarks + margin 54 MiB
# target_node_full: promoted 0, kswapd runs +0
# target_node_full: no room 0, back-offs 0
# target_node_full: kmmscand never found node 0 full
not ok 2 target_node_full
# memory_hotplug: 1 of 2 node-1 blocks off and on again
ok 3 memory_hotplug
# Totals: pass:2 fail:1 xfail:0 xpass:0 skip:0 error:0
"""


def test_failed_case_detail_is_its_own_diagnostics():
    cases = check.parse_tap(STRESS_TAP)
    assert [(c, o) for c, o, _ in cases] == [
        ("oom_mid_promotion", "pass"), ("target_node_full", "fail"),
        ("memory_hotplug", "pass")]
    detail = cases[1][2]
    assert detail.endswith("kmmscand never found node 0 full")
    assert "memory_hotplug" not in detail and "OOM kills" not in detail


def test_failed_case_diagnostics_printed_not_the_tail():
    found = check.failed_case_diagnostics(STRESS_TAP)
    assert [c for c, _ in found] == ["target_node_full"]
    lines = found[0][1]
    assert len(lines) == 4
    assert all("target_node_full" in ln for ln in lines)
