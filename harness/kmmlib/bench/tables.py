"""The wide tables of make bench: Row records -> out/bench/table.md.

table.md holds the headline (headline.py), then per workload a table of
every figure of every run and a table of its vmstat counters, their
legends, the cost model of kmmscand's CPU (costmodel.py), and the runs
that need a rerun.  The terminal shows the headline only.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .catalogue import SERVER_WORKLOADS, WORKLOADS
from .headline import headline
from .model import (
    VM_LATENCIES,
    Latencies,
    Row,
    ServerRow,
    Table,
    TierRow,
    counter_delta,
    pages_mb,
)
from .render import Cells, fmt, fmt_x, markdown_table

# The table of a server workload: what the client saw, what the server
# paid, where its memory went.
SERVER_COLUMNS = ("config", "slowdown", "hit %", "hit/oracle",
                  "tail hit/oracle", "kmmscand CPU s", "DAMON CPU s",
                  "server sys s", "sys us/get", "server user s",
                  "hint faults",
                  "gets/s", "tail gets/s", "gets/oracle", "mean us",
                  "p99 us", "tail p99 us", "t50 s", "t90 s", "t90/numab",
                  "hot on slow %", "cold prom %", "fast MiB start",
                  "fast MiB end", "promoted MB", "hot set MiB",
                  "promoted/hot", "PTEs", "lost keys")

COLUMNS = ("config", "slowdown", "hit %", "hit/oracle", "tail hit/oracle",
           "kmmscand CPU s", "DAMON CPU s", "app sys s",
           "kmmscand copying s", "app copying s", "kswapd CPU s",
           "kcompactd CPU s", "t50 s", "t90 s", "t90/numab", "t90 worst s",
           "t90 median s", "hot on slow %", "cold prom %", "ops/oracle",
           "tail ops/oracle", "cost/numab", "PTEs", "promoted MB",
           "MB/s (peak)", "MB/s copying", "demoted MB", "ping-pong",
           "free-min MiB", "kswapd gave up", "hint faults", "TLB IPIs/s")

# The /proc/vmstat deltas of the counters table, as (column, prefix): a
# prefix ending in "_" sums every counter it starts; every kmmscand_
# counter follows them.  Where the fast node's allocations went, how
# hard kswapd, direct reclaim and compaction worked, and every page
# migrated (DAMON's promotions are not in pgpromote_success).
COUNTERS = (("numa_hit", "numa_hit"), ("numa_miss", "numa_miss"),
            ("numa_local", "numa_local"), ("pgdemote", "pgdemote_"),
            ("pageoutrun", "pageoutrun"),
            ("kswapd low wmark quick", "kswapd_low_wmark_hit_quickly"),
            ("kswapd high wmark quick", "kswapd_high_wmark_hit_quickly"),
            ("allocstall", "allocstall_"), ("compact_stall", "compact_stall"),
            ("pgmigrate_success", "pgmigrate_success"))
KMMSCAND_PREFIX = "kmmscand_"


def lead_cells(c: str, t: Row) -> tuple[str, ...]:
    """The cells every table starts with: the configuration, the headline
    figures (modeled slowdown, hit ratio) and the mechanisms' CPU."""
    return (c, fmt_x(t.slowdown), fmt(t.hit_pct),
            fmt(t.hit_vs_oracle, ".2f"), fmt(t.tail_hit_vs_oracle, ".2f"),
            fmt(t.kmmscand_cpu_s, ".2f"), fmt(t.damon_cpu_s, ".2f"))


def config_rows(cfgs: Mapping[str, Row], order: Sequence[str],
                cells: Callable[[Any], tuple[str, ...]]) -> list[Cells]:
    """A row per configuration of order that cfgs has: lead_cells() and
    then cells(figures)."""
    return [lead_cells(c, cfgs[c]) + cells(cfgs[c])
            for c in order if c in cfgs]


def rate(mbps: float | None, peak: float | None) -> str:
    return "-" if mbps is None or peak is None else f"{mbps:.0f} ({peak:.0f})"


