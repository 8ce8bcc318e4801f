"""make run: the demo workload in the two-tier VM."""

import os
import re

from . import kernel, tree, vm
from .bench.model import modeled_slowdown
from .bench.render import fmt, print_aligned
from .common import HARNESS, LOGS, base_line, build_workload, die, say

DEMO = os.path.join(HARNESS, "guest", "demo.sh")
MODES = ("none", "numab", "kmmscand")
SAMPLE = re.compile(r"^t=\S+ hot_fast=([\d.]+)% cold_fast=([\d.]+)%")
COUNTERS = ("pgpromote_success", "numa_hint_faults", "kmmscand_pte_scanned")


class Summary:
    """Echoes the guest's lines and keeps what the closing table needs."""

    def __init__(self):
        self.modes = {}
        self.cur = None

    def __call__(self, line):
        line = line.rstrip("\n")
        print(line, flush=True)
        line = line.strip()
        m = re.match(r"^== (\w+):", line)
        if m:
            self.cur = self.modes.setdefault(m.group(1), {"hot": []})
            return
        if self.cur is None:
            return
        m = SAMPLE.match(line)
        if m:
            self.cur["hot"].append(float(m.group(1)) / 100)
            self.cur["cold"] = float(m.group(2))
            return
        for key, val in re.findall(r"(\w+)=(-?[\d.]+)", line):
            self.cur[key] = float(val)
        parts = line.split()
        if len(parts) == 2 and parts[0] in COUNTERS:
            self.cur[parts[0]] = int(parts[1])

    def table(self):
        """One line per mode: the hot set's arrival, what it cost, and the
        slowdown against an all-fast placement that the HMAT latencies of
        the two nodes model from where the hot set was each second."""
        def secs(v):
            return "never" if v is None or v < 0 else f"{v:.1f} s"
        rows = []
        for mode, d in self.modes.items():
            hot = d["hot"]
            slow = (sum(modeled_slowdown(h) for h in hot) / len(hot)
                    if hot else None)
            rows.append((mode, secs(d.get("converged50")),
                         secs(d.get("converged90")),
                         f"{d.get('cold', 0):.1f}%",
                         f"{d.get('kmmscand_cpu', 0):.2f} s",
                         f"{d.get('app_sys', 0):.2f} s",
                         str(d.get("numa_hint_faults", 0)),
                         fmt(slow, ".2f") + "x"))
        header = ("mode", "t50", "t90", "cold on fast", "kmmscand CPU",
                  "app system (with setup)", "hint faults",
                  "modeled slowdown")
        print_aligned(header, rows)


def run(seconds):
    tree.refresh()
    say(base_line())
    image = kernel.build("debug")
    hotset = build_workload("hotset")
    say(f"booting the two-tier VM: {seconds} s of hot-set access per mode "
        f"({', '.join(MODES)})")
    summary = Summary()
    res = vm.boot(image, f"sh {DEMO} {hotset} {seconds} {' '.join(MODES)}",
                  timeout=300 + 3 * (seconds + 60), echo=summary,
                  log=os.path.join(LOGS, "demo-console.log"))
    for s in res.splats():
        print("[kmm] kernel splat in the guest log:\n" + s)
    if res.status != 0:
        die(f"the demo failed in the guest (status {res.status}); "
            "see out/logs/demo-console.log")
    print()
    say("the modes side by side (debug kernel, so CPU figures are high; "
        "make bench measures on a release kernel):")
    summary.table()
    return 0
