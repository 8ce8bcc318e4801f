"""make bench: kmmscand against NUMA balancing tiering mode, side by side.

One boot of the release kernel runs every (configuration, workload) pair
of the plan with the same workload arguments and seeds.  The guest script
(harness/guest/bench.sh) sets each configuration up and runs tierbench
(harness/workloads/tierbench.c), which prints a line per sample and a
result line.  Here they become out/bench/bench.json, a table on the terminal
and in out/bench/table.md, and PNG plots (harness/kmmlib/plot.py).

Under TCG absolute times mean little, so the table gives every figure also
as a ratio to the NUMA balancing run (times, cost) or to the oracle run
(throughput) of the same invocation.
"""

import json
import os
import re
import subprocess
import time

from . import deps, kernel, tree, vm
from .common import (HARNESS, LOGS, OUT, REPO, VENV, base_line,
                     build_workload, die, ensure_dir, say)

GUEST = os.path.join(HARNESS, "guest", "bench.sh")
BENCH_OUT = os.path.join(OUT, "bench")
SEED = 42

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
    "f": ("64 processes, each 2 MiB hot in 8 MiB",
          "-p uniform -P 64 -s 8 -H 2", 20, None),
    "g": ("128 MiB hot window moving every 8 s over 384 MiB",
          "-p moving -s 384 -H 128 -m 8", 24, None),
    "h": ("fully hot: all of 192 MiB on the slow node is hot",
          "-p uniform -s 192 -H 192", 20, None),
}

# The workloads of a full run: (h) only checks that the scan-cost
# optimisations do not slow a set with no cold memory to save on, and is
# left out to keep the full run within 30 minutes; WORKLOADS=h runs it.
FULL_WORKLOADS = ("a", "b", "c", "d", "e", "f", "g")

# name: what it is (bench.sh sets each up)
# Marks the Nth run of a configuration named more than once (bench.sh
# strips it before setting the configuration up).
RUN_MARK = "#"
CONFIGS = {
    "none": "no promotion (numa_balancing=0, kmmscand off)",
    "numab": "NUMA balancing tiering mode (numa_balancing=2)",
    "kmmscand": "kmmscand at its defaults (numa_balancing=0)",
    "kmm-no-smart-scan": "kmmscand, smart_scan=0",
    "kmm-no-pmd-young": "kmmscand, pmd_young=0",
    "kmm-no-idle-skip": "kmmscand, skip_idle_mm=0",
    "kmm-all-off": "kmmscand with all three scan-cost optimisations off",
    "oracle": "hot set placed on the fast node from the start",
}

# kmmscand with some knobs of /sys/kernel/mm/kmmscand set, to measure a
# default against another value side by side.
KNOBS_CONFIG_RE = re.compile(r"^kmmscand(:[a-z_]+=[0-9-]+)+$")

QUICK_WORKLOADS = ("a", "c", "f")
QUICK_CONFIGS = ("numab", "kmmscand", "kmm-all-off", "oracle")
QUICK_SECONDS = 12

SAMPLE_RE = re.compile(r"^S (.*)$")
RESULT_RE = re.compile(r"^R (.*)$")


def describe_config(label):
    name, _, nth = label.partition(RUN_MARK)
    what = CONFIGS.get(name) or "kmmscand with " + ", ".join(name.split(":")[1:])
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


def make_plan(workloads, configs, quick):
    """Lines for bench.sh; configurations interleaved within a workload."""
    lines = []
    for w in workloads:
        _, args, secs, limit = WORKLOADS[w]
        secs = QUICK_SECONDS if quick else secs
        for c in configs:
            lines.append(f"{c} {w} {limit or '-'} {args} -t {secs} "
                         f"-i 500 -S {SEED}")
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


class Collector:
    """Turns the guest's lines into runs, showing progress as they come."""

    def __init__(self, total):
        self.total = total
        self.runs = []
        self.cur = None
        self.started = time.time()

    def line(self, text):
        text = text.rstrip("\n")
        if text.startswith("B "):
            _, config, workload = text.split()
            self.cur = {"config": config, "workload": workload,
                        "samples": [], "result": None, "status": None}
            self.runs.append(self.cur)
            print(f"[bench] {len(self.runs)}/{self.total} workload "
                  f"{workload}, {config} ...", flush=True)
        elif self.cur is None:
            if text.startswith(("tiers:", "bench.sh:")):
                print(f"[bench] {text}", flush=True)
        elif SAMPLE_RE.match(text):
            self.cur["samples"].append(kv(SAMPLE_RE.match(text).group(1)))
        elif RESULT_RE.match(text):
            r = kv(RESULT_RE.match(text).group(1))
            self.cur["result"] = r
            print(f"[bench]     t50 {r['t50']:.1f} s, t90 {r['t90']:.1f} s, "
                  f"cold promoted {r['cold_promoted_pct']:.1f}%, "
                  f"{r['ops_per_s'] / 1e6:.1f} Mops/s, kmmscand CPU "
                  f"{r['kmmscand_cpu_s']:.2f} s  "
                  f"[{time.time() - self.started:.0f} s]", flush=True)
        elif text.startswith("E "):
            self.cur["status"] = int(text.split()[1])
        elif text.startswith(("tierbench:", "filler:")):
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


