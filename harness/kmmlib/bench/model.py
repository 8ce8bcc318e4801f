"""The figures of make bench: Run records -> a Row per (workload, run label).

Under TCG absolute times mean little, so a row gives every figure also
as a ratio to the NUMA balancing run (times, cost) or to the oracle run
(throughput) of the same invocation.  TCG also runs both nodes at one
speed, so what placement gains is modeled: the workload knows each
page's share of the accesses and where it is, and the access latencies
of the two nodes (Latencies) turn the share served by the fast node into
a mean latency, and that into a slowdown against an all-fast placement.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .catalogue import RUN_SETUP_S, SERVER_WORKLOADS, base_config, run_seconds
from .guest import Figures, Run

# The share of the run, at its end, that "tail" figures average over.
TAIL_SHARE = 0.25
# Base pages in a MiB (x86-64's 4 KiB pages, as in the VM).
PAGES_PER_MIB = 256

# Seconds in all that tierbench's real-time stall watch may wake late in a
# run (stall_total_s) before the run is named as stalled: a few tenths come
# with any run under TCG; whole seconds came with runs whose CPU figures
# were out of proportion (a thread charged more CPU than the run lasted).
STALL_LIMIT_S = 1.0
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


@dataclass(frozen=True)
class Latencies:
    """The access latencies of the two nodes from the CPUs of the fast
    one, in ns: what a hit on the fast node and a miss to the slow one
    cost in the model."""

    fast_ns: float
    slow_ns: float


# The latencies vm.HMAT gives the VM's two nodes (runner.check_hmat()
# keeps them in step); a host run passes its own HMAT's.
VM_LATENCIES = Latencies(fast_ns=80, slow_ns=250)


# ---- the modeled placement ----

def ratio(a: float | None, b: float | None) -> float | None:
    """a / b; None unless both are known, b > 0 and a >= 0."""
    if a is None or b is None or b <= 0 or a < 0:
        return None
    return a / b


def modeled_latency_ns(hit: float, lat: Latencies = VM_LATENCIES) -> float:
    """Mean access latency when a share hit of the accesses is fast."""
    return hit * lat.fast_ns + (1 - hit) * lat.slow_ns


def modeled_slowdown(hit: float, lat: Latencies = VM_LATENCIES) -> float:
    """Mean access latency against an all-fast placement's."""
    return modeled_latency_ns(hit, lat) / lat.fast_ns


def hit_vs_oracle(sample: Figures) -> float | None:
    """hit over the best hit as many fast-node pages could give.

    None when the workload has no page on the fast node (nothing placed,
    so nothing placed badly), or for samples of a tierbench without hit.
    """
    ohit = sample.get("ohit")
    if ohit is None or ohit <= 0:
        return None
    return sample["hit"] / ohit


def time_average(samples: Sequence[Figures],
                 value: Callable[[Figures], float | None],
                 since: float = 0.0) -> float | None:
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


def tail_start(samples: Sequence[Figures]) -> float:
    """When the run's tail (its last TAIL_SHARE) starts, s."""
    return samples[-1]["t"] * (1 - TAIL_SHARE) if samples else 0.0


def run_slowdown(samples: Sequence[Figures],
                 lat: Latencies = VM_LATENCIES) -> float | None:
    """The modeled slowdown over the run."""
    def slowdown(s: Figures) -> float | None:
        hit = s.get("hit")
        return None if hit is None else modeled_slowdown(hit, lat)
    return time_average(samples, slowdown)


def run_hit_vs_oracle(samples: Sequence[Figures],
                      tail: bool = False) -> float | None:
    """hit/oracle over the run, or over its tail."""
    return time_average(samples, hit_vs_oracle,
                        tail_start(samples) if tail else 0.0)


def slow_exposure(samples: Sequence[Figures]) -> float | None:
    """Mean share of the hot set left on the slow node over the run, %.

    TCG runs every node at the same speed, so the throughput figures show
    only what promotion costs the application (faults, flushes, CPU), not
    what it gains.  This is the gain side: with uniform access within the
    hot set, it is the share of hot accesses that slow memory served.
    """
    if not samples:
        return None
    return sum(100 - s["hot"] for s in samples) / len(samples)


