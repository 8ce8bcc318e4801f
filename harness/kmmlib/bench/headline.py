"""The headline of make bench: the mechanisms side by side, per workload.

One row per workload: the modeled slowdown under NUMA balancing's
tiering mode, kmmscand and DAMON, the oracle's for reference, which
mechanism is lowest, and what each cost in CPU.  What "lowest" may claim
depends on how many runs there are of each:

- several runs of a configuration (CONFIGS= naming it more than once)
  give a range, lowest to highest; two mechanisms differ only where their
  ranges do not overlap, and the ones whose ranges overlap the lowest
  are even with it;
- one run each gives no measure of noise: only figures equal as shown
  are called even, and the headline says that it rests on one run.

Figures are compared as they are shown (two decimals): 2.63x against
2.63x is even, whatever the digits after.
"""

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .catalogue import base_config
from .model import VM_LATENCIES, Latencies, Row, Table, runs_of
from .render import Cells, aligned, markdown_table

# (configuration, name, short name): the mechanisms the headline compares.
MECHANISMS = (("numab", "NUMA balancing", "NUMA bal."),
              ("kmmscand", "kmmscand", "kmmscand"),
              ("damon-paddr", "DAMON", "DAMON"))
# Configurations that are references, not mechanisms.
REFERENCES = ("none", "oracle")
# The digits figures are shown and compared with.
DIGITS = 2


@dataclass(frozen=True)
class Spread:
    """A figure over a configuration's runs of one workload, as shown:
    lowest, highest, and how many runs."""

    low: float
    high: float
    runs: int

    @classmethod
    def of(cls, values: Iterable[float | None]) -> "Spread | None":
        """The spread of the known values (rounded to DIGITS), or None."""
        shown = [round(v, DIGITS) for v in values if v is not None]
        if not shown:
            return None
        return cls(min(shown), max(shown), len(shown))

    def overlaps(self, other: "Spread") -> bool:
        return self.low <= other.high and other.low <= self.high

    def text(self, unit: str = "") -> str:
        if self.low == self.high:
            return f"{self.low:.{DIGITS}f}{unit}"
        return f"{self.low:.{DIGITS}f}-{self.high:.{DIGITS}f}{unit}"


def spread_text(s: Spread | None, unit: str = "") -> str:
    return "-" if s is None else s.text(unit)


@dataclass(frozen=True)
class Verdict:
    """Which mechanisms are lowest: one is a win, several are even.

    lowest: their configurations, in the order compared; compared: how
    many mechanisms had a figure; single: every one of them had one run.
    """

    lowest: tuple[str, ...]
    compared: int
    single: bool

    @property
    def even(self) -> bool:
        return len(self.lowest) > 1

    def text(self, names: Mapping[str, str]) -> str:
        if self.compared < 2:
            return "-"
        if len(self.lowest) == self.compared:
            return "even"
        return " = ".join(names.get(c, c) for c in self.lowest)


def verdict(spreads: Mapping[str, Spread]) -> Verdict | None:
    """The verdict on the mechanisms' figures (lower is better); None
    without any.

    The lowest is the one whose range starts lowest (then ends lowest);
    every mechanism whose range overlaps its range is even with it.  With
    one run each, ranges are single figures: only equal ones are even.
    """
    if not spreads:
        return None
    best = min(spreads, key=lambda c: (spreads[c].low, spreads[c].high))
    lowest = tuple(c for c, s in spreads.items()
                   if s.overlaps(spreads[best]))
    return Verdict(lowest, len(spreads),
                   all(s.runs == 1 for s in spreads.values()))


def spread_of(rows: Sequence[Row], attr: str) -> Spread | None:
    """The spread of a Row attribute (or property) over rows."""
    return Spread.of(getattr(r, attr) for r in rows)


@dataclass
class HeadlineRow:
    """A workload's line: per configuration, its slowdown; the verdict;
    and what the mechanisms cost (CPU s, the application's system s)."""

    workload: str
    slowdown: dict[str, Spread | None]
    oracle: Spread | None
    verdict: Verdict | None
    kmmscand_cpu: Spread | None = None
    damon_cpu: Spread | None = None
    app_sys: dict[str, Spread | None] = field(default_factory=dict)