def derive(runs):
    """Per workload and config, the figures and their ratios."""
    by = {}
    exposure = {}
    for r in runs:
        if r["result"] is not None and r["status"] == 0:
            by.setdefault(r["workload"], {})[r["config"]] = r["result"]
            exposure[(r["workload"], r["config"])] = slow_exposure(r)
    table = {}
    for w, cfgs in by.items():
        nb = cfgs.get("numab")
        orc = cfgs.get("oracle")
        table[w] = {}
        for c, res in cfgs.items():
            t90 = res["t90"] if res["t90"] >= 0 else None
            t50 = res["t50"] if res["t50"] >= 0 else None
            cost = res["kmmscand_cpu_s"] + res["app_sys_s"]
            nb_cost = nb["kmmscand_cpu_s"] + nb["app_sys_s"] if nb else None
            table[w][c] = {
                "t50_s": t50, "t90_s": t90,
                "hot_on_slow_pct": exposure[(w, c)],
                "t90_vs_numab": ratio(t90, nb and nb["t90"]),
                "cold_promoted_pct": res["cold_promoted_pct"],
                "ops_vs_oracle": ratio(res["ops_per_s"],
                                       orc and orc["ops_per_s"]),
                "tail_ops_vs_oracle": ratio(res["tail_ops_per_s"],
                                            orc and orc["tail_ops_per_s"]),
                "kmmscand_cpu_s": res["kmmscand_cpu_s"],
                "app_sys_s": res["app_sys_s"],
                "cost_vs_numab": ratio(cost, nb_cost),
                "ptes": res["ptes"],
                "promoted_mb": res["promoted_mb"],
                "mbps": res["mbps"], "peak_mbps": res["peak_mbps"],
                "pingpong_pages": res["pingpong_pages"],
                "demoted_pages": res["demoted_pages"],
                "hint_faults": res["hint_faults"],
            }
    return table


COLUMNS = ("config", "t50 s", "t90 s", "t90/numab", "hot on slow %",
           "cold prom %",
           "ops/oracle", "tail ops/oracle", "kmmscand CPU s", "app sys s",
           "cost/numab", "PTEs", "promoted MB", "MB/s (peak)", "ping-pong")


def table_rows(w, cfgs, order):
    rows = []
    for c in order:
        if c not in cfgs:
            continue
        t = cfgs[c]
        rows.append((c, fmt(t["t50_s"]), fmt(t["t90_s"]),
                     fmt_x(t["t90_vs_numab"]),
                     fmt(t["hot_on_slow_pct"]),
                     fmt(t["cold_promoted_pct"], ".2f"),
                     fmt_x(t["ops_vs_oracle"]),
                     fmt_x(t["tail_ops_vs_oracle"]),
                     fmt(t["kmmscand_cpu_s"], ".2f"),
                     fmt(t["app_sys_s"], ".2f"), fmt_x(t["cost_vs_numab"]),
                     f"{t['ptes'] / 1e6:.2f}M", fmt(t["promoted_mb"], ".0f"),
                     f"{t['mbps']:.0f} ({t['peak_mbps']:.0f})",
                     f"{t['pingpong_pages']:.0f}"))
    return rows


def markdown(table, order, header):
    out = [header, ""]
    for w in sorted(table):
        out.append(f"Workload ({w}): {WORKLOADS[w][0]}")
        out.append("")
        out.append("| " + " | ".join(COLUMNS) + " |")
        out.append("|" + "---|" * len(COLUMNS))
        for row in table_rows(w, table[w], order):
            out.append("| " + " | ".join(row) + " |")
        out.append("")
    out.append("t50/t90: seconds until 50%/90% of the hot set is on the fast "
               "node (-: never; moving hot set: mean per phase). hot on "
               "slow: the share of the hot set on the slow node, averaged "
               "over the run (TCG gives both nodes the same speed, so this, "
               "not ops/s, shows what promotion gains). cold prom: "
               "share of the never-hot pages promoted. ops/oracle: accesses "
               "per second relative to the oracle, over the run and over its "
               "last quarter (tail). cost: kmmscand CPU + the application's "
               "system time. PTEs: kmmscand_pte_scanned + numa_pte_updates. "
               "ping-pong: pages seen on the fast node, then on the slow one "
               "again.")
    return "\n".join(out) + "\n"


