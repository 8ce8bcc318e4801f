"""make bench HOST=1: the bench's workloads on this machine, no VM.

For a machine with a real slow memory tier that runs the series (built
with `make deb` and booted).  The same plan, guest script
(harness/guest/bench.sh, with KMM_HOST=1) and workloads as in the VM, the
same table, JSON and plots, under out/bench-host/.

Nothing is changed before every check has passed: two memory tiers, a
node with CPUs in the top one (the fast node), a CPU-less node in a lower
one (the slow node), kmmscand's sysfs directory, NUMA balancing's sysctl,
the tools the workloads need, and room on both nodes.  What bench.sh may
change is printed first, saved, and written back at the end, on an error
and on Ctrl-C or SIGTERM too.
"""

import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

from . import deps
from .bench import catalogue, runner
from .bench.model import VM_LATENCIES, Latencies
from .bench.progress import Collector
from .common import HARNESS, OUT, REPO, build_workload, die, ensure_dir, say

# KMM_HOST_OUT= writes elsewhere (a read-only checkout, or a run of host
# mode inside the VM, where only out/vm is writable).
HOST_OUT = os.environ.get("KMM_HOST_OUT") or os.path.join(OUT, "bench-host")
SYS = "/sys"
PROC = "/proc"
TIERS = "devices/virtual/memory_tiering"
NODES = "devices/system/node"
KMMSCAND = "kernel/mm/kmmscand"
DAMON_ADMIN = "kernel/mm/damon/admin/kdamonds"

# The workloads a host run runs by default: the VM's full run but for
# those that fill the fast node (e, i, j, k, n fill it down to a few MiB
# free with memory of their own, which on a host in use can push others'
# memory out or to the slow node), plus the server workload.  Named in
# WORKLOADS=, they run.
FILLER_WORKLOADS = ("e", "i", "j", "k", "n")
HOST_WORKLOADS = tuple(w for w in catalogue.FULL_WORKLOADS
                       if w not in FILLER_WORKLOADS) + ("s",)

# Free memory a node keeps beyond a workload's footprint, MiB.
MARGIN_MIB = 256

# KMM_HOST_SCALE=N multiplies every workload's sizes (tierbench's -s, -H
# and -P group sizes; mcbench's keys and memcached's memory) by N: the VM's
# sizes fit a 2 GiB slow node.
SCALE_VAR = "KMM_HOST_SCALE"


# ---- what the host has ----

def read(path, default=None):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return default


def node_list(text):
    """Nodes of a sysfs list such as "0-1,3"."""
    nodes: list[int] = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        nodes += range(int(lo), int(hi or lo) + 1)
    return nodes


def tiers(sys_root=SYS):
    """[(tier id, [nodes])] by tier id: a lower id is a faster tier."""
    out = []
    for d in glob.glob(os.path.join(sys_root, TIERS, "memory_tier*")):
        m = re.search(r"memory_tier(\d+)$", d)
        if m:
            out.append((int(m.group(1)),
                        node_list(read(os.path.join(d, "nodelist")))))
    return sorted(out)


def node_mib(node, field, sys_root=SYS):
    """A field of the node's meminfo (MemFree, MemTotal), MiB."""
    text = read(os.path.join(sys_root, NODES, f"node{node}", "meminfo"), "")
    m = re.search(rf"\b{field}:\s+(\d+) kB", text)
    return int(m.group(1)) // 1024 if m else 0


