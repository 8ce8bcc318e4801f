"""make bench: kmmscand against NUMA balancing tiering mode, side by side.

One boot of the release kernel runs every (configuration, workload) pair
of the plan with the same workload arguments and seeds.  The guest script
(harness/guest/bench.sh) sets each configuration up and runs tierbench
(harness/workloads/tierbench.c), which prints a line per sample and a
result line.  Here they become out/bench/bench.json, a table on the terminal
and in out/bench/table.md, and PNG plots (harness/kmmlib/plot.py).

Under TCG absolute times mean little, so the table gives every figure also
as a ratio to the NUMA balancing run (times, cost) or to the oracle run
(throughput) of the same invocation.  TCG also runs both nodes at one
speed, so what placement gains is modeled: tierbench knows each page's
share of the accesses and where it is, and the HMAT latencies of the two
nodes turn the share served by the fast node into a mean latency.
"""

import json
import os
import re
import subprocess
import time

from . import deps, kernel, tree, vm
from .costmodel import cost_model, cost_model_lines
from .common import (HARNESS, LOGS, OUT, REPO, VENV, base_line,
                     build_workload, die, ensure_dir, say)

GUEST = os.path.join(HARNESS, "guest", "bench.sh")
BENCH_OUT = os.path.join(OUT, "bench")
SEED = 42

# Room the capped Zipf workloads leave on the fast node above its high
# watermark: a quarter of their 1024 MiB, so most of the set stays slow.
CAP_ROOM_MIB = 256
# Room the full fast node of (k) leaves above its high watermark: a few
# MiB, so allocations do not fall below it at once, but promotion does.
FULL_ROOM_MIB = 4

# Pages of each process that a sample of (l) and (m) looks at (tierbench
# -k): half over its hot set, half over the rest, so that a sample of
# hundreds of processes costs a bounded move_pages() each.
MANY_SAMPLE_PAGES = 64

# The memcached workload (s): 512 Ki keys of 1 KiB values, about 590 MiB
# of 1184-byte slab chunks, in a memcached allowed 1 GiB (no eviction),
# driven over 4 connections; its hot set is the top quarter of the keys
# (about 89% of the gets under Zipf s = 1), like (b)'s.
SERVER_KEYS = 524288
SERVER_VALUE = 1024
SERVER_MIB = 1024
SERVER_CONNS = 4
SERVER_HOT_PCT = 25
# (u): the same keys and hot set, its gets a hot spot instead: the hot set
# takes 90% of them (about Zipf's 89% above), evenly, and the other keys
# the rest, evenly, so that the hot set is a set and not a cut through a
# gradient, and "promoted beyond the hot set" has one meaning.
SERVER_HOT_GETS_PCT = 90
# mcbench's arguments that every server workload shares: keys, value size,
# hot set, connections, and memcached's memory.
SERVER_ARGS = (f"-k {SERVER_KEYS} -v {SERVER_VALUE} -H {SERVER_HOT_PCT} "
               f"-c {SERVER_CONNS} -M {SERVER_MIB}")

# name: (what it models, tierbench arguments, seconds, rate limit MB/s)
WORKLOADS = {
    "a": ("192 MiB hot set, uniform, in 768 MiB on the slow node",
          "-p uniform -s 768 -H 192", 20, None),
    "b": ("Zipf-like access over 768 MiB (hot set: the top 192 MiB)",
          "-p zipf -s 768 -H 192", 20, None),
    "c": ("32 MiB hot set in a 1536 MiB mostly idle mapping",
          "-p uniform -s 1536 -H 32", 20, None),
    "d": ("demand above the rate limit: 192 MiB hot, limit 32 MB/s",
          "-p uniform -s 768 -H 192", 20, 32),
    "e": ("fast node filled to 96 MiB free; 128 MiB hot in 512 MiB",
          "-p uniform -s 512 -H 128 -F 96", 20, None),
    "n": ("(e) with room: a filler as in (e) but 384 MiB left free, "
          "128 MiB hot in 512 MiB", "-p uniform -s 512 -H 128 -F 384", 20,
          None),
    "f": ("64 processes, each 2 MiB hot in 8 MiB",
          "-p uniform -P 64 -s 8 -H 2", 20, None),
    "g": ("128 MiB hot window moving every 8 s over 384 MiB",
          "-p moving -s 384 -H 128 -m 8", 24, None),
    "h": ("fully hot: all of 192 MiB on the slow node is hot",
          "-p uniform -s 192 -H 192", 20, None),
    "i": ("capped Zipf: 1024 MiB, ranks scattered; the fast node locked "
          f"full but for {CAP_ROOM_MIB} MiB above its high watermark",
          f"-p zipf -s 1024 -H 256 -F {CAP_ROOM_MIB} -w -L", 20, None),
    "j": ("capped Zipf as (i), the filler demotable",
          f"-p zipf -s 1024 -H 256 -F {CAP_ROOM_MIB} -w", 20, None),
    "k": ("fast node full and nothing demotable: locked filler to "
          f"{FULL_ROOM_MIB} MiB above the high watermark; 128 MiB hot in "
          "512 MiB", f"-p uniform -s 512 -H 128 -F {FULL_ROOM_MIB} -w -L",
          20, None),
    "l": ("512 processes, each 1 MiB hot in 3 MiB (1536 MiB on the slow "
          "node)", f"-p uniform -P 512 -s 3 -H 1 -k {MANY_SAMPLE_PAGES}",
          20, None),
    "m": ("head-of-line blocking: 4 processes of 256 MiB (64 MiB hot) "
          "beside 128 of 4 MiB (1 MiB hot)",
          f"-p uniform -P 4:256,128:4 -s 4 -H 1 -k {MANY_SAMPLE_PAGES}",
          20, None),
    "t": ("8 threads of one process share a 192 MiB hot set, uniform, in "
          "768 MiB on the slow node", "-p uniform -s 768 -H 192 -T 8", 20,
          None),
    "s": (f"memcached: {SERVER_KEYS} keys of {SERVER_VALUE} bytes pushed to "
          "the slow node (migratepages), Zipf gets (s = 1) over "
          f"{SERVER_CONNS} connections; hot set: the top {SERVER_HOT_PCT}% "
          "of the keys",
          f"memcached -z 1 {SERVER_ARGS}", 25, None),
    "u": (f"memcached as (s), hot-spot gets: {SERVER_HOT_GETS_PCT}% of them "
          f"evenly over the top {SERVER_HOT_PCT}% of the keys, the rest "
          "evenly over the others",
          f"memcached -D {SERVER_HOT_GETS_PCT} {SERVER_ARGS}", 25, None),
    "v": ("memcached as (u), without its LRU crawler and LRU maintainer "
          "threads (-o no_lru_crawler,no_lru_maintainer), which read "
          "items in the background: the clients' gets are the only "
          "accesses to the items",
          f"memcached -Q -D {SERVER_HOT_GETS_PCT} {SERVER_ARGS}", 25, None),
}

