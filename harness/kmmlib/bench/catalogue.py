"""What make bench can run: the workloads, the configurations, the plan.

The workloads are tierbench's (harness/workloads/tierbench.c) or, for
the server workloads, mcbench's (harness/workloads/mcbench.c) against a
memcached; the configurations are what harness/guest/bench.sh knows how
to set up.  A plan is one line per run, in the format bench.sh reads.
Nothing here runs anything.
"""

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..common import die

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


@dataclass(frozen=True)
class Workload:
    """One workload of the catalogue.

    what: what it models (the tables' and plots' title); args: tierbench's
    arguments, or "memcached ..." for a server workload (bench.sh passes
    the rest to mcbench); seconds: the length of a full run;
    rate_limit_mbps: the promotion rate limit the run sets, or None to
    leave the kernel's.
    """

    what: str
    args: str
    seconds: int
    rate_limit_mbps: int | None = None


WORKLOADS: dict[str, Workload] = {
    "a": Workload("192 MiB hot set, uniform, in 768 MiB on the slow node",
                  "-p uniform -s 768 -H 192", 20),
    "b": Workload("Zipf-like access over 768 MiB (hot set: the top 192 MiB)",
                  "-p zipf -s 768 -H 192", 20),
    "c": Workload("32 MiB hot set in a 1536 MiB mostly idle mapping",
                  "-p uniform -s 1536 -H 32", 20),
    "d": Workload("demand above the rate limit: 192 MiB hot, limit 32 MB/s",
                  "-p uniform -s 768 -H 192", 20, 32),
    "e": Workload("fast node filled to 96 MiB free; 128 MiB hot in 512 MiB",
                  "-p uniform -s 512 -H 128 -F 96", 20),
    "n": Workload("(e) with room: a filler as in (e) but 384 MiB left free, "
                  "128 MiB hot in 512 MiB", "-p uniform -s 512 -H 128 -F 384",
                  20),
    "f": Workload("64 processes, each 2 MiB hot in 8 MiB",
                  "-p uniform -P 64 -s 8 -H 2", 20),
    "g": Workload("128 MiB hot window moving every 8 s over 384 MiB",
                  "-p moving -s 384 -H 128 -m 8", 24),
    "h": Workload("fully hot: all of 192 MiB on the slow node is hot",
                  "-p uniform -s 192 -H 192", 20),
    "i": Workload("capped Zipf: 1024 MiB, ranks scattered; the fast node "
                  f"locked full but for {CAP_ROOM_MIB} MiB above its high "
                  "watermark",
                  f"-p zipf -s 1024 -H 256 -F {CAP_ROOM_MIB} -w -L", 20),
    "j": Workload("capped Zipf as (i), the filler demotable",
                  f"-p zipf -s 1024 -H 256 -F {CAP_ROOM_MIB} -w", 20),
    "k": Workload("fast node full and nothing demotable: locked filler to "
                  f"{FULL_ROOM_MIB} MiB above the high watermark; 128 MiB "
                  "hot in 512 MiB",
                  f"-p uniform -s 512 -H 128 -F {FULL_ROOM_MIB} -w -L", 20),
    "l": Workload("512 processes, each 1 MiB hot in 3 MiB (1536 MiB on the "
                  "slow node)",
                  f"-p uniform -P 512 -s 3 -H 1 -k {MANY_SAMPLE_PAGES}", 20),
    "m": Workload("head-of-line blocking: 4 processes of 256 MiB (64 MiB "
                  "hot) beside 128 of 4 MiB (1 MiB hot)",
                  f"-p uniform -P 4:256,128:4 -s 4 -H 1 "
                  f"-k {MANY_SAMPLE_PAGES}", 20),
    "t": Workload("8 threads of one process share a 192 MiB hot set, "
                  "uniform, in 768 MiB on the slow node",
                  "-p uniform -s 768 -H 192 -T 8", 20),
    "s": Workload(f"memcached: {SERVER_KEYS} keys of {SERVER_VALUE} bytes "
                  "pushed to the slow node (migratepages), Zipf gets (s = 1) "
                  f"over {SERVER_CONNS} connections; hot set: the top "
                  f"{SERVER_HOT_PCT}% of the keys",
                  f"memcached -z 1 {SERVER_ARGS}", 25),
    "u": Workload(f"memcached as (s), hot-spot gets: {SERVER_HOT_GETS_PCT}% "
                  f"of them evenly over the top {SERVER_HOT_PCT}% of the "
                  "keys, the rest evenly over the others",
                  f"memcached -D {SERVER_HOT_GETS_PCT} {SERVER_ARGS}", 25),
    "v": Workload("memcached as (u), without its LRU crawler and LRU "
                  "maintainer threads (-o no_lru_crawler,no_lru_maintainer), "
                  "which read items in the background: the clients' gets "
                  "are the only accesses to the items",
                  f"memcached -Q -D {SERVER_HOT_GETS_PCT} {SERVER_ARGS}", 25),
}

# Workloads that run a server (bench.sh starts it, harness/workloads/
# mcbench.c drives it) rather than tierbench: their own table columns.
SERVER_WORKLOADS = ("s", "u", "v")
# Their samples: numa_maps and move_pages() of every item page once a
# second (a sample of (s) takes about a tenth of that under TCG).
SERVER_SAMPLE_MS = 1000
# tierbench's samples.
SAMPLE_MS = 500