def discover(sys_root=SYS, env=None):
    """(fast node, slow node, problems): the nodes the bench would use and
    what is missing for a run, each problem a line saying what it needs."""
    env = os.environ if env is None else env
    problems = []
    fast = slow = None
    if not os.path.isdir(os.path.join(sys_root, TIERS)):
        problems.append(
            f"{sys_root}/{TIERS} is missing: the kernel has no memory tiers "
            "(a 6.1+ kernel with CONFIG_NUMA and CONFIG_MIGRATION)")
    found = tiers(sys_root)
    with_cpu = set(node_list(read(os.path.join(sys_root, NODES, "has_cpu"))))
    with_mem = set(node_list(read(os.path.join(sys_root, NODES,
                                               "has_memory"))))
    if found and len(found) < 2:
        problems.append(
            f"one memory tier only ({found[0][0]}: nodes "
            f"{found[0][1]}): a slow tier needs a CPU-less memory node that "
            "the kernel ranks lower, e.g. CXL memory (a kmem DAX device "
            "onlined as system RAM) or a node whose HMAT/ACPI SLIT "
            "latency and bandwidth are worse")
    if len(found) >= 2:
        top = found[0]
        fast_nodes = [n for n in top[1] if n in with_cpu and n in with_mem]
        slow_nodes = [n for tid, nodes in found[1:] for n in nodes
                      if n not in with_cpu and n in with_mem]
        fast = fast_nodes[0] if fast_nodes else None
        slow = slow_nodes[0] if slow_nodes else None
        if fast is None:
            problems.append(f"no node with CPUs and memory in the top tier "
                            f"(memory_tier{top[0]}: nodes {top[1]})")
        if slow is None:
            problems.append("no CPU-less memory node in a lower tier "
                            f"(tiers: {found})")
    # KMM_FAST_NODE / KMM_SLOW_NODE pick among several candidates.
    for var, kind in (("KMM_FAST_NODE", "fast"), ("KMM_SLOW_NODE", "slow")):
        if env.get(var) is None:
            continue
        try:
            node = int(env[var])
        except ValueError:
            problems.append(f"{var}={env[var]} is not a node number")
            continue
        tier = next((tid for tid, nodes in found if node in nodes), None)
        if tier is None:
            problems.append(f"{var}={node}: node {node} is in no memory tier")
        elif kind == "fast":
            fast = node
        else:
            slow = node
    if fast is not None and slow is not None:
        tier_of = {n: tid for tid, nodes in found for n in nodes}
        if tier_of.get(slow, -1) <= tier_of.get(fast, -1):
            problems.append(f"node {slow} is not in a lower tier than node "
                            f"{fast}")
        if slow in with_cpu:
            problems.append(f"node {slow} has CPUs: the slow node must be "
                            "CPU-less (the workloads run on the fast one)")
    if not os.path.isdir(os.path.join(sys_root, KMMSCAND)):
        problems.append(
            f"{sys_root}/{KMMSCAND} is missing: the running kernel "
            f"({os.uname().release}) is not the series' (install and boot "
            "the packages of `make deb`, CONFIG_KMMSCAND=y)")
    return fast, slow, problems


# ---- what a run needs ----

def scale():
    text = os.environ.get(SCALE_VAR, "1")
    if not text.isdigit() or int(text) < 1:
        die(f"{SCALE_VAR}={text}: a whole number from 1")
    return int(text)


def scaled_args(w, args, k):
    """Workload w's arguments with its sizes multiplied by k."""
    if k == 1:
        return args
    if w in catalogue.SERVER_WORKLOADS:
        return re.sub(r"(-[kM]) (\d+)",
                      lambda m: f"{m.group(1)} {int(m.group(2)) * k}", args)

    def group(m):
        return ",".join(f"{n}:{int(mib) * k}" for n, mib in
                        (g.split(":") for g in m.group(1).split(",")))
    args = re.sub(r"-P (\d+:\d+(?:,\d+:\d+)*)",
                  lambda m: "-P " + group(m), args)
    return re.sub(r"(-[sH]) (\d+)",
                  lambda m: f"{m.group(1)} {int(m.group(2)) * k}", args)


def opt(args, flag, default=None):
    m = re.search(rf"(?:^| ){re.escape(flag)} (\S+)", args)
    return m.group(1) if m else default


