"""make bench: builds, boots, collects, reports.

One boot of the release kernel runs every (configuration, workload) pair
of the plan with the same workload arguments and seeds.  The guest script
(harness/guest/bench.sh) sets each configuration up and runs the
workload; progress.Collector turns its lines into runs as they come.
report() writes out/bench/bench.json, out/bench/table.md and the PNG
plots (harness/kmmlib/plot.py), and ends on the terminal with the
headline.  A full run (every workload and configuration of the default
plan, not QUICK=1) also publishes its table as results/bench.md.
"""

import json
import os
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from .. import deps, kernel, results, tree, vm
from ..common import (
    HARNESS,
    LOGS,
    OUT,
    REPO,
    VENV,
    base_line,
    build_workload,
    die,
    ensure_dir,
    say,
)
from ..costmodel import cost_model, cost_model_lines
from .catalogue import (
    SEED,
    SERVER_WORKLOADS,
    WORKLOADS,
    choose,
    describe_config,
    full_run,
    make_plan,
    time_budget,
)
from .guest import PTECAL_RE, Figures, Run, kv
from .headline import headline, other_configs, terminal
from .model import VM_LATENCIES, Latencies, derive, stalled_runs
from .progress import Collector
from .tables import markdown

GUEST = os.path.join(HARNESS, "guest", "bench.sh")
BENCH_OUT = os.path.join(OUT, "bench")


def check_hmat(lat: Latencies = VM_LATENCIES) -> None:
    """The model's latencies must be the ones the VM's HMAT gives."""
    text = " ".join(vm.HMAT)
    for node, ns in ((0, lat.fast_ns), (1, lat.slow_ns)):
        entry = (f"initiator=0,target={node},hierarchy=memory,"
                 f"data-type=access-latency,latency={ns:g}")
        if entry not in text:
            die(f"the bench models node {node} at {ns:g} ns but vm.HMAT "
                "says otherwise: update model.VM_LATENCIES")