# Workloads that run a server (bench.sh starts it, harness/workloads/
# mcbench.c drives it) rather than tierbench: their own table columns.
SERVER_WORKLOADS = ("s", "u", "v")
# Their samples: numa_maps and move_pages() of every item page once a
# second (a sample of (s) takes about a tenth of that under TCG).
SERVER_SAMPLE_MS = 1000

# The workloads of a full run: (h) only checks that the scan-cost
# optimisations do not slow a set with no cold memory to save on, and is
# left out to keep the full run well within 40 minutes; WORKLOADS=h runs
# it.  So are (l) and (m), the many-process workloads of issue 16 (each
# run takes longer to set up): WORKLOADS=l,m runs them.
FULL_WORKLOADS = ("a", "b", "c", "d", "e", "f", "g", "i", "j", "k")

# The configurations a run with no CONFIGS= measures: DAMON as its
# documentation sets it up (damon-paddr) beside NUMA balancing and
# kmmscand; its other variants when CONFIGS= names them (damon-vaddr
# promotes nothing in 6.12, and damon-paddr-noquota is the quota's
# ablation).
DEFAULT_CONFIGS = ("none", "numab", "kmmscand", "damon-paddr",
                   "kmm-no-smart-scan", "kmm-no-pmd-young",
                   "kmm-no-idle-skip", "kmm-all-off", "oracle")

# Workloads that a run with no CONFIGS= runs under some configurations
# only, to keep the full run within 40 minutes.  Every workload of the
# full run compares the mechanisms: NUMA balancing, kmmscand and DAMON
# (damon-paddr).  The scan-cost variants are measured where scan cost
# and reaction differ: (a) uniform, (b) skewed, (c) mostly idle, (g) a
# moving hot set, and (h); on (d), (e) and (f) they walk the same tables
# as there, and the time goes to DAMON instead.  (i), (j): no promotion
# (none) has no page on the fast node, so nothing to weigh.  (k): the
# oracle cannot place anything on a node that is full; none is the
# baseline of kswapd's work.
# (l), (m): what they measure is how promotion shares out among processes.
# (t): NUMA balancing against the base kernel, and kmmscand's TLB flushes,
# with many threads of one process.
# (a), (b), (g): skip_idle_mm passes over processes that did not run, and
# their one process runs throughout: the idle-mm skips of a run there are
# those of the bench's own sleeping helpers (20 to 24 a run, 2026-11-27),
# so kmm-no-idle-skip is measured on (c) alone, and kmm-all-off turns it
# off with the others everywhere.
NO_IDLE_ABLATION = tuple(c for c in DEFAULT_CONFIGS if c != "kmm-no-idle-skip")
WORKLOAD_CONFIGS = {
    "a": NO_IDLE_ABLATION,
    "b": NO_IDLE_ABLATION,
    "g": NO_IDLE_ABLATION,
    "d": ("none", "numab", "kmmscand", "damon-paddr", "oracle"),
    "e": ("none", "numab", "kmmscand", "damon-paddr", "oracle"),
    "f": ("none", "numab", "kmmscand", "damon-paddr", "oracle"),
    "i": ("numab", "kmmscand", "damon-paddr", "oracle"),
    "j": ("numab", "kmmscand", "damon-paddr", "oracle"),
    "k": ("none", "numab", "kmmscand", "damon-paddr"),
    "l": ("numab", "kmmscand"),
    "m": ("numab", "kmmscand"),
    "t": ("numab", "kmmscand"),
    **{w: ("none", "numab", "kmmscand", "oracle") for w in SERVER_WORKLOADS},
}

# name: what it is (bench.sh sets each up)
# Marks the Nth run of a configuration named more than once (bench.sh
# strips it before setting the configuration up).
RUN_MARK = "#"
CONFIGS = {
    "none": "no promotion (numa_balancing=0, kmmscand off)",
    "numab": "NUMA balancing tiering mode (numa_balancing=2)",
    "numab-late": "NUMA balancing tiering mode turned on once the server's "
                  "memory is on the slow node (server workloads only)",
    "kmmscand": "kmmscand at its defaults (numa_balancing=0)",
    "kmm-no-smart-scan": "kmmscand, smart_scan=0",
    "kmm-no-pmd-young": "kmmscand, pmd_young=0",
    "kmm-no-idle-skip": "kmmscand, skip_idle_mm=0",
    "kmm-all-off": "kmmscand with all three scan-cost optimisations off",
    "oracle": "hot set placed on the fast node from the start",
    "damon-paddr": "DAMON: the slow node's physical addresses, migrate_hot "
                   "to the fast node, 10 ms/s quota",
    "damon-paddr-noquota": "DAMON: as damon-paddr, no quota",
    "damon-vaddr": "DAMON: the workers' virtual addresses, migrate_hot to "
                   "the fast node (6.12's vaddr set does not migrate)",
}
# Configurations that only a server workload can run: numab-late turns
# NUMA balancing on at mcbench's handshake, after the placement.  With
# numab on from the server's start, its keys are loaded on the fast node,
# where tiering mode makes no hint faults; by the time they are pushed to
# the slow node the scanner passes over VMAs that took none, and its scan
# period has grown: numab-late shows a scanner that starts fresh.
SERVER_ONLY_CONFIGS = ("numab-late",)
# Any configuration with "+mglru" after it runs with the multi-gen LRU on
# (/sys/kernel/mm/lru_gen/enabled), whose page table walk shares the
# Accessed bit of PMD entries with kmmscand; bench.sh turns it off again.
MGLRU_SUFFIX = "+mglru"

# kmmscand with some knobs of /sys/kernel/mm/kmmscand set, to measure a
# default against another value side by side.
KNOBS_CONFIG_RE = re.compile(r"^kmmscand(:[a-z_]+=[0-9-]+)+$")
# damon-paddr with other values of its quota (files of the scheme's
# quotas/ directory: ms, bytes, reset_interval_ms).
DAMON_QUOTA_RE = re.compile(
    r"^damon-paddr(:(ms|bytes|reset_interval_ms)=[0-9]+)+$")

# Seconds a run takes besides its workload's: placing memory, filling the
# fast node, sampling; the time budget of a boot allows twice the sum.
RUN_SETUP_S = 15

# Seconds in all that tierbench's real-time stall watch may wake late in a
# run (stall_total_s) before the run is named as stalled: a few tenths come
# with any run under TCG; whole seconds came with runs whose CPU figures
# were out of proportion (a thread charged more CPU than the run lasted).
STALL_LIMIT_S = 1.0
# More for workloads that start hundreds of processes.
# (s), (u), (v): loading, mapping and pushing 590 MiB, and getting every
# key back.
RUN_SETUP_EXTRA_S = {"l": 45, "m": 30, **{w: 150 for w in SERVER_WORKLOADS}}