@dataclass
class Headline:
    """The mechanisms side by side; configs: (configuration, name, short
    name) of each column."""

    configs: list[tuple[str, str, str]]
    rows: list[HeadlineRow]
    lat: Latencies = VM_LATENCIES

    @property
    def single(self) -> bool:
        """Every figure compared rests on one run."""
        return all(r.verdict is None or r.verdict.single for r in self.rows)

    def runs_text(self, row: HeadlineRow) -> str:
        counts = [s.runs if s else 0 for s in row.slowdown.values()]
        known = [n for n in counts if n]
        if known and all(n == known[0] for n in known):
            return str(known[0])
        return "/".join(str(n) if n else "-" for n in counts)

    def cells(self, short: bool) -> tuple[list[str], list[list[str]]]:
        """(header, rows) with full names (short: the terminal's)."""
        names = {c: (s if short else n) for c, n, s in self.configs}
        mech = [c for c, _, _ in self.configs]
        sys_of = [c for c in ("numab", "kmmscand") if c in mech]
        header = (["workload"] + [names[c] for c in mech]
                  + ["oracle", "lowest", "runs"])
        if "kmmscand" in mech:
            header.append("kmmscand" if short else "kmmscand CPU s")
        if "damon-paddr" in mech:
            header.append("DAMON" if short else "DAMON CPU s")
        header += [names[c] if short else f"app sys s {names[c]}"
                   for c in sys_of]
        rows = []
        for r in self.rows:
            cells = ([f"({r.workload})"]
                     + [spread_text(r.slowdown.get(c), "x") for c in mech]
                     + [spread_text(r.oracle, "x"),
                        r.verdict.text(names) if r.verdict else "-",
                        self.runs_text(r)])
            if "kmmscand" in mech:
                cells.append(spread_text(r.kmmscand_cpu))
            if "damon-paddr" in mech:
                cells.append(spread_text(r.damon_cpu))
            cells += [spread_text(r.app_sys.get(c)) for c in sys_of]
            rows.append(cells)
        return header, rows

    def groups(self) -> list[tuple[str, int, int]]:
        """The terminal's column groups: (label, first, last column)."""
        n = len(self.configs)
        out = [("modeled slowdown", 1, n + 1)]
        mech = [c for c, _, _ in self.configs]
        cpu = sum(c in mech for c in ("kmmscand", "damon-paddr"))
        first = n + 4
        if cpu:
            out.append(("CPU s", first, first + cpu - 1))
        sys_n = sum(c in mech for c in ("numab", "kmmscand"))
        if sys_n:
            out.append(("app sys s", first + cpu, first + cpu + sys_n - 1))
        return out

    def noise_text(self) -> str:
        """What the verdicts may claim, given the runs."""
        if self.single:
            return ("Each figure is one run: a difference is not measured "
                    "against the noise (name a configuration more than once "
                    "in CONFIGS= to measure it), so only equal figures are "
                    "called even.")
        return ("runs: each configuration's runs of the workload; where "
                "there are several, a cell gives the lowest and highest "
                "figure, and two mechanisms differ only where those ranges "
                "do not overlap (with one run, only equal figures are "
                "called even).")

    def columns_text(self) -> str:
        return ("lowest: the mechanism with the lowest slowdown, \"A = B\" "
                "or \"even\" where they are even, figures compared as "
                "shown. CPU s: the kmmscand thread and its migration "
                "workers (kmmscand), the kdamond threads (DAMON); "
                "app sys s: the application's "
                "system time, hint faults included.")

    def legend(self) -> str:
        return (
            "Modeled slowdown over the run against the HMAT latencies "
            f"({self.lat.fast_ns:g} ns fast, {self.lat.slow_ns:g} ns slow; "
            "1.00x: every access served by the fast node), each mechanism "
            "at its defaults, lower is better. " + self.columns_text()
            + " " + self.noise_text())

    def markdown(self) -> list[str]:
        header, rows = self.cells(short=False)
        return (["Mechanisms side by side:", ""]
                + markdown_table(header, rows) + [self.legend(), ""])


def headline(table: Table, lat: Latencies = VM_LATENCIES) -> Headline | None:
    """The headline of table; None if no mechanism ran."""
    configs = [m for m in MECHANISMS
               if any(runs_of(cfgs, m[0]) for cfgs in table.values())]
    if not configs:
        return None
    rows = []
    for w in sorted(table):
        cfgs = table[w]
        slow = {c: spread_of(runs_of(cfgs, c), "slowdown")
                for c, _, _ in configs}
        known = {c: s for c, s in slow.items() if s is not None}
        rows.append(HeadlineRow(
            workload=w, slowdown=slow,
            oracle=spread_of(runs_of(cfgs, "oracle"), "slowdown"),
            verdict=verdict(known),
            kmmscand_cpu=spread_of(runs_of(cfgs, "kmmscand"),
                                   "kmmscand_cpu_s"),
            damon_cpu=spread_of(runs_of(cfgs, "damon-paddr"), "damon_cpu_s"),
            app_sys={c: spread_of(runs_of(cfgs, c), "app_sys_s")
                     for c in ("numab", "kmmscand")}))
    return Headline(configs, rows, lat)


def other_configs(table: Table) -> list[str]:
    """The configurations that ran besides the mechanisms and references,
    in the order first seen (variants: ablations, knobs, +mglru)."""
    mech = {c for c, _, _ in MECHANISMS}
    seen: dict[str, None] = {}
    for cfgs in table.values():
        for label in cfgs:
            c = base_config(label)
            if c not in mech and c not in REFERENCES:
                seen.setdefault(c)
    return list(seen)


def others_cells(table: Table, configs: Sequence[str],
                 ) -> tuple[list[str], list[Cells]]:
    """(header, rows): the other configurations' slowdowns per workload."""
    rows: list[Cells] = []
    for w in sorted(table):
        rows.append([f"({w})"] + [
            spread_text(spread_of(runs_of(table[w], c), "slowdown"), "x")
            for c in configs])
    return ["workload"] + list(configs), rows


def terminal(h: Headline | None, table: Table,
             others: Sequence[str] = ()) -> list[str]:
    """The headline as make bench ends with it: the mechanisms side by
    side, and then others (configurations CONFIGS= chose besides them)."""
    out = []
    if h is not None:
        header, rows = h.cells(short=True)
        out += ["Mechanisms side by side (lower is better; 1.00x: every "
                "access on the fast node):"]
        out += aligned(header, rows, groups=h.groups(),
                       left=(header.index("lowest"),))
        out += [""] + textwrap.wrap(h.columns_text() + " " + h.noise_text(),
                                    79)
    if others:
        out += ["", "Other configurations, modeled slowdown:"]
        out += aligned(*others_cells(table, others))
    return out