# The workloads of a full run: (h) only checks that the scan-cost
# optimisations do not slow a set with no cold memory to save on, and is
# left out to keep the full run well within 40 minutes; WORKLOADS=h runs
# it.  So are (l) and (m), the many-process workloads (each run takes
# longer to set up): WORKLOADS=l,m runs them.
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
WORKLOAD_CONFIGS: dict[str, tuple[str, ...]] = {
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

# Marks the Nth run of a configuration named more than once (bench.sh
# strips it before setting the configuration up).
RUN_MARK = "#"
# name: what it is (bench.sh sets each up)
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
# More for workloads that start hundreds of processes.
# (s), (u), (v): loading, mapping and pushing 590 MiB, and getting every
# key back.
RUN_SETUP_EXTRA_S = {"l": 45, "m": 30, **{w: 150 for w in SERVER_WORKLOADS}}
# The boot itself, in the time budget.
BOOT_S = 120

QUICK_WORKLOADS = ("a", "c", "f")
QUICK_CONFIGS = ("numab", "kmmscand", "damon-paddr", "kmm-all-off",
                 "oracle")
QUICK_SECONDS = 12


def base_config(label: str) -> str:
    """The configuration of a run label: without its "#N" run mark."""
    return label.partition(RUN_MARK)[0]


def known_config(name: str) -> bool:
    """Whether bench.sh can set NAME up (a "+mglru" one: without it)."""
    name = name.removesuffix(MGLRU_SUFFIX)
    return (name in CONFIGS or bool(KNOBS_CONFIG_RE.match(name))
            or bool(DAMON_QUOTA_RE.match(name)))


def describe_config(label: str) -> str:
    """What the run label LABEL measures, in words."""
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


def run_labels(configs: Iterable[str]) -> list[str]:
    """configs, with "#N" added to the Nth (N >= 2) run of a repeated one.

    Each label is a column of its own in the table: a configuration named
    twice measures how much it varies within one boot.
    """
    seen: dict[str, int] = {}
    labels = []
    for c in configs:
        seen[c] = seen.get(c, 0) + 1
        labels.append(c if seen[c] == 1 else f"{c}{RUN_MARK}{seen[c]}")
    return labels


def workload_configs(w: str, configs: Sequence[str],
                     chosen: bool) -> list[str]:
    """The run labels of configs that workload w runs.

    Every one if CONFIGS= chose them; else those WORKLOAD_CONFIGS allows.
    """
    if chosen or w not in WORKLOAD_CONFIGS:
        return list(configs)
    return [c for c in configs if c in WORKLOAD_CONFIGS[w]]


def run_seconds(w: str, quick: bool) -> int:
    """How long a run of workload w lasts (tierbench's or mcbench's -t)."""
    return QUICK_SECONDS if quick else WORKLOADS[w].seconds


def make_plan(workloads: Sequence[str], configs: Sequence[str], quick: bool,
              chosen: bool = False) -> list[str]:
    """Lines for bench.sh; configurations interleaved within a workload."""
    lines = []
    for w in workloads:
        wl = WORKLOADS[w]
        interval = SERVER_SAMPLE_MS if w in SERVER_WORKLOADS else SAMPLE_MS
        for c in workload_configs(w, configs, chosen):
            lines.append(f"{c} {w} {wl.rate_limit_mbps or '-'} {wl.args} "
                         f"-t {run_seconds(w, quick)} -i {interval} "
                         f"-S {SEED}")
    return lines


def time_budget(workloads: Sequence[str], configs: Sequence[str],
                quick: bool, chosen: bool) -> int:
    """Seconds one boot may take for the plan: the boot, and twice what
    every run should take."""
    return BOOT_S + 2 * sum(
        run_seconds(w, quick) + RUN_SETUP_S + RUN_SETUP_EXTRA_S.get(w, 0)
        for w in workloads for _ in workload_configs(w, configs, chosen))


def choose(quick: bool, workloads: Sequence[str] | None,
           configs: Sequence[str] | None,
           default_workloads: Sequence[str] | None = None,
           ) -> tuple[tuple[str, ...], list[str], bool]:
    """The workloads and the run labels of the configurations to run, and
    whether CONFIGS= chose them; dies on an unknown one."""
    chosen = configs is not None
    chosen_workloads = tuple(workloads or default_workloads or (
        QUICK_WORKLOADS if quick else FULL_WORKLOADS))
    configs = configs or (QUICK_CONFIGS if quick else DEFAULT_CONFIGS)
    for w in chosen_workloads:
        if w not in WORKLOADS:
            die(f"unknown workload {w}; known: {' '.join(WORKLOADS)}")
    for c in configs:
        if not known_config(c):
            die(f"unknown configuration {c}; known: {' '.join(CONFIGS)}, "
                "or kmmscand:knob=value[:knob=value...], or "
                "damon-paddr:ms=N[:bytes=N][:reset_interval_ms=N], each with "
                f"{MGLRU_SUFFIX} after it or not")
    server_only = [c for c in configs
                   if base_config(c).removesuffix(MGLRU_SUFFIX)
                   in SERVER_ONLY_CONFIGS]
    others = [w for w in chosen_workloads if w not in SERVER_WORKLOADS]
    if server_only and others:
        die(f"{' '.join(server_only)} runs with server workloads only "
            f"({' '.join(SERVER_WORKLOADS)}), not {' '.join(others)}")
    return chosen_workloads, run_labels(configs), chosen


def full_run(quick: bool, workloads: Iterable[str],
             configs: Iterable[str]) -> bool:
    """Whether a run speaks for the series: not QUICK=1, and every workload
    and configuration of the default plan in it (more are allowed)."""
    return (not quick and set(FULL_WORKLOADS) <= set(workloads)
            and set(DEFAULT_CONFIGS) <= set(configs))