@dataclass(frozen=True)
class Placement:
    """The modeled figures of a run, time-averaged over it."""

    slowdown: float | None
    modeled_latency_ns: float | None
    hit_pct: float | None
    hit_vs_oracle: float | None
    tail_hit_vs_oracle: float | None


def placement(samples: Sequence[Figures],
              lat: Latencies = VM_LATENCIES) -> Placement:
    hit = time_average(samples, lambda s: s.get("hit"))
    return Placement(
        slowdown=run_slowdown(samples, lat),
        modeled_latency_ns=None if hit is None else modeled_latency_ns(hit,
                                                                       lat),
        hit_pct=None if hit is None else 100 * hit,
        hit_vs_oracle=run_hit_vs_oracle(samples),
        tail_hit_vs_oracle=run_hit_vs_oracle(samples, tail=True))


# ---- counters and rates ----

def pages_mb(pages: float | None) -> float | None:
    return None if pages is None else pages / PAGES_PER_MIB


def counter_delta(deltas: Mapping[str, float], prefix: str) -> float | None:
    """A counter's delta; a prefix ending in "_" sums every counter it
    starts (None if there is none)."""
    if prefix.endswith("_"):
        hits = [v for k, v in deltas.items() if k.startswith(prefix)]
        return sum(hits) if hits else None
    return deltas.get(prefix)


def copy_rate(res: Figures) -> float | None:
    """Promotion MB/s while promotion ran: the pages of the traced
    promotion calls over the time from the first call's start to the last
    call's end (bench.sh's M line), free of the 0.5 s sampling and of the
    time before the first promotion.  None where nothing was traced."""
    span, pages = res.get("promote_span_s"), res.get("promote_span_pages")
    if not span or not pages:
        return None
    return pages / PAGES_PER_MIB / span


def gave_up(res: Figures) -> str | None:
    """Whether kswapd had given the fast node up, at the run's start and
    end, as "start/end" (1: yes); None from a tierbench without it."""
    start = res.get("fast_unreclaimable_start")
    end = res.get("fast_unreclaimable_end")
    if start is None or end is None:
        return None
    return f"{start:.0f}/{end:.0f}"


def mechanism_cpu(res: Figures) -> float:
    """The promotion threads' CPU time in a run: kmmscand's, DAMON's."""
    return res["kmmscand_cpu_s"] + res.get("damon_cpu_s", 0)


@dataclass(frozen=True)
class Promoted:
    """What a run promoted: MB, and its rates (MB/s over the time of the
    last promotion, and in the best sample)."""

    promoted_mb: float | None
    mbps: float | None
    peak_mbps: float | None


def promoted_figures(res: Figures, damon: Figures | None,
                     deltas: Mapping[str, float]) -> Promoted:
    """promoted MB and rates: pgpromote_success, which tierbench reads.

    DAMOS migrates with migrate_pages(), which does not count promotions:
    for a DAMON run, the pages migrated during the run that were not
    demotions (pgmigrate_success - pgdemote_*), and no rates (tierbench
    samples pgpromote_success).  Its scheme's sz_applied is no measure of
    the run: DAMON is on from before tierbench places its memory.
    """
    if damon is None:
        return Promoted(res["promoted_mb"], res["mbps"], res["peak_mbps"])
    moved = counter_delta(deltas, "pgmigrate_success")
    demoted = counter_delta(deltas, "pgdemote_") or 0
    return Promoted(None if moved is None else
                    pages_mb(max(moved - demoted, 0)), None, None)


# ---- the rows ----

@dataclass(kw_only=True)
class Row:
    """The figures of one run that every workload's table has.

    Times in s, shares in %, ratios as fractions; None where the run
    could not give the figure (no such line, or nothing to divide by).
    """

    slowdown: float | None
    modeled_latency_ns: float | None
    hit_pct: float | None
    hit_vs_oracle: float | None
    tail_hit_vs_oracle: float | None
    t50_s: float | None
    t90_s: float | None
    t90_vs_numab: float | None
    hot_on_slow_pct: float | None
    cold_promoted_pct: float
    ops_vs_oracle: float | None
    kmmscand_cpu_s: float
    damon_cpu_s: float | None
    app_sys_s: float
    kswapd_cpu_s: float | None
    hint_faults: float
    ptes: float
    promoted_mb: float | None
    mbps: float | None
    peak_mbps: float | None
    demoted_pages: float
    vmstat: Figures
    damon: Figures | None

    def to_json(self) -> dict[str, Any]:
        """As bench.json's "table" holds it."""
        return asdict(self)