QUICK_WORKLOADS = ("a", "c", "f")
QUICK_CONFIGS = ("numab", "kmmscand", "damon-paddr", "kmm-all-off",
                 "oracle")
QUICK_SECONDS = 12

# bench.sh's last line: it went through the whole plan.
DONE_LINE = "bench.sh: done"
SAMPLE_RE = re.compile(r"^S (.*)$")
RESULT_RE = re.compile(r"^R (.*)$")
# bench.sh's line of DAMON's scheme statistics after a damon-* run.
DAMON_RE = re.compile(r"^D (.*)$")
# ptecal's line (harness/workloads/ptecal.c), before the plan's runs.
PTECAL_RE = re.compile(r"^P (.*)$")
VMSTAT_RE = re.compile(r"^V(.*)$")
# bench.sh's line of the time migrate_pages() took, per kind of caller:
# the kmmscand thread, the workload's own threads ("app"), kdamond, kswapd.
COPY_RE = re.compile(r"^M (.*)$")
# A migrate_pages() call of a kernel thread that took longer than
# COPY_STALL_S and more than COPY_STALL_PAGE_S a base page copied, with the
# thread charged at least half that CPU: a 4 KiB copy takes microseconds
# on any machine, and about 12 us here under TCG; one at a millisecond or
# more is the emulator stalling the copy, not the mechanism's work.  The
# times are wall-clock: the CPU condition keeps out a call that waited for
# a CPU, as the processes' own calls do when 64 of them share two CPUs
# (their calls are not checked), and the first bound a short call
# preempted a few ticks.
COPY_STALL_S = 1.0
COPY_STALL_PAGE_S = 1e-3
# The workload's own calls are checked against COPY_STALL_APP_PAGE_S a
# page and no CPU figure: waiting for a CPU stretches a call by a few
# scheduling rounds, not to a tenth of a second for each page it copies
# (NUMA balancing's hint faults copy one page a call).
COPY_STALL_APP_PAGE_S = 0.1
# (kind of caller, the result's key of its CPU time or None, the bound a
# page)
COPY_STALL_KINDS = (("kmmscand", "kmmscand_cpu_s", COPY_STALL_PAGE_S),
                    ("kdamond", "damon_cpu_s", COPY_STALL_PAGE_S),
                    ("app", None, COPY_STALL_APP_PAGE_S))

# The access latencies vm.HMAT gives the two nodes, seen from the CPUs of
# node 0, in ns: what a hit on the fast node and a miss to the slow one
# cost in the model (check_hmat() keeps them in step with the VM).
FAST_NS = 80
SLOW_NS = 250
# The share of the run, at its end, that "tail" figures average over.
TAIL_SHARE = 0.25


def known_config(name):
    """Whether bench.sh can set NAME up (a "+mglru" one: without it)."""
    name = name.removesuffix(MGLRU_SUFFIX)
    return (name in CONFIGS or bool(KNOBS_CONFIG_RE.match(name))
            or bool(DAMON_QUOTA_RE.match(name)))


def describe_config(label):
    name, _, nth = label.partition(RUN_MARK)
    base = name.removesuffix(MGLRU_SUFFIX)
    what = CONFIGS.get(base)
    if what is None:
        mechanism = ("DAMON (damon-paddr), quota" if DAMON_QUOTA_RE.match(base)
                     else "kmmscand with")
        what = f"{mechanism} " + ", ".join(base.split(":")[1:])
    if base != name:
        what += ", multi-gen LRU on"
    return f"{what}, run {nth}" if nth else what


def run_labels(configs):
    """configs, with "#N" added to the Nth (N >= 2) run of a repeated one.

    Each label is a column of its own in the table: a configuration named
    twice measures how much it varies within one boot.
    """
    seen = {}
    labels = []
    for c in configs:
        seen[c] = seen.get(c, 0) + 1
        labels.append(c if seen[c] == 1 else f"{c}{RUN_MARK}{seen[c]}")
    return labels


def workload_configs(w, configs, chosen):
    """The run labels of configs that workload w runs.

    Every one if CONFIGS= chose them; else those WORKLOAD_CONFIGS allows.
    """
    if chosen or w not in WORKLOAD_CONFIGS:
        return configs
    return [c for c in configs if c in WORKLOAD_CONFIGS[w]]


def make_plan(workloads, configs, quick, chosen=False):
    """Lines for bench.sh; configurations interleaved within a workload."""
    lines = []
    for w in workloads:
        _, args, secs, limit = WORKLOADS[w]
        secs = QUICK_SECONDS if quick else secs
        interval = SERVER_SAMPLE_MS if w in SERVER_WORKLOADS else 500
        for c in workload_configs(w, configs, chosen):
            lines.append(f"{c} {w} {limit or '-'} {args} -t {secs} "
                         f"-i {interval} -S {SEED}")
    return lines


def kv(text):
    out = {}
    for tok in text.split():
        k, _, v = tok.partition("=")
        try:
            out[k] = float(v)
        except ValueError:
            out[k] = v
    return out


def worker_t90_text(res):
    """The workers' own t90s for the progress line (-1: never)."""
    if res.get("t90_worst") is None:
        return ""
    return (f" (per process: worst {res['t90_worst']:.1f} s, median "
            f"{res['t90_median']:.1f} s, {res['procs_t90']:.0f} got there)")


def server_progress(run):
    """The progress line of a server workload's run."""
    r = run["result"]
    lost = r["missing"] + r["mismatched"] + r["run_misses"] + r["run_mismatched"]
    return (f"slowdown {fmt(run_slowdown(run['samples']), '.2f')}x, "
            f"t90 {r['t90']:.1f} s, {r['ops_per_s']:.0f} gets/s, p99 "
            f"{r['lat_p99_us']:.0f} us, server sys {r['server_sys_s']:.2f} s, "
            f"promoted {r['promoted_mb']:.0f} MiB (hot set "
            f"{r['hot_mib']:.0f} MiB), server on the fast node "
            f"{r['fast_mib_end']:.0f} MiB, kmmscand CPU "
            f"{r['kmmscand_cpu_s']:.2f} s, "
            + (f"DATA LOST ({lost:.0f})" if lost else
               f"all {r['keys']:.0f} keys intact"))