def server_cells(t: ServerRow) -> tuple[str, ...]:
    return (fmt(t.server_sys_s, ".2f"),
            fmt(t.server_sys_us_per_get, ".1f"),
            fmt(t.server_user_s, ".2f"),
            f"{t.hint_faults:.0f}",
            fmt(t.ops_per_s, ".0f"),
            fmt(t.tail_ops_per_s, ".0f"),
            fmt_x(t.ops_vs_oracle),
            fmt(t.lat_mean_us, ".0f"), fmt(t.lat_p99_us, ".0f"),
            fmt(t.tail_lat_p99_us, ".0f"),
            fmt(t.t50_s), fmt(t.t90_s),
            fmt_x(t.t90_vs_numab), fmt(t.hot_on_slow_pct),
            fmt(t.cold_promoted_pct, ".2f"),
            fmt(t.fast_mib_start, ".0f"),
            fmt(t.fast_mib_end, ".0f"),
            fmt(t.promoted_mb, ".0f"), fmt(t.hot_mib, ".0f"),
            fmt(t.promoted_vs_hot, ".2f"),
            f"{t.ptes / 1e6:.2f}M",
            f"{t.lost_keys:.0f}/{t.keys:.0f}")


def tier_cells(t: TierRow) -> tuple[str, ...]:
    return (fmt(t.app_sys_s, ".2f"),
            fmt(t.kmmscand_copy_s, ".2f"),
            fmt(t.app_copy_s, ".2f"),
            fmt(t.kswapd_cpu_s, ".2f"),
            fmt(t.kcompactd_cpu_s, ".2f"),
            fmt(t.t50_s), fmt(t.t90_s),
            fmt_x(t.t90_vs_numab),
            fmt(t.t90_worst_s), fmt(t.t90_median_s),
            fmt(t.hot_on_slow_pct),
            fmt(t.cold_promoted_pct, ".2f"),
            fmt_x(t.ops_vs_oracle),
            fmt_x(t.tail_ops_vs_oracle),
            fmt_x(t.cost_vs_numab),
            f"{t.ptes / 1e6:.2f}M", fmt(t.promoted_mb, ".0f"),
            rate(t.mbps, t.peak_mbps),
            fmt(t.copy_mbps, ".0f"),
            fmt(pages_mb(t.demoted_pages), ".0f"),
            f"{t.pingpong_pages:.0f}",
            fmt(t.min_free_over_min_mib, ".2f"),
            t.kswapd_gave_up or "-",
            f"{t.hint_faults:.0f}",
            fmt(t.tlb_ipis_per_s, ".0f"))


def workload_table(w: str, cfgs: Mapping[str, Row],
                   order: Sequence[str]) -> tuple[Cells, list[Cells]]:
    """(header, rows) of workload w's main table."""
    if w in SERVER_WORKLOADS:
        return SERVER_COLUMNS, config_rows(cfgs, order, server_cells)
    return COLUMNS, config_rows(cfgs, order, tier_cells)


def counter_columns(cfgs: Mapping[str, Row]) -> list[tuple[str, str]]:
    """COUNTERS, then every kmmscand_ counter some run of cfgs reported."""
    names = sorted({k for t in cfgs.values() for k in t.vmstat
                    if k.startswith(KMMSCAND_PREFIX)})
    return list(COUNTERS) + [(n, n) for n in names]


def counter_rows(cfgs: Mapping[str, Row], order: Sequence[str],
                 columns: Sequence[tuple[str, str]]) -> list[Cells]:
    rows: list[Cells] = []
    for c in order:
        if c in cfgs and cfgs[c].vmstat:
            rows.append([c] + [fmt(counter_delta(cfgs[c].vmstat, p), ".0f")
                               for _, p in columns])
    return rows