def slow_footprint_mib(w, args):
    """MiB workload w places on the slow node."""
    if w in catalogue.SERVER_WORKLOADS:
        # The items' chunks: about 1.16 times the values (1184-byte chunks
        # for 1 KiB values), and memcached's own few MiB.
        return int(int(opt(args, "-k")) * int(opt(args, "-v")) * 1.16
                   / (1 << 20)) + 64
    procs = opt(args, "-P", "1")
    if ":" in procs:
        return sum(int(n) * int(mib) for n, mib in
                   (g.split(":") for g in procs.split(",")))
    return int(procs) * int(opt(args, "-s"))


def tools_missing(workloads):
    need = {"numactl": "numactl", "gcc": "build-essential",
            "migratepages": "numactl"}
    if any(w in catalogue.SERVER_WORKLOADS for w in workloads):
        need["memcached"] = "memcached"
    missing = [f"{tool} (apt install {pkg})" for tool, pkg in need.items()
               if not shutil.which(tool)]
    if not os.path.exists("/usr/include/numaif.h"):
        missing.append("numaif.h (apt install libnuma-dev)")
    return missing


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def run_problems(workloads, configs, fast, slow, k):
    """What keeps this host from running these workloads, as lines."""
    problems = []
    if os.geteuid() != 0:
        problems.append("not root: the bench sets sysctls and sysfs knobs "
                        "and reads other processes' page placement")
    if not os.path.exists(f"{PROC}/sys/kernel/numa_balancing"):
        problems.append("no /proc/sys/kernel/numa_balancing "
                        "(CONFIG_NUMA_BALANCING=y is needed for numab)")
    for t in tools_missing(workloads):
        problems.append(f"missing: {t}")
    if fast is not None and slow is not None:
        for w in workloads:
            need = slow_footprint_mib(w, scaled_args(
                w, catalogue.WORKLOADS[w].args, k))
            free = node_mib(slow, "MemFree")
            if need + MARGIN_MIB > free:
                problems.append(f"workload {w} needs {need} MiB on the slow "
                                f"node {slow} (+{MARGIN_MIB} MiB margin), "
                                f"which has {free} MiB free")
    damon = [c for c in configs if c.startswith("damon-")]
    if damon:
        nr = read(f"{SYS}/{DAMON_ADMIN}/nr_kdamonds")
        if nr is None:
            problems.append("no DAMON sysfs interface for "
                            + " ".join(damon))
        elif nr != "0":
            problems.append(f"DAMON has {nr} kdamond(s) set up here, which "
                            "the damon-* configurations would remove; stop "
                            "them or leave those configurations out")
    if any(w in catalogue.SERVER_WORKLOADS for w in workloads):
        port = int(os.environ.get("KMM_MC_PORT", "21987"))
        if not port_free(port):
            problems.append(f"port {port} on 127.0.0.1 is taken (the "
                            "bench's memcached uses it; KMM_MC_PORT= picks "
                            "another)")
    return problems


# ---- the settings bench.sh may change ----

def settings(configs):
    """{path: why} of every setting the plan may write."""
    s = {
        f"{PROC}/sys/kernel/numa_balancing":
            "0 for every run; 2 (tiering mode) for numab and numab-late",
        f"{PROC}/sys/kernel/numa_balancing_rate_limit_mbps":
            "the rate limit of (d); back to its value after each run",
        f"{SYS}/kernel/mm/numa/demotion_enabled":
            "1 for the whole bench (demotion on, as tiering runs)",
    }
    if os.path.exists(f"{SYS}/kernel/mm/lru_gen/enabled"):
        s[f"{SYS}/kernel/mm/lru_gen/enabled"] = (
            "y for +mglru configurations; back to its value after each run")
    for f in sorted(glob.glob(f"{SYS}/{KMMSCAND}/*")):
        name = os.path.basename(f)
        s[f] = ("1 for kmmscand configurations, 0 for the others"
                if name == "scan_enabled" else
                "its value when the bench started, unless a configuration "
                "names it")
    if any(c.startswith("damon-") for c in configs):
        s[f"{SYS}/{DAMON_ADMIN}/nr_kdamonds"] = (
            "1 for damon-* configurations (a kdamond of the bench's), then 0")
    return {p: why for p, why in s.items() if os.path.exists(p)}