class Collector:
    """Turns the guest's lines into runs, showing progress as they come."""

    def __init__(self, total):
        self.total = total
        self.runs = []
        self.cur = None
        self.done = False
        self.started = time.time()
        self.calibration = None

    def line(self, text):
        text = text.rstrip("\n")
        if text == DONE_LINE:
            self.done = True
        elif text.startswith("B "):
            _, config, workload = text.split()
            self.cur = {"config": config, "workload": workload,
                        "samples": [], "result": None, "status": None}
            self.runs.append(self.cur)
            print(f"[bench] {len(self.runs)}/{self.total} workload "
                  f"{workload}, {config} ...", flush=True)
        elif self.cur is None and PTECAL_RE.match(text):
            self.calibration = kv(PTECAL_RE.match(text).group(1))
            print(f"[bench] {text}", flush=True)
        elif self.cur is None:
            if text.startswith(("tiers:", "bench.sh:")):
                print(f"[bench] {text}", flush=True)
        elif SAMPLE_RE.match(text):
            self.cur["samples"].append(kv(SAMPLE_RE.match(text).group(1)))
        elif RESULT_RE.match(text):
            r = kv(RESULT_RE.match(text).group(1))
            self.cur["result"] = r
            if self.cur["workload"] in SERVER_WORKLOADS:
                print(f"[bench]     {server_progress(self.cur)}  "
                      f"[{time.time() - self.started:.0f} s]", flush=True)
                return
            print(f"[bench]     slowdown "
                  f"{fmt(run_slowdown(self.cur['samples']), '.2f')}x, "
                  f"hit/oracle {fmt(run_hit_vs_oracle(self.cur['samples']), '.2f')}, "
                  f"t50 {r['t50']:.1f} s, t90 {r['t90']:.1f} s"
                  f"{worker_t90_text(r)}, "
                  f"cold promoted {r['cold_promoted_pct']:.1f}%, "
                  f"{r['ops_per_s'] / 1e6:.1f} Mops/s, kmmscand CPU "
                  f"{r['kmmscand_cpu_s']:.2f} s, DAMON CPU "
                  f"{r.get('damon_cpu_s', 0):.2f} s  "
                  f"[{time.time() - self.started:.0f} s]", flush=True)
        elif DAMON_RE.match(text):
            d = kv(DAMON_RE.match(text).group(1))
            self.cur["damon"] = d
            print(f"[bench]     DAMON scheme: applied to "
                  f"{d['damon_nr_applied']:.0f} of "
                  f"{d['damon_nr_tried']:.0f} regions tried, "
                  f"{d['damon_sz_applied'] / MIB:.0f} of "
                  f"{d['damon_sz_tried'] / MIB:.0f} MiB, quota exceeded "
                  f"{d['damon_qt_exceeds']:.0f} times", flush=True)
        elif COPY_RE.match(text):
            self.cur["copy"] = kv(COPY_RE.match(text).group(1))
        elif VMSTAT_RE.match(text):
            self.cur["vmstat"] = kv(VMSTAT_RE.match(text).group(1))
        elif text.startswith("E "):
            self.cur["status"] = int(text.split()[1])
        elif text.startswith(("tierbench:", "filler:", "mcbench:")):
            print(f"[bench]     {text}", flush=True)


# ---- the table ----

def ratio(a, b):
    if a is None or b is None or b <= 0 or a < 0:
        return None
    return a / b


def fmt(v, spec=".1f", none="-"):
    return none if v is None else format(v, spec)


def fmt_x(v):
    return "-" if v is None else f"{v:.2f}x"


def slow_exposure(run):
    """Mean share of the hot set left on the slow node over the run, %.

    TCG runs every node at the same speed, so the throughput figures show
    only what promotion costs the application (faults, flushes, CPU), not
    what it gains.  This is the gain side: with uniform access within the
    hot set, it is the share of hot accesses that slow memory served.
    """
    samples = run["samples"]
    if not samples:
        return None
    return sum(100 - s["hot"] for s in samples) / len(samples)


def check_hmat():
    """FAST_NS and SLOW_NS must be the latencies the VM's HMAT gives."""
    text = " ".join(vm.HMAT)
    for node, ns in ((0, FAST_NS), (1, SLOW_NS)):
        entry = (f"initiator=0,target={node},hierarchy=memory,"
                 f"data-type=access-latency,latency={ns}")
        if entry not in text:
            die(f"bench.py models node {node} at {ns} ns but vm.HMAT "
                "says otherwise: update FAST_NS/SLOW_NS")


def modeled_latency_ns(hit):
    """Mean access latency when a share hit of the accesses is fast."""
    return hit * FAST_NS + (1 - hit) * SLOW_NS


def modeled_slowdown(hit):
    """Mean access latency against an all-fast placement's."""
    return modeled_latency_ns(hit) / FAST_NS


def hit_vs_oracle(sample):
    """hit over the best hit as many fast-node pages could give.

    None when the workload has no page on the fast node (nothing placed,
    so nothing placed badly), or for samples of a tierbench without hit.
    """
    if sample.get("ohit") is None or sample["ohit"] <= 0:
        return None
    return sample["hit"] / sample["ohit"]


def time_average(samples, value, since=0.0):
    """Mean of value(sample) over the run from since, weighted by time.

    A sample stands for the time since the one before it (the first: since
    the start); samples whose value is None are left out.
    """
    total = span = 0.0
    prev = 0.0
    for s in samples:
        v = value(s)
        dt = s["t"] - max(prev, since)
        prev = s["t"]
        if v is None or dt <= 0:
            continue
        total += v * dt
        span += dt
    return total / span if span else None


def sample_hit(sample):
    return sample.get("hit")


def sample_slowdown(sample):
    hit = sample.get("hit")
    return None if hit is None else modeled_slowdown(hit)


def tail_start(samples):
    return samples[-1]["t"] * (1 - TAIL_SHARE) if samples else 0.0


def run_slowdown(samples):
    return time_average(samples, sample_slowdown)


def run_hit_vs_oracle(samples, tail=False):
    return time_average(samples, hit_vs_oracle,
                        tail_start(samples) if tail else 0.0)


def placement_figures(samples):
    """The modeled figures of a run, time-averaged over it."""
    hit = time_average(samples, sample_hit)
    return {
        "slowdown": run_slowdown(samples),
        "modeled_latency_ns": (None if hit is None else
                               modeled_latency_ns(hit)),
        "hit_pct": None if hit is None else 100 * hit,
        "hit_vs_oracle": run_hit_vs_oracle(samples),
        "tail_hit_vs_oracle": run_hit_vs_oracle(samples, tail=True),
    }


def gave_up(res):
    """Whether kswapd had given the fast node up, at the run's start and
    end, as "start/end" (1: yes); None from a tierbench without it."""
    start = res.get("fast_unreclaimable_start")
    end = res.get("fast_unreclaimable_end")
    if start is None or end is None:
        return None
    return f"{start:.0f}/{end:.0f}"