def plot(json_path: str, out_dir: str = BENCH_OUT) -> list[str]:
    """The PNG plots of bench.json, by plot.py in the venv (matplotlib)."""
    python = os.path.join(VENV, "bin", "python")
    script = os.path.join(HARNESS, "kmmlib", "plot.py")
    res = subprocess.run([python, script, json_path, out_dir],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        die("plotting failed:\n" + res.stdout + res.stderr)
    return res.stdout.split()


def write_plan(plan: Sequence[str], out_dir: str) -> str:
    ensure_dir(out_dir)
    path = os.path.join(out_dir, "plan.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(plan) + "\n")
    return path


def build_mcbench() -> str:
    """The server workloads' client (harness/workloads/mcbench.c)."""
    return build_workload("mcbench", ("-lnuma", "-lm", "-lpthread"))


def run_ptecal(binary: str) -> Figures | None:
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


def guest_status(res: vm.Result, col: Collector) -> int | None:
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


def res_kvm(log: str) -> bool:
    with open(log, encoding="utf-8", errors="replace") as f:
        first = f.readline()
    return "--disable-kvm" not in first


def bench(quick: bool = False, workloads: Sequence[str] | None = None,
          configs: Sequence[str] | None = None,
          image: str | None = None) -> int:
    """Run the plan; image: a kernel to use instead of the release build."""
    deps.ensure_plotting()
    # Only the series' own release build speaks for it (not KERNEL=).
    own_build = image is None
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
    chosen_workloads, labels, chosen = choose(quick, workloads, configs)
    mcbench = ""
    if any(w in SERVER_WORKLOADS for w in chosen_workloads):
        deps.ensure_server()
        mcbench = build_mcbench()
    plan = make_plan(chosen_workloads, labels, quick, chosen)
    plan_path = write_plan(plan, BENCH_OUT)
    budget = time_budget(chosen_workloads, labels, quick, chosen)
    say(f"{len(plan)} runs ({len(chosen_workloads)} workloads, up to "
        f"{len(labels)} configurations each) in one boot of {image}")
    col = Collector(len(plan))
    log = os.path.join(LOGS, "bench-console.log")
    res = vm.boot(image, f"sh {GUEST} {tierbench} {plan_path} {mcbench}",
                  timeout=budget, echo=col.line, log=log)
    splats = res.splats()
    for s in splats:
        print("[kmm] kernel splat in the guest log:\n" + s)
    if res.timed_out:
        die(f"the benchmark did not finish within {budget} s; see {log}")
    ran = [r for r in col.runs if r.ok]
    failed = [r for r in col.runs if not r.ok]
    names = " ".join(r.name for r in failed)
    status = guest_status(res, col)
    if len(col.runs) != len(plan) or not ran:
        die(f"benchmark runs failed: {names or 'guest script'} "
            f"(guest status {status}, {len(col.runs)}/{len(plan)} runs); "
            f"see {log}")
    command = "make bench" + (" QUICK=1" if quick else "")
    header = (f"make bench{' --quick' if quick else ''}: {base_line()}; "
              f"release kernel, {'KVM' if res_kvm(log) else 'TCG'}, "
              f"{res.elapsed:.0f} s")
    if failed:
        # A failed run costs its own figures, not the boot's: report the
        # others, say which are missing, and fail the bench after.
        header += f"; FAILED, left out of the table: {names}"
    calibration = (
        {"guest": col.calibration, "host": host_cal}
        if col.calibration and host_cal else None)
    # Only a whole, clean run of the default plan speaks for the series.
    clean = not failed and status == 0 and not splats
    report(ran, quick, chosen_workloads, labels, header, BENCH_OUT,
           splats=len(splats), emulated=True, calibration=calibration,
           chosen=chosen,
           publish_as=command if (own_build and clean and full_run(
               quick, chosen_workloads, labels)) else None)
    if failed or status != 0:
        die(f"benchmark runs failed: {names or 'guest script'} (guest "
            f"status {status}); the table has the others; see {log}")
    if splats:
        die(f"{len(splats)} kernel splat(s) during the benchmark; see {log}")
    return 0


def cost_model_summary(model: dict[str, Any]) -> str:
    """The cost model's projection in a line (the rest is in table.md)."""
    share = 100 * model["projected_cpu_share"]
    line = (f"cost model: kmmscand at scale would use {share:.2f}% of one "
            "CPU as measured here")
    factors = model.get("native_factors")
    if factors:
        line += (f", {share / max(factors):.2f} to {share / min(factors):.2f}"
                 "% at this host CPU's own speed")
    return line + " (table.md says how)"


def publish(table_md: str, command: str, runs: int, boots: int = 1) -> str:
    """results/bench.md from a full run's table.md (results.publish());
    returns its path."""
    return results.publish(table_md, {
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "commit": results.current_commit(),
        "command": command, "boots": boots, "runs": runs})


def report(runs: Sequence[Run], quick: bool, workloads: Sequence[str],
           configs: Sequence[str], header: str, out_dir: str,
           splats: int = 0, emulated: bool = True,
           calibration: dict[str, Figures] | None = None,
           lat: Latencies = VM_LATENCIES, chosen: bool = False,
           publish_as: str | None = None) -> str:
    """bench.json, table.md and the plots in out_dir; the headline on the
    terminal, last.  emulated: name the runs TCG disturbed
    (model.stalled_runs()).  calibration: ptecal's figures, guest and host
    (costmodel.cost_model()).  lat: the latencies of the model.  chosen:
    CONFIGS= chose the configurations (the headline shows them all).
    publish_as: the command of a full run, whose table is published as
    results/bench.md (publish()).  Returns table.md's text."""
    table = derive(runs, quick, lat)
    model = cost_model(runs, calibration)
    model_lines = cost_model_lines(model) if model else []
    doc: dict[str, Any] = {
        "header": header, "quick": quick, "seed": SEED,
        "latencies_ns": {"fast": lat.fast_ns, "slow": lat.slow_ns},
        "workloads": {w: WORKLOADS[w].what for w in workloads},
        "configs": {c: describe_config(c) for c in configs},
        "runs": [r.to_json() for r in runs],
        "table": {w: {c: row.to_json() for c, row in cfgs.items()}
                  for w, cfgs in table.items()},
        "splats": splats,
        "cost_model": model and dict(model, text=model_lines)}
    json_path = os.path.join(out_dir, "bench.json")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    stalled = stalled_runs(runs, quick) if emulated else []
    lost = [f"({r.workload}) {r.config}" for r in runs
            if (r.copy or {}).get("copy_trace_lost")]
    md = markdown(table, configs, header, model_lines, stalled, lost, lat)
    table_path = os.path.join(out_dir, "table.md")
    with open(table_path, "w", encoding="utf-8") as f:
        f.write(md)
    pngs = plot(json_path, out_dir)
    print()
    if model:
        say(cost_model_summary(model))
    for s in stalled:
        say(f"disturbed by the emulator, rerun it: {s}")
    say(f"results: {os.path.relpath(json_path, REPO)}, "
        f"{os.path.relpath(table_path, REPO)} (every figure), "
        + ", ".join(os.path.relpath(p, REPO) for p in pngs))
    if publish_as:
        path = publish(md, publish_as, len(runs))
        say(f"published the table as {os.path.relpath(path, REPO)}")
    print()
    print(header)
    print("\n".join(terminal(headline(table, lat), table,
                             other_configs(table) if chosen else ())))
    return md
