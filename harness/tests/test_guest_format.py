"""The parser reads what the guest prints: the line formats of
harness/guest/bench.sh and of the workloads (tierbench.c, mcbench.c,
ptecal.c, vmstat_delta.h) against kmmlib/bench/guest.py."""

import os
import re

from kmmlib.bench import guest
from kmmlib.common import HARNESS


def read(*path):
    with open(os.path.join(HARNESS, *path), encoding="utf-8") as f:
        return f.read()


def test_bench_sh_brackets_runs_as_the_parser_expects():
    sh = read("guest", "bench.sh")
    assert 'echo "B $config $workload"' in sh
    assert 'echo "E $status"' in sh
    assert f'echo "{guest.DONE_LINE}"' in sh
    # D: DAMON's statistics, damon_<file>=value
    assert "line=D\n" in sh and 'line="$line damon_$f=' in sh
    # M: copy times, from awk
    assert 'sprintf("M promote_span_s=' in sh
    # the plan's fields
    assert "while read -r config workload limit args; do" in sh


def test_workloads_print_the_parsed_lines():
    tier = read("workloads", "tierbench.c")
    mc = read("workloads", "mcbench.c")
    for src in (tier, mc):
        assert re.search(r'printf\("S t=%', src)
        assert re.search(r'printf\("R t50=%', src)
    assert 'printf("V");' in read("workloads", "vmstat_delta.h")
    assert 'printf("P seq_ns=%' in read("workloads", "ptecal.c")


def result_keys(src):
    """The keys of a workload's R line."""
    m = re.search(r'printf\("R (.*?)\\n"', src, re.S)
    assert m
    return set(re.findall(r"(\w+)=%", m.group(1)))


def test_result_keys_the_model_reads():
    tier = result_keys(read("workloads", "tierbench.c"))
    mc = result_keys(read("workloads", "mcbench.c"))
    for key in ("t50", "t90", "cold_promoted_pct", "ops_per_s",
                "tail_ops_per_s", "kmmscand_cpu_s", "hint_faults", "ptes",
                "promoted_mb", "mbps", "peak_mbps", "demoted_pages"):
        assert key in tier and key in mc, key
    for key in ("app_sys_s", "pingpong_pages", "tlb_shootdowns",
                "stall_total_s", "t90_worst"):
        assert key in tier, key
    # kmmscand's work is its thread's alone: no figure of the processes'
    assert not [k for k in tier | mc if "owner" in k]
    for key in ("server_sys_s", "server_user_s", "lat_p99_us", "hot_mib",
                "fast_mib_start", "fast_mib_end", "keys", "missing",
                "mismatched", "run_misses", "run_mismatched", "ops"):
        assert key in mc, key


def test_fixtures_use_the_real_keys(quick_log, server_log):
    tier = result_keys(read("workloads", "tierbench.c"))
    mc = result_keys(read("workloads", "mcbench.c"))
    for text, keys in ((quick_log, tier), (server_log, mc)):
        for run in guest.parse(text).runs:
            assert run.result is not None
            assert set(run.result) == keys
