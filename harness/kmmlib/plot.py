"""Plots of a make bench run; run by the venv's python (needs matplotlib).

usage: plot.py BENCH_JSON OUT_DIR
Writes, per workload, hot-<w>.png (share of the hot set on the fast node
over time, one line per configuration), hit-<w>.png (share of the
accesses the fast node serves, and that share over the best as many
fast-node pages could serve, over time), cost.png (CPU seconds spent on
promotion per configuration and workload: kmmscand's thread and the
application's system time), and for a server workload server-<w>.png (the
server's memory on the fast node and the client's throughput over
time).  Prints the paths written.
"""

import json
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def save(fig, out_dir, name):
    """Write FIG as OUT_DIR/NAME, close it, and return the path."""
    path = os.path.join(out_dir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path

def hot_share_plot(doc, workload, out_dir):
    fig, ax = plt.subplots(figsize=(7, 4))
    for run in doc["runs"]:
        if run["workload"] != workload or not run["samples"]:
            continue
        t = [s["t"] for s in run["samples"]]
        hot = [s["hot"] for s in run["samples"]]
        ax.plot(t, hot, label=run["config"], linestyle=dashed(run["config"]))
    ax.set_title(title(doc, workload), fontsize=9)
    ax.set_xlabel("seconds")
    ax.set_ylabel("hot set on the fast node (%)")
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return save(fig, out_dir, f"hot-{workload}.png")


# Characters of a plot title's line; longer workload descriptions wrap.
TITLE_WIDTH = 80


def title(doc, workload):
    return textwrap.fill(f"({workload}) {doc['workloads'][workload]}",
                         TITLE_WIDTH)


def dashed(config):
    return "--" if config.split("#")[0] in ("oracle", "none") else "-"


def hit_plot(doc, workload, out_dir):
    """None if the run's tierbench gave no hit figures (an older JSON)."""
    runs = [r for r in doc["runs"] if r["workload"] == workload and
            r["samples"] and "hit" in r["samples"][0]]
    if not runs:
        return None
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for run in runs:
        t = [s["t"] for s in run["samples"]]
        top.plot(t, [100 * s["hit"] for s in run["samples"]],
                 label=run["config"], linestyle=dashed(run["config"]))
        ratio = [s["hit"] / s["ohit"] if s["ohit"] > 0 else None
                 for s in run["samples"]]
        bottom.plot(t, [float("nan") if r is None else r for r in ratio],
                    label=run["config"], linestyle=dashed(run["config"]))
    top.set_title(title(doc, workload), fontsize=9)
    top.set_ylabel("accesses served by the fast node (%)")
    top.set_ylim(-2, 102)
    bottom.set_ylabel("hit / best hit of as many pages")
    bottom.set_ylim(-0.02, 1.05)
    bottom.set_xlabel("seconds")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    top.legend(fontsize=7)
    return save(fig, out_dir, f"hit-{workload}.png")


def server_plot(doc, workload, out_dir):
    """None unless the workload's samples are a server's (fast_mib)."""
    runs = [r for r in doc["runs"] if r["workload"] == workload and
            r["samples"] and "fast_mib" in r["samples"][0]]
    if not runs:
        return None
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for run in runs:
        s = run["samples"]
        t = [x["t"] for x in s]
        style = dashed(run["config"])
        top.plot(t, [x["fast_mib"] for x in s], label=run["config"],
                 linestyle=style)
        # The last sample follows the one before by a moment: intervals
        # under half a second give no rate worth plotting.
        steps = [(a, b) for a, b in zip(s, s[1:]) if b["t"] - a["t"] >= 0.5]
        bottom.plot([b["t"] for _, b in steps],
                    [(b["ops"] - a["ops"]) / (b["t"] - a["t"])
                     for a, b in steps], label=run["config"], linestyle=style)
    hot = runs[0].get("result") and runs[0]["result"].get("hot_mib")
    if hot:
        top.axhline(hot, color="grey", linewidth=0.8, linestyle=":",
                    label="hot set")
    top.set_title(title(doc, workload), fontsize=9)
    top.set_ylabel("server memory on the fast node (MiB)")
    bottom.set_ylabel("gets per second")
    bottom.set_xlabel("seconds")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    top.legend(fontsize=7)
    return save(fig, out_dir, f"server-{workload}.png")


def cost_plot(doc, out_dir):
    workloads = sorted(doc["workloads"])
    configs = [c for c in doc["configs"] if c not in ("none", "oracle")]
    fig, ax = plt.subplots(figsize=(max(7, 1.2 * len(workloads)), 4))
    width = 0.8 / max(1, len(configs))
    for i, c in enumerate(configs):
        xs, kthread, app = [], [], []
        for j, w in enumerate(workloads):
            row = doc["table"].get(w, {}).get(c)
            if not row:
                continue
            xs.append(j + i * width)
            kthread.append(row["kmmscand_cpu_s"]
                           + (row.get("damon_cpu_s") or 0))
            app.append(row["app_sys_s"])
        bars = ax.bar(xs, kthread, width, label=f"{c}: kernel thread")
        ax.bar(xs, app, width, bottom=kthread, label=f"{c}: app system",
               color=bars.patches[0].get_facecolor() if bars.patches else None,
               alpha=0.45)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(workloads))])
    ax.set_xticklabels([f"({w})" for w in workloads])
    ax.set_ylabel("CPU seconds during the run")
    ax.set_title("promotion cost: kmmscand or kdamond threads (solid) and the "
                 "application's system time (light)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    return save(fig, out_dir, "cost.png")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py BENCH_JSON OUT_DIR")
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    paths = []
    for w in sorted(doc["workloads"]):
        paths.append(hot_share_plot(doc, w, sys.argv[2]))
        paths.append(hit_plot(doc, w, sys.argv[2]))
        paths.append(server_plot(doc, w, sys.argv[2]))
    paths.append(cost_plot(doc, sys.argv[2]))
    paths = [p for p in paths if p]
    print("\n".join(paths))


if __name__ == "__main__":
    main()