def terminal(table, order):
    for w in sorted(table):
        print(f"\n({w}) {WORKLOADS[w][0]}")
        rows = [COLUMNS] + table_rows(w, table[w], order)
        widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
        for r in rows:
            print("  " + "  ".join(v.rjust(widths[i]) if i else
                                   v.ljust(widths[i])
                                   for i, v in enumerate(r)))


def plot(json_path):
    python = os.path.join(VENV, "bin", "python")
    script = os.path.join(HARNESS, "kmmlib", "plot.py")
    res = subprocess.run([python, script, json_path, BENCH_OUT],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        die("plotting failed:\n" + res.stdout + res.stderr)
    return res.stdout.split()


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
    workloads = workloads or (QUICK_WORKLOADS if quick else FULL_WORKLOADS)
    configs = configs or (QUICK_CONFIGS if quick else tuple(CONFIGS))
    for w in workloads:
        if w not in WORKLOADS:
            die(f"unknown workload {w}; known: {' '.join(WORKLOADS)}")
    for c in configs:
        if c not in CONFIGS and not KNOBS_CONFIG_RE.match(c):
            die(f"unknown configuration {c}; known: {' '.join(CONFIGS)}, "
                "or kmmscand:knob=value[:knob=value...]")
    configs = run_labels(configs)
    ensure_dir(BENCH_OUT)
    plan = make_plan(workloads, configs, quick)
    plan_path = os.path.join(BENCH_OUT, "plan.txt")
    with open(plan_path, "w", encoding="utf-8") as f:
        f.write("\n".join(plan) + "\n")
    secs = sum((QUICK_SECONDS if quick else WORKLOADS[w][2]) for w in workloads)
    budget = 120 + len(configs) * (secs + 15 * len(workloads)) * 2
    say(f"{len(plan)} runs ({len(workloads)} workloads x {len(configs)} "
        f"configurations) in one boot of {image}")
    col = Collector(len(plan))
    log = os.path.join(LOGS, "bench-console.log")
    res = vm.boot(image, f"sh {GUEST} {tierbench} {plan_path}",
                  timeout=budget, echo=col.line, log=log)
    splats = res.splats()
    for s in splats:
        print("[kmm] kernel splat in the guest log:\n" + s)
    if res.timed_out:
        die(f"the benchmark did not finish within {budget} s; see {log}")
    failed = [f"{r['workload']}/{r['config']}" for r in col.runs
              if r["status"] != 0 or r["result"] is None]
    if res.status != 0 or failed or len(col.runs) != len(plan):
        die(f"benchmark runs failed: {' '.join(failed) or 'guest script'} "
            f"(guest status {res.status}, {len(col.runs)}/{len(plan)} runs); "
            f"see {log}")
    table = derive(col.runs)
    header = (f"make bench{' --quick' if quick else ''}: {base_line()}; "
              f"release kernel, {'KVM' if res_kvm(log) else 'TCG'}, "
              f"{res.elapsed:.0f} s")
    doc = {"header": header, "quick": quick, "seed": SEED,
           "workloads": {w: WORKLOADS[w][0] for w in workloads},
           "configs": {c: describe_config(c) for c in configs},
           "runs": col.runs, "table": table, "splats": len(splats)}
    json_path = os.path.join(BENCH_OUT, "bench.json")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    md = markdown(table, configs, header)
    with open(os.path.join(BENCH_OUT, "table.md"), "w", encoding="utf-8") as f:
        f.write(md)
    terminal(table, configs)
    pngs = plot(json_path)
    print()
    say(f"results: {os.path.relpath(json_path, REPO)}, "
        f"{os.path.relpath(os.path.join(BENCH_OUT, 'table.md'), REPO)}, "
        + ", ".join(os.path.relpath(p, REPO) for p in pngs))
    if splats:
        die(f"{len(splats)} kernel splat(s) during the benchmark; see {log}")
    return 0


def res_kvm(log):
    with open(log, encoding="utf-8", errors="replace") as f:
        first = f.readline()
    return "--disable-kvm" not in first
