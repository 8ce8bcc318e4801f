"""The guest's side of make bench, as lines: bench.sh's output -> Run records.

harness/guest/bench.sh brackets each run with "B <config> <workload>" and
"E <status>"; in between, the workload (tierbench or mcbench) prints a
line per sample ("S key=value ..."), a result line ("R ..."), the vmstat
deltas over the run ("V ..."), and bench.sh adds the migrate_pages()
times of the run ("M ...") and, after a DAMON run, its scheme's
statistics ("D ...").  Before the first run ptecal prints its line
("P ..."), and "bench.sh: done" ends the plan.  Lines of anything else
(the kernel's, the workloads' own notes) are passed through as notes or
left out.

The parser only records; what to show of each run is progress.py's.
"""

import re
from dataclasses import dataclass, field
from typing import Any

# bench.sh's last line: it went through the whole plan.
DONE_LINE = "bench.sh: done"
START_PREFIX = "B "
END_PREFIX = "E "
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
# Lines outside a run worth showing: the tiers, bench.sh's own notes.
PLAN_NOTES = ("tiers:", "bench.sh:")
# Lines within a run worth showing: the workloads' and the filler's notes.
RUN_NOTES = ("tierbench:", "filler:", "mcbench:")

# A line's figures by name: every value the guest prints is a number.
Figures = dict[str, float]


def kv(text: str) -> Figures:
    """The "key=value" tokens of text, as numbers.

    A token that is not a number (none of the guest's are) is left out
    rather than kept as text: every consumer does arithmetic on them.
    """
    out: Figures = {}
    for tok in text.split():
        k, _, v = tok.partition("=")
        try:
            out[k] = float(v)
        except ValueError:
            continue
    return out


@dataclass
class Run:
    """One run of the plan: a workload under a configuration.

    config is the run label (a configuration, "#N" after the Nth run of a
    repeated one); samples, result, vmstat, copy, damon: the S lines, the
    R line, the V line, the M line and the D line, as figures; status:
    the E line's exit status, None if the run did not end.
    """

    config: str
    workload: str
    samples: list[Figures] = field(default_factory=list)
    result: Figures | None = None
    status: int | None = None
    vmstat: Figures | None = None
    copy: Figures | None = None
    damon: Figures | None = None

    @property
    def ok(self) -> bool:
        """It ended with status 0 and gave a result."""
        return self.status == 0 and self.result is not None

    @property
    def name(self) -> str:
        return f"{self.workload}/{self.config}"

    def to_json(self) -> dict[str, Any]:
        """As bench.json's "runs" hold it: the lines the run had."""
        out: dict[str, Any] = {"config": self.config,
                               "workload": self.workload,
                               "samples": self.samples,
                               "result": self.result, "status": self.status}
        for key in ("vmstat", "copy", "damon"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "Run":
        """The inverse of to_json()."""
        return cls(config=doc["config"], workload=doc["workload"],
                   samples=list(doc.get("samples") or []),
                   result=doc.get("result"), status=doc.get("status"),
                   vmstat=doc.get("vmstat"), copy=doc.get("copy"),
                   damon=doc.get("damon"))


@dataclass(frozen=True)
class Event:
    """What a line told, for whoever shows progress.

    kind: "start" (a run began), "result" (its R line), "damon" (its D
    line), "end" (its E line), "calibration" (ptecal's P line), "note" (a
    line worth showing as it is, in text), "done" (the plan's end).
    """

    kind: str
    run: Run | None = None
    text: str = ""


class Parser:
    """Turns the guest's lines, one at a time, into Run records."""

    def __init__(self) -> None:
        self.runs: list[Run] = []
        self.cur: Run | None = None
        self.done = False
        self.calibration: Figures | None = None

    def line(self, text: str) -> Event | None:
        """Takes one line; returns what it told, or None for nothing."""
        text = text.rstrip("\n")
        if text == DONE_LINE:
            self.done = True
            return Event("done", text=text)
        if text.startswith(START_PREFIX):
            parts = text.split()
            if len(parts) != 3:
                return None
            self.cur = Run(config=parts[1], workload=parts[2])
            self.runs.append(self.cur)
            return Event("start", self.cur)
        cur = self.cur
        if cur is None:
            m = PTECAL_RE.match(text)
            if m:
                self.calibration = kv(m.group(1))
                return Event("calibration", text=text)
            if text.startswith(PLAN_NOTES):
                return Event("note", text=text)
            return None
        return self._run_line(cur, text)

    def _run_line(self, cur: Run, text: str) -> Event | None:
        if m := SAMPLE_RE.match(text):
            cur.samples.append(kv(m.group(1)))
        elif m := RESULT_RE.match(text):
            cur.result = kv(m.group(1))
            return Event("result", cur)
        elif m := DAMON_RE.match(text):
            cur.damon = kv(m.group(1))
            return Event("damon", cur)
        elif m := COPY_RE.match(text):
            cur.copy = kv(m.group(1))
        elif m := VMSTAT_RE.match(text):
            cur.vmstat = kv(m.group(1))
        elif text.startswith(END_PREFIX):
            try:
                cur.status = int(text.split()[1])
            except (IndexError, ValueError):
                return None
            return Event("end", cur)
        elif text.startswith(RUN_NOTES):
            return Event("note", cur, text)
        return None


def parse(lines: list[str] | str) -> Parser:
    """A Parser fed every line of lines (a list, or text)."""
    p = Parser()
    for text in (lines.splitlines() if isinstance(lines, str) else lines):
        p.line(text)
    return p