@dataclass(kw_only=True)
class TierRow(Row):
    """A tierbench run's row (see tables.COLUMNS)."""

    t90_worst_s: float | None
    t90_median_s: float | None
    procs_t90: float | None
    tail_ops_vs_oracle: float | None
    kmmscand_copy_s: float | None
    app_copy_s: float | None
    cost_vs_numab: float | None
    copy_mbps: float | None
    pingpong_pages: float
    tlb_ipis_per_s: float | None
    pingpong_events: float | None
    kcompactd_cpu_s: float | None
    min_free_over_min_mib: float | None
    kswapd_gave_up: str | None


@dataclass(kw_only=True)
class ServerRow(Row):
    """A server workload's row (see tables.SERVER_COLUMNS): what the
    client saw, what the server paid, where its memory went."""

    ops_per_s: float
    tail_ops_per_s: float
    lat_mean_us: float
    lat_p99_us: float
    tail_lat_p99_us: float
    server_user_s: float
    server_sys_s: float
    server_sys_us_per_get: float | None
    hot_mib: float
    promoted_vs_hot: float | None
    fast_mib_start: float
    fast_mib_end: float
    keys: float
    lost_keys: float
    lost_gets: float


# workload -> run label -> its row
Table = dict[str, dict[str, Row]]


def _time(v: float) -> float | None:
    """A time the workload gives as -1 for never."""
    return v if v >= 0 else None


def _common(run: Run, res: Figures, nb: Figures | None,
            orc: Figures | None, lat: Latencies) -> dict[str, Any]:
    """The fields of Row, from the run and its workload's numab and oracle
    results."""
    deltas = run.vmstat or {}
    promoted = promoted_figures(res, run.damon, deltas)
    t90 = _time(res["t90"])
    return dict(
        **asdict(placement(run.samples, lat)),
        t50_s=_time(res["t50"]), t90_s=t90,
        t90_vs_numab=ratio(t90, nb["t90"] if nb else None),
        hot_on_slow_pct=slow_exposure(run.samples),
        cold_promoted_pct=res["cold_promoted_pct"],
        ops_vs_oracle=ratio(res["ops_per_s"], orc["ops_per_s"] if orc else None),
        kmmscand_cpu_s=res["kmmscand_cpu_s"],
        damon_cpu_s=res.get("damon_cpu_s"),
        kswapd_cpu_s=res.get("kswapd_cpu_s"),
        hint_faults=res["hint_faults"], ptes=res["ptes"],
        promoted_mb=promoted.promoted_mb, mbps=promoted.mbps,
        peak_mbps=promoted.peak_mbps,
        demoted_pages=res["demoted_pages"],
        vmstat=deltas, damon=run.damon)


def tier_row(run: Run, res: Figures, nb: Figures | None,
             orc: Figures | None, seconds: float,
             lat: Latencies = VM_LATENCIES) -> TierRow:
    """The row of a tierbench run; res: its result with its copy times,
    nb, orc: those of its workload's numab and oracle runs, if any;
    seconds: the run's length."""
    def cost(r: Figures) -> float:
        return mechanism_cpu(r) + r["app_sys_s"]
    return TierRow(
        **_common(run, res, nb, orc, lat),
        t90_worst_s=_time(res.get("t90_worst", -1)),
        t90_median_s=_time(res.get("t90_median", -1)),
        procs_t90=res.get("procs_t90"),
        tail_ops_vs_oracle=ratio(res["tail_ops_per_s"],
                                 orc["tail_ops_per_s"] if orc else None),
        kmmscand_copy_s=res.get("kmmscand_copy_s"),
        app_copy_s=res.get("app_copy_s"),
        app_sys_s=res["app_sys_s"],
        cost_vs_numab=ratio(cost(res), cost(nb) if nb else None),
        copy_mbps=copy_rate(res),
        pingpong_pages=res["pingpong_pages"],
        # per second of this run: a QUICK=1 run is shorter than a full one
        tlb_ipis_per_s=ratio(res.get("tlb_shootdowns"), seconds),
        pingpong_events=res.get("pingpong_events"),
        kcompactd_cpu_s=res.get("kcompactd_cpu_s"),
        min_free_over_min_mib=res.get("min_free_over_min_mib"),
        kswapd_gave_up=gave_up(res))