def stalled_runs(runs, quick):
    """Runs in which one kernel thread was charged more CPU than the run
    lasted: no thread can be, so the guest's time accounting, and with it
    the run, was disturbed by the emulator (TCG), not by the mechanism.
    It is rare, comes with the application's own CPU time collapsed as
    well, and the same run repeated does not show it.  Also the runs in
    which tierbench's real-time stall watch woke late by more than
    STALL_LIMIT_S in all: the guest did not run it on either CPU for that
    long (the emulator did not run the guest, or kernel code ran that long
    without a preemption point on both CPUs), and the run's times and CPU
    figures include the stall.  And the runs in which one migrate_pages()
    call took seconds at more than COPY_STALL_PAGE_S a page, charged to
    the kernel thread that made it as CPU (or at more than
    COPY_STALL_APP_PAGE_S a page in the workload's own threads): the copy
    itself stalled, which a CPU does not do (the emulator did, and whoever
    waited on the pages' migration entries lost that time).
    """
    found = []
    for r in runs:
        res = r["result"]
        if res is None:
            continue
        seconds = QUICK_SECONDS if quick else WORKLOADS[r["workload"]][2]
        for key in ("kmmscand_cpu_s", "kswapd_cpu_s", "kcompactd_cpu_s"):
            if (res.get(key) or 0) > seconds + RUN_SETUP_S:
                found.append(f"({r['workload']}) {r['config']}: "
                             f"{key} {res[key]:.1f} s in a {seconds} s run, "
                             f"application user time "
                             f"{res.get('app_user_s', 0):.1f} s")
        copy = r.get("copy") or {}
        for kind, cpu_key, page_s in COPY_STALL_KINDS:
            secs = copy.get(f"{kind}_copy_max_s") or 0
            pages = copy.get(f"{kind}_copy_max_pages") or 0
            charged = cpu_key is None or (res.get(cpu_key) or 0) >= secs / 2
            if secs > COPY_STALL_S and secs > page_s * pages and charged:
                found.append(f"({r['workload']}) {r['config']}: one "
                             f"migrate_pages() call of {kind} took "
                             f"{secs:.1f} s for {pages:.0f} "
                             f"page{'' if pages == 1 else 's'}")
        if (res.get("stall_total_s") or 0) > STALL_LIMIT_S:
            found.append(f"({r['workload']}) {r['config']}: the guest "
                         f"stalled {res['stall_total_s']:.1f} s in all, "
                         f"{res['stall_max_s']:.1f} s at most at once; "
                         f"kmmscand CPU {res.get('kmmscand_cpu_s', 0):.2f} s")
    return found


def mechanism_cpu(res):
    """The promotion threads' CPU time in a run: kmmscand's, DAMON's."""
    return res["kmmscand_cpu_s"] + res.get("damon_cpu_s", 0)


def promoted_figures(res, damon, deltas):
    """promoted MB and rates: pgpromote_success, which tierbench reads.

    DAMOS migrates with migrate_pages(), which does not count promotions:
    for a DAMON run, the pages migrated during the run that were not
    demotions (pgmigrate_success - pgdemote_*), and no rates (tierbench
    samples pgpromote_success).  Its scheme's sz_applied is no measure of
    the run: DAMON is on from before tierbench places its memory.
    """
    if damon is None:
        return {"promoted_mb": res["promoted_mb"], "mbps": res["mbps"],
                "peak_mbps": res["peak_mbps"]}
    moved = counter_delta(deltas, "pgmigrate_success")
    demoted = counter_delta(deltas, "pgdemote_") or 0
    return {"promoted_mb": (None if moved is None else
                            pages_mb(max(moved - demoted, 0))),
            "mbps": None, "peak_mbps": None}


def derive(runs):
    """Per workload and config, the figures and their ratios."""
    by = {}
    exposure = {}
    placement = {}
    counters = {}
    damon = {}
    for r in runs:
        if r["result"] is not None and r["status"] == 0:
            key = (r["workload"], r["config"])
            by.setdefault(r["workload"], {})[r["config"]] = dict(
                r["result"], **(r.get("copy") or {}))
            exposure[key] = slow_exposure(r)
            placement[key] = placement_figures(r["samples"])
            counters[key] = r.get("vmstat", {})
            damon[key] = r.get("damon")
    table = {}
    for w, cfgs in by.items():
        nb = cfgs.get("numab")
        orc = cfgs.get("oracle")
        table[w] = {}
        for c, res in cfgs.items():
            if w in SERVER_WORKLOADS:
                table[w][c] = dict(placement[(w, c)], **server_row(
                    res, nb, orc, exposure[(w, c)], damon[(w, c)],
                    counters[(w, c)]))
                continue
            t90 = res["t90"] if res["t90"] >= 0 else None
            t50 = res["t50"] if res["t50"] >= 0 else None
            worst = res.get("t90_worst", -1)
            median = res.get("t90_median", -1)
            cost = mechanism_cpu(res) + res["app_sys_s"]
            nb_cost = mechanism_cpu(nb) + nb["app_sys_s"] if nb else None
            promoted = promoted_figures(res, damon[(w, c)],
                                        counters[(w, c)])
            table[w][c] = dict(placement[(w, c)], **{
                "t50_s": t50, "t90_s": t90,
                "t90_worst_s": worst if worst >= 0 else None,
                "t90_median_s": median if median >= 0 else None,
                "procs_t90": res.get("procs_t90"),
                "hot_on_slow_pct": exposure[(w, c)],
                "t90_vs_numab": ratio(t90, nb and nb["t90"]),
                "cold_promoted_pct": res["cold_promoted_pct"],
                "ops_vs_oracle": ratio(res["ops_per_s"],
                                       orc and orc["ops_per_s"]),
                "tail_ops_vs_oracle": ratio(res["tail_ops_per_s"],
                                            orc and orc["tail_ops_per_s"]),
                "kmmscand_cpu_s": res["kmmscand_cpu_s"],
                "kmmscand_owner_cpu_s": res.get("kmmscand_owner_cpu_s"),
                "kmmscand_copy_s": res.get("kmmscand_copy_s"),
                "app_copy_s": res.get("app_copy_s"),
                "damon_cpu_s": res.get("damon_cpu_s"),
                "app_sys_s": res["app_sys_s"],
                "cost_vs_numab": ratio(cost, nb_cost),
                "ptes": res["ptes"],
                **promoted,
                "copy_mbps": copy_rate(res),
                "pingpong_pages": res["pingpong_pages"],
                "demoted_pages": res["demoted_pages"],
                "hint_faults": res["hint_faults"],
                "tlb_ipis_per_s": ratio(res.get("tlb_shootdowns"),
                                        WORKLOADS[w][2]),
                "pingpong_events": res.get("pingpong_events"),
                "kswapd_cpu_s": res.get("kswapd_cpu_s"),
                "kcompactd_cpu_s": res.get("kcompactd_cpu_s"),
                "min_free_over_min_mib": res.get("min_free_over_min_mib"),
                "kswapd_gave_up": gave_up(res),
                "vmstat": counters[(w, c)],
                "damon": damon[(w, c)],
            })
    return table


