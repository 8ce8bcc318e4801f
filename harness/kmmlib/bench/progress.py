"""What make bench shows while the guest runs: a line per run as it goes.

Collector feeds the guest's lines to guest.Parser and prints what each
tells: a run starting, its headline figures when its result comes, DAMON's
scheme statistics, the workloads' own notes.
"""

import time
from collections.abc import Callable

from .catalogue import SERVER_WORKLOADS
from .guest import Event, Figures, Parser, Run
from .model import VM_LATENCIES, Latencies, run_hit_vs_oracle, run_slowdown
from .render import fmt

MIB = 1 << 20
PREFIX = "[bench]"


def worker_t90_text(res: Figures) -> str:
    """The workers' own t90s for the progress line (-1: never)."""
    if res.get("t90_worst") is None:
        return ""
    return (f" (per process: worst {res['t90_worst']:.1f} s, median "
            f"{res['t90_median']:.1f} s, {res['procs_t90']:.0f} got there)")


def server_progress(run: Run, res: Figures,
                    lat: Latencies = VM_LATENCIES) -> str:
    """The progress line of a server workload's run."""
    r = res
    lost = (r["missing"] + r["mismatched"] + r["run_misses"]
            + r["run_mismatched"])
    return (f"slowdown {fmt(run_slowdown(run.samples, lat), '.2f')}x, "
            f"t90 {r['t90']:.1f} s, {r['ops_per_s']:.0f} gets/s, p99 "
            f"{r['lat_p99_us']:.0f} us, server sys {r['server_sys_s']:.2f} s, "
            f"promoted {r['promoted_mb']:.0f} MiB (hot set "
            f"{r['hot_mib']:.0f} MiB), server on the fast node "
            f"{r['fast_mib_end']:.0f} MiB, kmmscand CPU "
            f"{r['kmmscand_cpu_s']:.2f} s, "
            + (f"DATA LOST ({lost:.0f})" if lost else
               f"all {r['keys']:.0f} keys intact"))


def tier_progress(run: Run, r: Figures,
                  lat: Latencies = VM_LATENCIES) -> str:
    """The progress line of a tierbench run."""
    return (f"slowdown {fmt(run_slowdown(run.samples, lat), '.2f')}x, "
            f"hit/oracle {fmt(run_hit_vs_oracle(run.samples), '.2f')}, "
            f"t50 {r['t50']:.1f} s, t90 {r['t90']:.1f} s"
            f"{worker_t90_text(r)}, "
            f"cold promoted {r['cold_promoted_pct']:.1f}%, "
            f"{r['ops_per_s'] / 1e6:.1f} Mops/s, kmmscand CPU "
            f"{r['kmmscand_cpu_s']:.2f} s, DAMON CPU "
            f"{r.get('damon_cpu_s', 0):.2f} s")


def damon_progress(d: Figures) -> str:
    """The progress line of a DAMON run's scheme statistics."""
    return (f"DAMON scheme: applied to {d['damon_nr_applied']:.0f} of "
            f"{d['damon_nr_tried']:.0f} regions tried, "
            f"{d['damon_sz_applied'] / MIB:.0f} of "
            f"{d['damon_sz_tried'] / MIB:.0f} MiB, quota exceeded "
            f"{d['damon_qt_exceeds']:.0f} times")


class Collector:
    """Turns the guest's lines into runs, showing progress as they come.

    total: the runs of the plan; lat: the latencies the progress lines'
    slowdowns are modeled with; clock: the time (tests pass their own).
    """

    def __init__(self, total: int, lat: Latencies = VM_LATENCIES,
                 clock: Callable[[], float] = time.time) -> None:
        self.total = total
        self.lat = lat
        self.clock = clock
        self.parser = Parser()
        self.started = clock()

    @property
    def runs(self) -> list[Run]:
        return self.parser.runs

    @property
    def done(self) -> bool:
        return self.parser.done

    @property
    def calibration(self) -> Figures | None:
        return self.parser.calibration

    def line(self, text: str) -> None:
        ev = self.parser.line(text)
        if ev is not None:
            shown = self.show(ev)
            if shown is not None:
                print(f"{PREFIX} {shown}", flush=True)

    def show(self, ev: Event) -> str | None:
        """The progress line of an event, without PREFIX, or None."""
        run = ev.run
        if ev.kind == "start" and run is not None:
            return (f"{len(self.runs)}/{self.total} workload "
                    f"{run.workload}, {run.config} ...")
        if ev.kind in ("calibration", "note"):
            return ev.text if run is None else f"    {ev.text}"
        if ev.kind == "result" and run is not None and run.result:
            elapsed = f"[{self.clock() - self.started:.0f} s]"
            if run.workload in SERVER_WORKLOADS:
                return (f"    {server_progress(run, run.result, self.lat)}  "
                        f"{elapsed}")
            return f"    {tier_progress(run, run.result, self.lat)}  {elapsed}"
        if ev.kind == "damon" and run is not None and run.damon:
            return f"    {damon_progress(run.damon)}"
        return None