LEGEND = ("slowdown: the modeled mean access latency against an all-fast "
          "placement ({fast:g} ns fast, {slow:g} ns slow, {source}), "
          "averaged over the run. hit: the share of the "
          "workload's accesses that pages on the fast node serve, from the "
          "known access probability of each page, averaged over the run. "
          "hit/oracle: hit over the best hit as many of the workload's "
          "pages on the fast node could give (its most accessed pages), "
          "averaged over the samples where it has some there, over the run "
          "and its last quarter (tail). kswapd/kcompactd CPU: the "
          "threads' CPU time during the run. "
          "t50/t90: seconds until 50%/90% of the hot set is on the fast "
          "node (-: never; moving hot set: mean per phase). t90 worst/"
          "median: each process's own time to 90% of its hot set, the "
          "slowest and the median (-: one, or half, never got there; "
          "procs_t90 in the JSON: how many got there). hot on "
          "slow: the share of the hot set on the slow node, averaged "
          "over the run. cold prom: "
          "share of the never-hot pages promoted. ops/oracle: accesses "
          "per second relative to the oracle, over the run and over its "
          "last quarter (tail); TCG gives both nodes the same speed, so "
          "these show what promotion costs, not what it gains. "
          "DAMON CPU: its kdamond threads' CPU time during the run. "
          "cost: kmmscand and DAMON CPU + the application's "
          "system time. promoted: pgpromote_success; for DAMON, whose "
          "migrations it does not count, pgmigrate_success - pgdemote_*. "
          "MB/s (peak): promoted over the time of the last promotion "
          "(0.5 s samples), and the most in one sample. MB/s copying: the "
          "pages of the promotions' migrate_pages() calls over the time "
          "from the first call's start to the last call's end (traced, in "
          "the VM only). kmmscand/app copying: those calls' wall-clock "
          "time in the kmmscand thread and in the workload's own threads. "
          "PTEs: kmmscand_pte_scanned + numa_pte_updates. "
          "demoted: pgdemote_* (every page, the filler's too). "
          "ping-pong: the workload's pages seen on the slow node, then on "
          "the fast one, then on the slow one again. free-min: the lowest "
          "free - min watermark of a fast-node zone, looked at every 50 ms. "
          "kswapd gave up: whether kswapd had given the fast node up "
          "(node_unreclaimable), at the start / end of the run. "
          "hint faults: numa_hint_faults over the run. TLB IPIs/s: TLB "
          "shootdown interrupts received by all CPUs (the TLB line of "
          "/proc/interrupts), per second of the run. "
          "Counters: /proc/vmstat deltas over the run.")


SERVER_LEGEND = (
    "Server workload (memcached, mcbench): slowdown, hit and hit/oracle "
    "as above, each item page weighted by its keys' share of the gets. "
    "server sys/user: memcached's own CPU time during the run "
    "(/proc/PID/stat), most of it its socket calls, so sys us/get "
    "(system time per get served) against none's is what promotion adds; "
    "hint faults: numa_hint_faults, which NUMA "
    "balancing makes memcached take. gets/s: the client's throughput "
    "(one get outstanding per connection), over the run and its last "
    "quarter; gets/oracle: against the oracle run. mean/p99 us: the "
    "gets' latency, over the run and its last quarter (tail p99). "
    "t50/t90: seconds until 50%/90% of the hot set's pages are on the "
    "fast node. cold prom: the item pages outside the hot set on the fast "
    "node at the end, %. fast MiB start/end: memcached's anonymous memory "
    "on the fast node (numa_maps) when the run starts (after "
    "migratepages; the oracle's hot set) and ends. promoted: "
    "pgpromote_success over the run (for DAMON, pgmigrate_success - "
    "pgdemote_*); promoted/hot: over the hot set's size. lost keys: keys "
    "missing or with a wrong value when every key is read back at the end, "
    "of all keys (any fails the run).")


def legend(lat: Latencies = VM_LATENCIES) -> str:
    """LEGEND for the latencies the model used."""
    source = ("the VM's HMAT figures" if lat == VM_LATENCIES
              else "this host's HMAT figures")
    return LEGEND.format(fast=lat.fast_ns, slow=lat.slow_ns, source=source)


def markdown(table: Table, order: Sequence[str], header: str,
             model_lines: Sequence[str] = (), stalled: Sequence[str] = (),
             lost: Sequence[str] = (),
             lat: Latencies = VM_LATENCIES) -> str:
    """table.md: the header line, the headline, each workload's tables,
    the legends, the cost model's lines, the runs to rerun (stalled) and
    those whose copy figures miss calls (lost)."""
    out = [header, ""]
    h = headline(table, lat)
    if h:
        out += h.markdown()
    for w in sorted(table):
        out.append(f"Workload ({w}): {WORKLOADS[w].what}")
        out.append("")
        out += markdown_table(*workload_table(w, table[w], order))
        columns = counter_columns(table[w])
        rows = counter_rows(table[w], order, columns)
        if rows:
            out.append(f"Counters ({w}):")
            out.append("")
            out += markdown_table(["config"] + [n for n, _ in columns], rows)
    out.append(legend(lat))
    if any(w in SERVER_WORKLOADS for w in table):
        out += ["", SERVER_LEGEND]
    if model_lines:
        out += [""] + list(model_lines)
    md = "\n".join(out) + "\n"
    if stalled:
        md += ("\nRuns disturbed (a thread charged more CPU than the run "
               "lasted, the guest stalled, or a copy stalled: see "
               "stalled_runs(); rerun them):\n\n" +
               "".join(f"- {s}\n" for s in stalled))
    if lost:
        md += ("\nRuns whose copying figures miss calls (the trace buffer "
               "overran; bench.sh copy_trace_kb): " + ", ".join(lost) + "\n")
    return md