def server_row(res, nb, orc, exposure, damon, deltas):
    """The figures of a server workload's run (see SERVER_COLUMNS)."""
    t90 = res["t90"] if res["t90"] >= 0 else None
    t50 = res["t50"] if res["t50"] >= 0 else None
    promoted = promoted_figures(res, damon, deltas)
    hot = res["hot_mib"]
    return {
        "t50_s": t50, "t90_s": t90,
        "t90_vs_numab": ratio(t90, nb and nb["t90"]),
        "hot_on_slow_pct": exposure,
        "cold_promoted_pct": res["cold_promoted_pct"],
        "ops_per_s": res["ops_per_s"],
        "tail_ops_per_s": res["tail_ops_per_s"],
        "ops_vs_oracle": ratio(res["ops_per_s"], orc and orc["ops_per_s"]),
        "lat_mean_us": res["lat_mean_us"], "lat_p99_us": res["lat_p99_us"],
        "tail_lat_p99_us": res["tail_lat_p99_us"],
        "server_user_s": res["server_user_s"],
        "server_sys_s": res["server_sys_s"],
        "server_sys_us_per_get": ratio(1e6 * res["server_sys_s"],
                                       res["ops"]),
        "app_sys_s": res["server_sys_s"],
        "kmmscand_cpu_s": res["kmmscand_cpu_s"],
        "damon_cpu_s": res.get("damon_cpu_s"),
        "kswapd_cpu_s": res.get("kswapd_cpu_s"),
        "hint_faults": res["hint_faults"],
        "ptes": res["ptes"],
        **promoted,
        "hot_mib": hot,
        "promoted_vs_hot": ratio(promoted["promoted_mb"], hot),
        "fast_mib_start": res["fast_mib_start"],
        "fast_mib_end": res["fast_mib_end"],
        "demoted_pages": res["demoted_pages"],
        "keys": res["keys"],
        "lost_keys": res["missing"] + res["mismatched"],
        "lost_gets": res["run_misses"] + res["run_mismatched"],
        "vmstat": deltas,
        "damon": damon,
    }


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


def lead_cells(c, t):
    """The cells every table starts with: the configuration, the headline
    figures (modeled slowdown, hit ratio) and the mechanisms' CPU."""
    return (c, fmt_x(t.get("slowdown")), fmt(t.get("hit_pct")),
            fmt(t.get("hit_vs_oracle"), ".2f"),
            fmt(t.get("tail_hit_vs_oracle"), ".2f"),
            fmt(t["kmmscand_cpu_s"], ".2f"), fmt(t.get("damon_cpu_s"), ".2f"))


def config_rows(cfgs, order, cells):
    """A row per configuration of order that cfgs has: lead_cells() and
    then cells(figures)."""
    return [lead_cells(c, cfgs[c]) + cells(cfgs[c])
            for c in order if c in cfgs]


def server_table_rows(cfgs, order):
    return config_rows(cfgs, order, lambda t: (
        fmt(t["server_sys_s"], ".2f"),
        fmt(t["server_sys_us_per_get"], ".1f"),
        fmt(t["server_user_s"], ".2f"),
        f"{t['hint_faults']:.0f}",
        fmt(t["ops_per_s"], ".0f"),
        fmt(t["tail_ops_per_s"], ".0f"),
        fmt_x(t["ops_vs_oracle"]),
        fmt(t["lat_mean_us"], ".0f"), fmt(t["lat_p99_us"], ".0f"),
        fmt(t["tail_lat_p99_us"], ".0f"),
        fmt(t["t50_s"]), fmt(t["t90_s"]),
        fmt_x(t["t90_vs_numab"]), fmt(t["hot_on_slow_pct"]),
        fmt(t["cold_promoted_pct"], ".2f"),
        fmt(t["fast_mib_start"], ".0f"),
        fmt(t["fast_mib_end"], ".0f"),
        fmt(t["promoted_mb"], ".0f"), fmt(t["hot_mib"], ".0f"),
        fmt(t["promoted_vs_hot"], ".2f"),
        f"{t['ptes'] / 1e6:.2f}M",
        f"{t['lost_keys']:.0f}/{t['keys']:.0f}"))


def workload_table(w, cfgs, order):
    """(header, rows) of workload w's main table."""
    if w in SERVER_WORKLOADS:
        return SERVER_COLUMNS, server_table_rows(cfgs, order)
    return COLUMNS, table_rows(w, cfgs, order)


COLUMNS = ("config", "slowdown", "hit %", "hit/oracle", "tail hit/oracle",
           "kmmscand CPU s", "DAMON CPU s", "app sys s", "by owners s",
           "kmmscand copying s", "app copying s", "kswapd CPU s",
           "kcompactd CPU s", "t50 s", "t90 s", "t90/numab", "t90 worst s",
           "t90 median s", "hot on slow %", "cold prom %", "ops/oracle",
           "tail ops/oracle", "cost/numab", "PTEs", "promoted MB",
           "MB/s (peak)", "MB/s copying", "demoted MB", "ping-pong",
           "free-min MiB", "kswapd gave up", "hint faults", "TLB IPIs/s")


def table_rows(w, cfgs, order):
    return config_rows(cfgs, order, lambda t: (
        fmt(t["app_sys_s"], ".2f"),
        fmt(t.get("kmmscand_owner_cpu_s"), ".2f"),
        fmt(t.get("kmmscand_copy_s"), ".2f"),
        fmt(t.get("app_copy_s"), ".2f"),
        fmt(t.get("kswapd_cpu_s"), ".2f"),
        fmt(t.get("kcompactd_cpu_s"), ".2f"),
        fmt(t["t50_s"]), fmt(t["t90_s"]),
        fmt_x(t["t90_vs_numab"]),
        fmt(t.get("t90_worst_s")), fmt(t.get("t90_median_s")),
        fmt(t["hot_on_slow_pct"]),
        fmt(t["cold_promoted_pct"], ".2f"),
        fmt_x(t["ops_vs_oracle"]),
        fmt_x(t["tail_ops_vs_oracle"]),
        fmt_x(t["cost_vs_numab"]),
        f"{t['ptes'] / 1e6:.2f}M", fmt(t["promoted_mb"], ".0f"),
        rate(t["mbps"], t["peak_mbps"]),
        fmt(t.get("copy_mbps"), ".0f"),
        fmt(pages_mb(t["demoted_pages"]), ".0f"),
        f"{t['pingpong_pages']:.0f}",
        fmt(t.get("min_free_over_min_mib"), ".2f"),
        t.get("kswapd_gave_up") or "-",
        f"{t['hint_faults']:.0f}",
        fmt(t.get("tlb_ipis_per_s"), ".0f")))


MIB = 1 << 20
# Base pages in a MiB (x86-64's 4 KiB pages, as in the VM).
PAGES_PER_MIB = 256


def copy_rate(res):
    """Promotion MB/s while promotion ran: the pages of the traced
    promotion calls over the time from the first call's start to the last
    call's end (bench.sh's M line), free of the 0.5 s sampling and of the
    time before the first promotion.  None where nothing was traced."""
    span, pages = res.get("promote_span_s"), res.get("promote_span_pages")
    if not span or not pages:
        return None
    return pages_mb(pages) / span


