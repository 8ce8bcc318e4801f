"""Plots of a make bench run; run by the venv's python (needs matplotlib).

usage: plot.py BENCH_JSON OUT_DIR
Writes, per workload, hot-<w>.png (share of the hot set on the fast node
over time, one line per configuration), and cost.png (CPU seconds spent on
promotion per configuration and workload: kmmscand's thread and the
application's system time).  Prints the paths written.
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def hot_share_plot(doc, workload, out_dir):
    fig, ax = plt.subplots(figsize=(7, 4))
    for run in doc["runs"]:
        if run["workload"] != workload or not run["samples"]:
            continue
        t = [s["t"] for s in run["samples"]]
        hot = [s["hot"] for s in run["samples"]]
        ax.plot(t, hot, label=run["config"],
                linestyle="--" if run["config"] in ("oracle", "none") else "-")
    ax.set_title(f"({workload}) {doc['workloads'][workload]}", fontsize=9)
    ax.set_xlabel("seconds")
    ax.set_ylabel("hot set on the fast node (%)")
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    path = os.path.join(out_dir, f"hot-{workload}.png")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


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
            kthread.append(row["kmmscand_cpu_s"])
            app.append(row["app_sys_s"])
        bars = ax.bar(xs, kthread, width, label=f"{c}: kmmscand")
        ax.bar(xs, app, width, bottom=kthread, label=f"{c}: app system",
               color=bars.patches[0].get_facecolor() if bars.patches else None,
               alpha=0.45)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(workloads))])
    ax.set_xticklabels([f"({w})" for w in workloads])
    ax.set_ylabel("CPU seconds during the run")
    ax.set_title("promotion cost: kmmscand thread (solid) and the "
                 "application's system time (light)", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    path = os.path.join(out_dir, "cost.png")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py BENCH_JSON OUT_DIR")
    with open(sys.argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    paths = [hot_share_plot(doc, w, sys.argv[2]) for w in sorted(doc["workloads"])]
    paths.append(cost_plot(doc, sys.argv[2]))
    print("\n".join(paths))


if __name__ == "__main__":
    main()