def server_row(run: Run, res: Figures, nb: Figures | None,
               orc: Figures | None,
               lat: Latencies = VM_LATENCIES) -> ServerRow:
    """The row of a server workload's run (see tier_row())."""
    common = _common(run, res, nb, orc, lat)
    return ServerRow(
        **common,
        app_sys_s=res["server_sys_s"],
        ops_per_s=res["ops_per_s"], tail_ops_per_s=res["tail_ops_per_s"],
        lat_mean_us=res["lat_mean_us"], lat_p99_us=res["lat_p99_us"],
        tail_lat_p99_us=res["tail_lat_p99_us"],
        server_user_s=res["server_user_s"],
        server_sys_s=res["server_sys_s"],
        server_sys_us_per_get=ratio(1e6 * res["server_sys_s"], res["ops"]),
        hot_mib=res["hot_mib"],
        promoted_vs_hot=ratio(common["promoted_mb"], res["hot_mib"]),
        fast_mib_start=res["fast_mib_start"],
        fast_mib_end=res["fast_mib_end"],
        keys=res["keys"],
        lost_keys=res["missing"] + res["mismatched"],
        lost_gets=res["run_misses"] + res["run_mismatched"])


def derive(runs: Iterable[Run], quick: bool,
           lat: Latencies = VM_LATENCIES) -> Table:
    """Per workload and run label, the figures and their ratios; runs that
    failed are left out."""
    by: dict[str, dict[str, tuple[Run, Figures]]] = {}
    for r in runs:
        if r.ok and r.result is not None:
            by.setdefault(r.workload, {})[r.config] = (
                r, dict(r.result, **(r.copy or {})))
    table: Table = {}
    for w, cfgs in by.items():
        nb = cfgs["numab"][1] if "numab" in cfgs else None
        orc = cfgs["oracle"][1] if "oracle" in cfgs else None
        table[w] = {}
        for c, (run, res) in cfgs.items():
            if w in SERVER_WORKLOADS:
                table[w][c] = server_row(run, res, nb, orc, lat)
            else:
                table[w][c] = tier_row(run, res, nb, orc,
                                       run_seconds(w, quick), lat)
    return table


def runs_of(cfgs: Mapping[str, Row], config: str) -> list[Row]:
    """The rows of every run of config (its "#N" repeats too)."""
    return [row for label, row in cfgs.items()
            if base_config(label) == config]


# ---- runs the emulator disturbed ----

def stalled_runs(runs: Iterable[Run], quick: bool) -> list[str]:
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
        res = r.result
        if res is None:
            continue
        seconds = run_seconds(r.workload, quick)
        for key in ("kmmscand_cpu_s", "kswapd_cpu_s", "kcompactd_cpu_s"):
            if (res.get(key) or 0) > seconds + RUN_SETUP_S:
                found.append(f"({r.workload}) {r.config}: "
                             f"{key} {res[key]:.1f} s in a {seconds} s run, "
                             f"application user time "
                             f"{res.get('app_user_s', 0):.1f} s")
        copy = r.copy or {}
        for kind, cpu_key, page_s in COPY_STALL_KINDS:
            secs = copy.get(f"{kind}_copy_max_s") or 0
            pages = copy.get(f"{kind}_copy_max_pages") or 0
            charged = cpu_key is None or (res.get(cpu_key) or 0) >= secs / 2
            if secs > COPY_STALL_S and secs > page_s * pages and charged:
                found.append(f"({r.workload}) {r.config}: one "
                             f"migrate_pages() call of {kind} took "
                             f"{secs:.1f} s for {pages:.0f} "
                             f"page{'' if pages == 1 else 's'}")
        if (res.get("stall_total_s") or 0) > STALL_LIMIT_S:
            found.append(f"({r.workload}) {r.config}: the guest "
                         f"stalled {res['stall_total_s']:.1f} s in all, "
                         f"{res['stall_max_s']:.1f} s at most at once; "
                         f"kmmscand CPU {res.get('kmmscand_cpu_s', 0):.2f} s")
    return found