def save(paths):
    """Each setting's value; None for one that cannot be read back (a
    file that is not a plain readable and writable knob is left alone)."""
    return {p: read(p) if os.stat(p).st_mode & 0o200 else None
            for p in paths}


def restore(saved):
    """Writes back every saved value that changed; prints each.  Range
    knobs refuse a min above the current max and the like: a few passes
    put any order back.  scan_enabled last, so that kmmscand does not
    resume with other knobs half restored."""
    order = sorted(saved, key=lambda p: p.endswith("/scan_enabled"))
    if f"{SYS}/{DAMON_ADMIN}/nr_kdamonds" in saved:
        for state in glob.glob(f"{SYS}/{DAMON_ADMIN}/[0-9]*/state"):
            if read(state) == "on":
                write(state, "off")
    failed: dict[str, str] = {}
    for _ in range(3):
        failed = {}
        for p in order:
            if saved[p] is None or read(p) == saved[p]:
                continue
            if write(p, saved[p]):
                say(f"restored {p} = {saved[p]}")
            else:
                failed[p] = saved[p]
        if not failed:
            break
    for p, v in failed.items():
        say(f"could NOT restore {p} to {v} (it is {read(p)}): set it back "
            "by hand")
    return not failed


def write(path, value):
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(value + "\n")
        return True
    except OSError:
        return False


# ---- the run ----

def make_host_plan(workloads, configs, quick, chosen, k):
    plan = catalogue.make_plan(workloads, configs, quick, chosen)
    if k == 1:
        return plan
    out = []
    for line in plan:
        config, w, rest = line.split(" ", 2)
        out.append(f"{config} {w} {scaled_args(w, rest, k)}")
    return out


def node_latencies(fast, slow, sys_root=SYS):
    """The fast and slow node's read latencies from the fast node's CPUs,
    from the HMAT (access0 of each node), or None."""
    out = []
    for n in (fast, slow):
        v = read(f"{sys_root}/{NODES}/node{n}/access0/initiators/"
                 "read_latency")
        if not (v and v.isdigit() and int(v) > 0):
            return None
        out.append(int(v))
    return Latencies(fast_ns=out[0], slow_ns=out[1])


def print_plan(fast, slow, workloads, configs, plan, paths, saved, k):
    say(f"fast node {fast}, slow node {slow}; workload sizes x{k} "
        f"({SCALE_VAR})")
    say(f"{len(plan)} runs: workloads {' '.join(workloads)}; "
        f"configurations {' '.join(configs)}")
    for line in plan:
        print(f"    {line}")
    say("settings the bench may change (each written back at the end):")
    for p, why in paths.items():
        print(f"    {p} = {saved.get(p)}: {why}")
    say(f"also: the bench runs on node {fast}'s CPUs (numactl "
        "--cpunodebind, no memory policy); echo 3 > /proc/sys/vm/drop_caches "
        "before each run (drops the page cache); memcached on 127.0.0.1 for "
        "workload s; results in " + os.path.relpath(HOST_OUT, REPO))