def rate(mbps, peak):
    return "-" if mbps is None else f"{mbps:.0f} ({peak:.0f})"


def pages_mb(pages):
    return None if pages is None else pages / PAGES_PER_MIB


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


def counter_delta(deltas, prefix):
    if prefix.endswith("_"):
        hits = [v for k, v in deltas.items() if k.startswith(prefix)]
        return sum(hits) if hits else None
    return deltas.get(prefix)


def counter_columns(cfgs):
    """COUNTERS, then every kmmscand_ counter some run of cfgs reported."""
    names = sorted({k for t in cfgs.values() for k in t.get("vmstat", {})
                    if k.startswith(KMMSCAND_PREFIX)})
    return list(COUNTERS) + [(n, n) for n in names]


def counter_rows(cfgs, order, columns):
    rows = []
    for c in order:
        if c in cfgs and cfgs[c].get("vmstat"):
            rows.append([c] + [fmt(counter_delta(cfgs[c]["vmstat"], p), ".0f")
                               for _, p in columns])
    return rows


def markdown_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]


LEGEND = ("slowdown: the modeled mean access latency against an all-fast "
          f"placement ({FAST_NS} ns fast, {SLOW_NS} ns slow, the VM's HMAT "
          "figures), averaged over the run. hit: the share of the "
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


# The mechanisms the headline table sets side by side, and its legend.
MECHANISMS = (("numab", "NUMA balancing"), ("kmmscand", "kmmscand"),
              ("damon-paddr", "DAMON"))
HEADLINE_LEGEND = (
    "Modeled slowdown over the run against the VM's HMAT latencies "
    "(1.00x: every access served by the fast node), for each mechanism "
    "at its defaults; lowest: the mechanism with the lowest, and "
    "kmmscand/lowest how far kmmscand is from it (1.00: kmmscand is "
    "lowest). CPU: the kmmscand thread and the processes' share of its "
    "work (kmmscand), the kdamond threads (DAMON); app sys: the "
    "application's system time, hint faults included. Each figure is "
    "one run: the runs named as disturbed below, and differences of a "
    "few hundredths, need a repeat before they are read one by one.")


def headline_rows(table):
    """(header, rows): a row per workload, the mechanisms side by side;
    None if the runs measured no mechanism."""
    mechs = [(c, name) for c, name in MECHANISMS
             if any(c in cfgs for cfgs in table.values())]
    if not mechs:
        return None
    header = (["workload"] + [f"{name} slowdown" for _, name in mechs] +
              ["oracle", "lowest", "kmmscand/lowest", "kmmscand CPU s",
               "DAMON CPU s", "app sys s NUMA balancing",
               "app sys s kmmscand"])
    rows = []
    for w in sorted(table):
        cfgs = table[w]
        slow = {c: cfgs[c].get("slowdown") for c, _ in mechs if c in cfgs}
        slow = {c: v for c, v in slow.items() if v is not None}
        best = min(slow, key=slow.get) if slow else None
        kmm = cfgs.get("kmmscand", {})
        kmm_cpu = None
        if kmm:
            kmm_cpu = (kmm.get("kmmscand_cpu_s") or 0) + \
                (kmm.get("kmmscand_owner_cpu_s") or 0)
        rel = (slow["kmmscand"] / slow[best]
               if best and "kmmscand" in slow else None)

        def sys_of(c):
            return (cfgs[c].get("app_sys_s", cfgs[c].get("server_sys_s"))
                    if c in cfgs else None)
        rows.append(
            [f"({w})"] + [fmt_x(slow.get(c)) for c, _ in mechs] +
            [fmt_x((cfgs.get("oracle") or {}).get("slowdown")),
             dict(mechs).get(best, "-"), fmt(rel, ".2f"),
             fmt(kmm_cpu, ".2f"),
             fmt((cfgs.get("damon-paddr") or {}).get("damon_cpu_s"), ".2f"),
             fmt(sys_of("numab"), ".2f"), fmt(sys_of("kmmscand"), ".2f")])
    return header, rows


def markdown(table, order, header, model=None):
    out = [header, ""]
    headline = headline_rows(table)
    if headline:
        out += ["Mechanisms side by side:", ""]
        out += markdown_table(*headline)
        out += [HEADLINE_LEGEND, ""]
    for w in sorted(table):
        out.append(f"Workload ({w}): {WORKLOADS[w][0]}")
        out.append("")
        out += markdown_table(*workload_table(w, table[w], order))
        columns = counter_columns(table[w])
        rows = counter_rows(table[w], order, columns)
        if rows:
            out.append(f"Counters ({w}):")
            out.append("")
            out += markdown_table(["config"] + [n for n, _ in columns], rows)
    out.append(LEGEND)
    if any(w in SERVER_WORKLOADS for w in table):
        out += ["", SERVER_LEGEND]
    if model:
        out += [""] + cost_model_lines(model)
    return "\n".join(out) + "\n"


def print_aligned(header, rows):
    rows = [list(header)] + rows
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        print("  " + "  ".join(v.rjust(widths[i]) if i else v.ljust(widths[i])
                               for i, v in enumerate(r)))


def terminal(table, order):
    for w in sorted(table):
        print(f"\n({w}) {WORKLOADS[w][0]}")
        header, rows = workload_table(w, table[w], order)
        print_aligned(header, [list(r) for r in rows])
        columns = counter_columns(table[w])
        rows = counter_rows(table[w], order, columns)
        if rows:
            print(f"  counters ({w}):")
            print_aligned(["config"] + [n for n, _ in columns], rows)
    headline = headline_rows(table)
    if headline and len(table) > 1:
        print("\nMechanisms side by side (modeled slowdown; CPU s):")
        print_aligned(*headline)


def plot(json_path, out_dir=BENCH_OUT):
    python = os.path.join(VENV, "bin", "python")
    script = os.path.join(HARNESS, "kmmlib", "plot.py")
    res = subprocess.run([python, script, json_path, out_dir],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        die("plotting failed:\n" + res.stdout + res.stderr)
    return res.stdout.split()


def choose(quick, workloads, configs, default_workloads=None):
    """The workloads and the run labels of the configurations to run, and
    whether CONFIGS= chose them; dies on an unknown one."""
    chosen = configs is not None
    workloads = workloads or default_workloads or (
        QUICK_WORKLOADS if quick else FULL_WORKLOADS)
    configs = configs or (QUICK_CONFIGS if quick else DEFAULT_CONFIGS)
    for w in workloads:
        if w not in WORKLOADS:
            die(f"unknown workload {w}; known: {' '.join(WORKLOADS)}")
    for c in configs:
        if not known_config(c):
            die(f"unknown configuration {c}; known: {' '.join(CONFIGS)}, "
                "or kmmscand:knob=value[:knob=value...], or "
                "damon-paddr:ms=N[:bytes=N][:reset_interval_ms=N], each with "
                f"{MGLRU_SUFFIX} after it or not")
    server_only = [c for c in configs
                   if c.partition(RUN_MARK)[0].removesuffix(MGLRU_SUFFIX)
                   in SERVER_ONLY_CONFIGS]
    others = [w for w in workloads if w not in SERVER_WORKLOADS]
    if server_only and others:
        die(f"{' '.join(server_only)} runs with server workloads only "
            f"({' '.join(SERVER_WORKLOADS)}), not {' '.join(others)}")
    return workloads, run_labels(configs), chosen


def write_plan(plan, out_dir):
    ensure_dir(out_dir)
    path = os.path.join(out_dir, "plan.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(plan) + "\n")
    return path


def bench(quick=False, workloads=None, configs=None, image=None):
    """Run the plan; image: a kernel to use instead of the release build."""
    deps.ensure_plotting()
    if image is None:
        tree.refresh()
        say(base_line())
        image = kernel.build("release")
    elif not os.path.exists(image):
        die(f"no kernel image at {image}")
    tierbench = build_workload("tierbench", ("-lnuma", "-lm"))
    # bench.sh finds it beside tierbench
    host_cal = run_ptecal(build_workload("ptecal", ()))
    check_hmat()
    workloads, configs, chosen = choose(quick, workloads, configs)
    mcbench = ""
    if any(w in SERVER_WORKLOADS for w in workloads):
        deps.ensure_server()
        mcbench = build_mcbench()
    plan = make_plan(workloads, configs, quick, chosen)
    plan_path = write_plan(plan, BENCH_OUT)
    budget = 120 + 2 * sum(
        (QUICK_SECONDS if quick else WORKLOADS[w][2]) + RUN_SETUP_S
        + RUN_SETUP_EXTRA_S.get(w, 0)
        for w in workloads for _ in workload_configs(w, configs, chosen))
    say(f"{len(plan)} runs ({len(workloads)} workloads, up to {len(configs)} "
        f"configurations each) in one boot of {image}")
    col = Collector(len(plan))
    log = os.path.join(LOGS, "bench-console.log")
    res = vm.boot(image, f"sh {GUEST} {tierbench} {plan_path} {mcbench}",
                  timeout=budget, echo=col.line, log=log)
    splats = res.splats()
    for s in splats:
        print("[kmm] kernel splat in the guest log:\n" + s)
    if res.timed_out:
        die(f"the benchmark did not finish within {budget} s; see {log}")
    ran, failed = [], []
    for r in col.runs:
        (ran if r["status"] == 0 and r["result"] is not None
         else failed).append(r)
    names = " ".join(f"{r['workload']}/{r['config']}" for r in failed)
    status = guest_status(res, col)
    if len(col.runs) != len(plan) or not ran:
        die(f"benchmark runs failed: {names or 'guest script'} "
            f"(guest status {status}, {len(col.runs)}/{len(plan)} runs); "
            f"see {log}")
    header = (f"make bench{' --quick' if quick else ''}: {base_line()}; "
              f"release kernel, {'KVM' if res_kvm(log) else 'TCG'}, "
              f"{res.elapsed:.0f} s")
    if failed:
        # A failed run costs its own figures, not the boot's: report the
        # others, say which are missing, and fail the bench after.
        header += f"; FAILED, left out of the table: {names}"
    calibration = col.calibration and host_cal and {
        "guest": col.calibration, "host": host_cal}
    report(ran, quick, workloads, configs, header, BENCH_OUT,
           splats=len(splats), emulated=True, calibration=calibration)
    if failed or status != 0:
        die(f"benchmark runs failed: {names or 'guest script'} (guest "
            f"status {status}); the table has the others; see {log}")
    if splats:
        die(f"{len(splats)} kernel splat(s) during the benchmark; see {log}")
    return 0


def run_ptecal(binary):
    """ptecal's figures on this host (see costmodel.native_scale()), or
    None, said, if it fails."""
    try:
        out = subprocess.run([binary], capture_output=True, text=True,
                             check=True, timeout=300).stdout
    except (OSError, subprocess.SubprocessError) as e:
        say(f"ptecal failed on the host ({e}): no projection at its speed")
        return None
    m = PTECAL_RE.match(out.strip())
    return kv(m.group(1)) if m else None


def report(runs, quick, workloads, configs, header, out_dir, splats=0,
           emulated=True, calibration=None):
    """bench.json, table.md and the plots in out_dir; the tables on the
    terminal.  emulated: name the runs TCG disturbed (stalled_runs()).
    calibration: ptecal's figures, guest and host (cost_model())."""
    table = derive(runs)
    model = cost_model(runs, calibration)
    doc = {"header": header, "quick": quick, "seed": SEED,
           "workloads": {w: WORKLOADS[w][0] for w in workloads},
           "configs": {c: describe_config(c) for c in configs},
           "runs": runs, "table": table, "splats": splats,
           "cost_model": model and dict(model,
                                        text=cost_model_lines(model))}
    json_path = os.path.join(out_dir, "bench.json")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    md = markdown(table, configs, header, model)
    stalled = stalled_runs(runs, quick) if emulated else []
    if stalled:
        md += ("\nRuns disturbed (a thread charged more CPU than the run "
               "lasted, the guest stalled, or a copy stalled: see "
               "stalled_runs(); rerun them):\n\n" +
               "".join(f"- {s}\n" for s in stalled))
    lost = [f"({r['workload']}) {r['config']}" for r in runs
            if (r.get("copy") or {}).get("copy_trace_lost")]
    if lost:
        md += ("\nRuns whose copying figures miss calls (the trace buffer "
               "overran; bench.sh copy_trace_kb): " + ", ".join(lost) + "\n")
    table_path = os.path.join(out_dir, "table.md")
    with open(table_path, "w", encoding="utf-8") as f:
        f.write(md)
    terminal(table, configs)
    if model:
        print()
        print("\n".join(cost_model_lines(model)))
    for s in stalled:
        say(f"disturbed by the emulator, rerun it: {s}")
    pngs = plot(json_path, out_dir)
    print()
    say(f"results: {os.path.relpath(json_path, REPO)}, "
        f"{os.path.relpath(table_path, REPO)}, "
        + ", ".join(os.path.relpath(p, REPO) for p in pngs))


def build_mcbench():
    """The server workloads' client (harness/workloads/mcbench.c)."""
    return build_workload("mcbench", ("-lnuma", "-lm", "-lpthread"))


def guest_status(res, col):
    """The guest command's exit status, or 0 if only its line was lost.

    The status line is the last the guest writes before it powers off,
    and under TCG the power-off sometimes wins: then bench.sh's own last
    line, written before it, says that the plan ran to its end.
    """
    if res.status is None and col.done:
        say("the guest's exit status line was lost at power-off; "
            "bench.sh had finished its plan")
        return 0
    return res.status


def res_kvm(log):
    with open(log, encoding="utf-8", errors="replace") as f:
        first = f.readline()
    return "--disable-kvm" not in first