def host_bench(quick=False, workloads=None, configs=None, dry_run=False):
    """make bench HOST=1; dry_run: check and print the plan only."""
    workloads, configs, chosen = catalogue.choose(
        quick, workloads, configs,
        default_workloads=None if quick else HOST_WORKLOADS)
    k = scale()
    fast, slow, problems = discover()
    problems += run_problems(workloads, configs, fast, slow, k)
    plan = make_host_plan(workloads, configs, quick, chosen, k)
    paths = settings(configs)
    saved = save(paths)
    if dry_run:
        print_plan("?" if fast is None else fast,
                   "?" if slow is None else slow, workloads, configs, plan,
                   paths, saved, k)
    if problems:
        say("this host cannot run the bench; nothing was changed. It needs:")
        for p in problems:
            print(f"    - {p}")
        return 1
    if dry_run:
        say("dry run: every check passed; nothing was changed")
        return 0
    if any(w in FILLER_WORKLOADS for w in workloads):
        say("workloads " + " ".join(w for w in workloads
                                    if w in FILLER_WORKLOADS) +
            " fill the fast node with memory of their own down to a few "
            "MiB free: other processes' memory may be reclaimed or demoted")
    deps.ensure_plot_venv()
    tierbench = build_workload("tierbench", ("-lnuma", "-lm"))
    mcbench = (runner.build_mcbench()
               if any(w in catalogue.SERVER_WORKLOADS for w in workloads) else "")
    ensure_dir(HOST_OUT)
    plan_path = runner.write_plan(plan, HOST_OUT)
    print_plan(fast, slow, workloads, configs, plan, paths, saved, k)
    hmat = node_latencies(fast, slow)
    lat = hmat or VM_LATENCIES
    say(f"modeled latencies: {lat.fast_ns:g} ns fast, {lat.slow_ns:g} ns "
        "slow (" + ("the HMAT of this host" if hmat else
                    "no HMAT figures here: the VM figures") + ")")
    col = Collector(len(plan), lat)
    log = os.path.join(HOST_OUT, "console.log")
    start = time.time()
    env = dict(os.environ, KMM_HOST="1", KMM_FAST_NODE=str(fast),
               KMM_SLOW_NODE=str(slow))
    proc = None
    # SIGTERM as Ctrl-C: the settings are written back either way.
    old_term = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with open(log, "w", encoding="utf-8") as logf:
            # A session of its own: Ctrl-C reaches this process only, which
            # stops bench.sh and everything it started, then restores.  On
            # the fast node's CPUs (no memory policy), as in the VM, whose
            # CPUs are all the fast node's: promotion goes to the node of
            # the CPUs that access the pages.
            proc = subprocess.Popen(
                ["numactl", f"--cpunodebind={fast}", "sh",
                 os.path.join(HARNESS, "guest", "bench.sh"),
                 tierbench, plan_path, mcbench],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                cwd=REPO, env=env, start_new_session=True)
            assert proc.stdout is not None  # stdout=PIPE
            for line in proc.stdout:
                logf.write(line)
                col.line(line)
            status = proc.wait()
    except KeyboardInterrupt:
        say("interrupted: stopping the bench")
        status = 130
    finally:
        stop(proc)
        signal.signal(signal.SIGTERM, old_term)
        restored = restore(saved)
    if status == 130:
        return 130
    failed = [r.name for r in col.runs if not r.ok]
    if status != 0 or failed or len(col.runs) != len(plan) or not col.done:
        die(f"benchmark runs failed: {' '.join(failed) or 'bench.sh'} "
            f"(status {status}, {len(col.runs)}/{len(plan)} runs); see {log}")
    header = (f"make bench HOST=1{' QUICK=1' if quick else ''}: "
              f"{os.uname().nodename}, kernel {os.uname().release}, fast "
              f"node {fast}, slow node {slow}, sizes x{k}, "
              f"{time.time() - start:.0f} s")
    runner.report(col.runs, quick, workloads, configs, header, HOST_OUT,
                  emulated=False, lat=lat, chosen=chosen)
    return 0 if restored else 1


def _interrupt(_sig, _frame):
    raise KeyboardInterrupt


def stop(proc):
    """Stops bench.sh's session (its workloads and memcached with it)."""
    if proc is None or proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
    print(f"[kmm] bench.sh (pid {proc.pid}) did not stop", file=sys.stderr)
