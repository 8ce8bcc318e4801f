#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# What kmmscand, the kernel thread that promotes hot pages from slower
# memory tiers, does for each process and memory cgroup. For more info,
# run: ./kmmscand-top.py --help
#
# Python 3 standard library only; --plot also needs matplotlib.

"""kmmscand-top.py: what kmmscand promotes, for which processes and
cgroups, at what CPU cost.

Samples /proc/<pid>/kmmscand of every process, the kmmscand_* counters of
/proc/vmstat, the CPU time of the "kmmscand" kernel thread and, with
--by-cgroup, memory.stat and cgroup.procs of every memory cgroup, and
shows the differences between samples.  Pages are counted as base pages
and shown in MB; CPU percentages are of one CPU.

modes:
  kmmscand-top.py [-i S] [-n N | --once] [--sort KEY] [--all]
      a view refreshed every S seconds (default 2): the thread's line,
      then one line per process:
        PID, COMM
        PROM_MB/s   MB promoted per second over the interval
        HOT/s       accessed slow-tier pages the scans found per second
        SCAN_CPU%   CPU the kmmscand thread spent on the process
        PERIOD_MS   the process's scan period
        PROM_MB     MB promoted since the process was tracked
      Processes with no promotion, no hot page found and under 0.05%
      CPU are left out, in every mode, unless --all is given or -p
      names them.

  kmmscand-top.py --summary SECONDS
      samples at the start and the end of a window of SECONDS and prints
      what happened in it, per process and in total.

  kmmscand-top.py --plot FILE.png SECONDS [-i S] [--top K]
      samples every S seconds for SECONDS and draws the MB promoted since
      the start for the K processes (default 8), or cgroups with
      --by-cgroup, that got the most.  Needs matplotlib (Debian:
      python3-matplotlib).

  Every mode also takes:
  -p, --pid PID[,PID...]  only these processes
  -c, --cgroup PATH       only the processes of the cgroup v2 PATH
                          (relative to the cgroup root) and its descendants
  --by-cgroup             also one line per memory cgroup (with -p, the
                          cgroups of those processes; with -c, PATH and
                          its descendants)
  --json                  JSON instead of text (below)

thread:
  "thread CPU" is all the CPU time of the kmmscand thread (its
  /proc/<pid>/stat); "on scans" the part it spent on the scans of
  processes (kmmscand_cpu_us of /proc/vmstat, exited processes
  included); "nice" is /sys/kernel/mm/kmmscand/nice.  These and the
  promotion figures of that line are of the whole machine, whatever -p
  and -c select.

cgroups:
  scans, PTEs, hot pages, promoted and failed pages are the kmmscand_*
  entries of memory.stat: they include the cgroup's descendants and its
  processes that exited.  memory.stat has no CPU figure: SCAN_CPU is the
  sum of kmmscand_cpu_ns of the processes in cgroup.procs of the cgroup
  and of its descendants at the end of the interval (one that exited
  during it is missing; one that moved in counts whole in its new
  cgroup).  KMMSCAND is "on", "off" (its memory.kmmscand is 0) or
  "off^" (an ancestor's is).

JSON (--json):
  one JSON object on a line per sample after the first (--summary: one),
  with these keys, always present:
    mode        "live", "summary" or "plot"
    time        the sample's time, seconds since the epoch
    seconds     the length of the interval the figures cover
    global      thread_pid, thread_nice (null if unknown), thread_cpu_ms,
                thread_cpu_pct, scan_cpu_ms, scan_cpu_pct, promoted_mb,
                promoted_mb_per_s, promote_failed, hot_found, pte_scanned
    processes   a list, in --sort order, of: pid, comm, cgroup, promoted_mb,
                promoted_mb_per_s, promote_failed, hot_found, hot_per_s,
                pte_scanned, scans, scan_cpu_ms, scan_cpu_pct,
                scan_period_ms, scan_size_mb, prctl_mode, served,
                total_promoted_mb
    total       the sums over the processes listed: promoted_mb,
                promote_failed, hot_found, pte_scanned, scans, scan_cpu_ms
    cgroups     null without --by-cgroup, else a list of: cgroup, served,
                promoted_mb, promoted_mb_per_s, promote_failed, hot_found,
                hot_per_s, pte_scanned, scans, scan_cpu_ms, scan_cpu_pct,
                processes (how many SCAN_CPU sums)
    unreadable  how many processes could not be read (not root?)
  With --plot the chart is written all the same and its message goes to
  stderr.

Processes that exit between two samples are dropped from the per-process
figures (the machine's from /proc/vmstat still count them); files that
cannot be read (a process of another user, without root) are skipped.
The exit status is 2 if the kernel has no /proc/<pid>/kmmscand, 1 on
another error.
"""


import argparse
import json
import os
import shutil
import sys
import time

EXAMPLES = """examples:
  kmmscand-top.py                       what kmmscand does, every 2 s
  kmmscand-top.py -p 1234,1240 -i 1     for two processes, every second
  kmmscand-top.py -c system.slice/db.service --by-cgroup
                                        for a service and its cgroups
  kmmscand-top.py --summary 60 --by-cgroup
                                        one minute, per process and cgroup
  kmmscand-top.py --once --json | jq '.processes[0]'
                                        the busiest process, as JSON
  kmmscand-top.py --plot prom.png 300 -i 5 --by-cgroup
                                        five minutes drawn, per cgroup
"""

MB = 1 << 20
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PF_KTHREAD = 0x00200000
MIN_CPU_PCT = 0.05
THREAD = "kmmscand"
COUNTERS = ("scans", "pte_scanned", "slowtier_accessed", "promoted",
            "promote_failed", "kmmscand_cpu_ns")
CG_COUNTERS = ("kmmscand_mm_scans", "kmmscand_pte_scanned",
               "kmmscand_slowtier_accessed", "kmmscand_migrated",
               "kmmscand_migrate_failed")


class Failure(Exception):
    status = 1


class NoSupport(Failure):
    status = 2


# Reading /proc and /sys

def read_text(path):
    with open(path) as f:
        return f.read()


def read_pairs(path, prefix=""):
    """The "name value" lines of path whose name starts with prefix."""
    pairs = {}
    for line in read_text(path).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith(prefix):
            pairs[parts[0]] = int(parts[1])
    return pairs


def read_stat(base):
    """comm, flags, start time and CPU time (ticks) from <base>/stat."""
    text = read_text(os.path.join(base, "stat"))
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    # fields[0] is field 3 of proc(5): state
    return (comm, int(fields[6]), int(fields[19]),
            int(fields[11]) + int(fields[12]))


def read_cgroup(base):
    """The cgroup v2 path of the process, "?" without one."""
    for line in read_text(os.path.join(base, "cgroup")).splitlines():
        if line.startswith("0::"):
            return line[3:] or "/"
    return "?"


def cgroup_path(path):
    """path as "/a/b": relative to the cgroup root, however written."""
    return "/" + "/".join(p for p in path.split("/") if p)


def under(path, top):
    """Whether cgroup path is top or one of its descendants."""
    return top == "/" or path == top or path.startswith(top + "/")


class Proc:
    """One process as one sample saw it."""

    def __init__(self, pid, comm, cgroup, stats):
        self.pid = pid
        self.comm = comm
        self.cgroup = cgroup
        self.stats = stats


class Cgroup:
    """One memory cgroup as one sample saw it: memory.kmmscand ("-" for
    the root, which has none), the kmmscand_* of memory.stat, and the pids
    of cgroup.procs."""

    def __init__(self, setting, stats, pids):
        self.setting = setting
        self.stats = stats
        self.pids = pids


class Sample:
    """Processes, the thread, /proc/vmstat and the cgroups at one moment."""

    def __init__(self):
        self.time = time.monotonic()
        self.wall = time.time()
        self.procs = {}
        self.unreadable = 0
        self.thread_pid = None
        self.thread_cpu_ns = 0
        self.nice = None
        self.vmstat = {}
        self.cgroups = None


def is_thread(s, pid, comm, flags, ticks):
    """Whether the task of these /proc/<pid>/stat figures is the kmmscand
    thread; if so, its pid and CPU into Sample s."""
    if not flags & PF_KTHREAD or comm != THREAD:
        return False
    s.thread_pid = pid
    s.thread_cpu_ns = ticks * 10**9 // CLK_TCK
    return True


class Sampler:
    """Takes Samples of what the options select, under root."""

    def __init__(self, root="/", cgroup_root="/sys/fs/cgroup", pids=None,
                 cgroup=None, by_cgroup=False):
        self.proc = os.path.join(root, "proc")
        self.knobs = os.path.join(root, "sys/kernel/mm/kmmscand")
        self.cgroot = os.path.join(root, cgroup_root.lstrip("/"))
        self.cgroup = cgroup
        self.by_cgroup = by_cgroup
        # Every process is read where the cgroups' CPU is summed.
        self.pids = None if by_cgroup else pids
        self.thread_pid = None
        if not os.path.exists(os.path.join(self.proc, "self", "kmmscand")):
            raise NoSupport(f"{self.proc}/<pid>/kmmscand does not exist: "
                            "this kernel has no kmmscand (CONFIG_KMMSCAND) "
                            "or predates its per-process statistics")
        if cgroup and not os.path.isdir(self._cgdir(cgroup)):
            raise Failure(f"no cgroup {cgroup} under {self.cgroot}")

    def _cgdir(self, path):
        return os.path.join(self.cgroot, path.lstrip("/"))

    def take(self):
        s = Sample()
        s.vmstat = read_pairs(os.path.join(self.proc, "vmstat"), "kmmscand_")
        try:
            s.nice = int(read_text(os.path.join(self.knobs, "nice")))
        except (OSError, ValueError):
            pass
        if self.pids is None:
            pids = [int(n) for n in os.listdir(self.proc) if n.isdigit()]
        else:
            pids = list(self.pids)
            self._thread(s, self.thread_pid)
            if s.thread_pid is None:
                for name in os.listdir(self.proc):
                    if name.isdigit() and self._thread(s, int(name)):
                        break
        for pid in pids:
            self._process(s, pid)
        self.thread_pid = s.thread_pid
        if self.by_cgroup:
            s.cgroups = self._cgroups()
        return s

    def _thread(self, s, pid):
        """Whether pid is the kmmscand thread; if so, its CPU into s."""
        if pid is None:
            return False
        try:
            comm, flags, _, ticks = read_stat(os.path.join(self.proc,
                                                           str(pid)))
        except (OSError, ValueError):
            return False
        return is_thread(s, pid, comm, flags, ticks)

    def _process(self, s, pid):
        base = os.path.join(self.proc, str(pid))
        try:
            comm, flags, start, ticks = read_stat(base)
            if flags & PF_KTHREAD:
                is_thread(s, pid, comm, flags, ticks)
                return
            stats = read_pairs(os.path.join(base, "kmmscand"))
            cgroup = read_cgroup(base)
        except PermissionError:
            s.unreadable += 1
            return
        except (FileNotFoundError, ProcessLookupError, ValueError):
            return          # gone meanwhile, or never there
        if stats.get("tracked") or stats.get("promoted"):
            # pid and start time: a reused pid is another process
            s.procs[(pid, start)] = Proc(pid, comm, cgroup, stats)

    def _cgroups(self):
        """{path: Cgroup} of every memory cgroup under the cgroup root, or
        under --cgroup's."""
        top = self._cgdir(self.cgroup) if self.cgroup else self.cgroot
        out = {}
        for path, _, files in os.walk(top):
            if "memory.stat" not in files:
                continue
            try:
                stats = read_pairs(os.path.join(path, "memory.stat"),
                                   "kmmscand_")
                setting = (read_text(os.path.join(path, "memory.kmmscand"))
                           .strip() if "memory.kmmscand" in files else "-")
                pids = [int(p) for p in
                        read_text(os.path.join(path, "cgroup.procs")).split()]
            except OSError:
                continue    # removed meanwhile, not readable, or threaded
            if stats:
                rel = os.path.relpath(path, self.cgroot)
                out[cgroup_path("" if rel == "." else rel)] = Cgroup(
                    setting, stats, pids)
        return out

    def served(self, cgroups, path):
        """ "off" if memory.kmmscand of path is 0, "off^" if an ancestor's
        is, else "on"."""
        if cgroups[path].setting == "0":
            return "off"
        while path != "/":
            path = os.path.dirname(path)
            if path in cgroups:
                setting = cgroups[path].setting
            else:           # above --cgroup
                try:
                    setting = read_text(os.path.join(
                        self._cgdir(path), "memory.kmmscand")).strip()
                except OSError:
                    continue
            if setting == "0":
                return "off^"
        return "on"


# Differences between two samples

def pages_mb(pages):
    return pages * PAGE_SIZE / MB


def deltas(old, new):
    """{key: (process of new, its counters' increase since old)}; a process
    that old did not have counts from 0."""
    out = {}
    for key, proc in new.procs.items():
        before = old.procs[key].stats if key in old.procs else {}
        out[key] = (proc, {c: proc.stats.get(c, 0) - before.get(c, 0)
                           for c in COUNTERS})
    return out


def work_figures(promoted, failed, hot, ptes, scans, cpu_ns, secs):
    """The figures a process row and a cgroup row share, over @secs."""
    return {
        "promoted_mb": pages_mb(promoted),
        "promoted_mb_per_s": pages_mb(promoted) / secs,
        "promote_failed": failed,
        "hot_found": hot,
        "hot_per_s": hot / secs,
        "pte_scanned": ptes,
        "scans": scans,
        "scan_cpu_ms": cpu_ns / 1e6,
        "scan_cpu_pct": cpu_ns / secs / 1e7,
    }


def process_row(proc, d, secs):
    return {
        "pid": proc.pid,
        "comm": proc.comm,
        "cgroup": proc.cgroup,
        **work_figures(d["promoted"], d["promote_failed"],
                       d["slowtier_accessed"], d["pte_scanned"],
                       d["scans"], d["kmmscand_cpu_ns"], secs),
        "scan_period_ms": proc.stats.get("scan_period_ms", 0),
        "scan_size_mb": proc.stats.get("scan_size_mb", 0),
        "prctl_mode": proc.stats.get("prctl_mode", 0),
        "served": proc.stats.get("served", 0),
        "total_promoted_mb": pages_mb(proc.stats.get("promoted", 0)),
    }


def is_active(row):
    """Whether a process row has something to show: CPU below MIN_CPU_PCT
    alone, the cost of scanning a process that is idle or small, is not
    enough."""
    return (any(row[k] for k in ("promoted_mb", "hot_found",
                                 "total_promoted_mb"))
            or row["scan_cpu_pct"] >= MIN_CPU_PCT)


SORT_KEYS = {
    "promoted": lambda r: (r["promoted_mb_per_s"], r["hot_per_s"]),
    "hot": lambda r: (r["hot_per_s"], r["promoted_mb_per_s"]),
    "scan-cpu": lambda r: (r["scan_cpu_pct"],),
    "total": lambda r: (r.get("total_promoted_mb", 0), r["promoted_mb"]),
}


class Filter:
    """What -p, -c and --all select."""

    def __init__(self, pids=None, cgroup=None, show_all=False):
        self.pids = set(pids) if pids else None
        self.cgroup = cgroup
        self.show_all = show_all

    def process(self, row):
        if self.pids is not None and row["pid"] not in self.pids:
            return False
        if self.cgroup and not under(row["cgroup"], self.cgroup):
            return False
        return self.show_all or self.pids is not None or is_active(row)

    def cgroup_row(self, row, named):
        """named: the cgroups of the processes -p names."""
        if self.cgroup and not under(row["cgroup"], self.cgroup):
            return False
        if self.pids is not None:
            return row["cgroup"] in named
        return (self.show_all or row["cgroup"] == self.cgroup
                or bool(row["pte_scanned"] or row["promoted_mb"]
                        or row["scan_cpu_ms"]))


def cgroup_rows(sampler, old, new, ds, secs, flt):
    """The figures of each memory cgroup of new between old and new; ds
    are the processes' deltas."""
    by_pid = {proc.pid: d for proc, d in ds.values()}
    named = {proc.cgroup for proc, _ in ds.values()
             if flt.pids is not None and proc.pid in flt.pids}
    # Each cgroup's own processes' CPU, then summed up the tree.
    own = {path: (sum(by_pid[p]["kmmscand_cpu_ns"] for p in cg.pids
                      if p in by_pid),
                  sum(1 for p in cg.pids if p in by_pid))
           for path, cg in new.cgroups.items()}
    rows = []
    for path, cg in new.cgroups.items():
        before = old.cgroups[path].stats if path in old.cgroups else {}
        d = {c: cg.stats.get(c, 0) - before.get(c, 0) for c in CG_COUNTERS}
        cpu_ns = sum(v[0] for p, v in own.items() if under(p, path))
        row = {
            "cgroup": path,
            "served": sampler.served(new.cgroups, path),
            **work_figures(d["kmmscand_migrated"],
                           d["kmmscand_migrate_failed"],
                           d["kmmscand_slowtier_accessed"],
                           d["kmmscand_pte_scanned"],
                           d["kmmscand_mm_scans"], cpu_ns, secs),
            "processes": sum(v[1] for p, v in own.items() if under(p, path)),
        }
        if flt.cgroup_row(row, named):
            rows.append(row)
    return rows


def global_row(old, new):
    """The machine's figures between two samples."""
    secs = new.time - old.time

    def vm(name):
        return new.vmstat.get(name, 0) - old.vmstat.get(name, 0)
    thread_ns = (new.thread_cpu_ns - old.thread_cpu_ns
                 if new.thread_pid == old.thread_pid else 0)
    scan_ns = vm("kmmscand_cpu_us") * 1000
    return {
        "thread_pid": new.thread_pid,
        "thread_nice": new.nice,
        "thread_cpu_ms": thread_ns / 1e6,
        "thread_cpu_pct": thread_ns / secs / 1e7,
        "scan_cpu_ms": scan_ns / 1e6,
        "scan_cpu_pct": scan_ns / secs / 1e7,
        "promoted_mb": pages_mb(vm("kmmscand_migrated")),
        "promoted_mb_per_s": pages_mb(vm("kmmscand_migrated")) / secs,
        "promote_failed": vm("kmmscand_migrate_failed"),
        "hot_found": vm("kmmscand_slowtier_accessed"),
        "pte_scanned": vm("kmmscand_pte_scanned"),
    }


TOTAL_KEYS = ("promoted_mb", "promote_failed", "hot_found", "pte_scanned",
              "scans", "scan_cpu_ms")


def window(sampler, old, new, flt, sort="promoted"):
    """The document of the interval from old to new (without its mode)."""
    secs = new.time - old.time
    ds = deltas(old, new)
    rows = [process_row(p, d, secs) for p, d in ds.values()]
    rows = sorted((r for r in rows if flt.process(r)), key=SORT_KEYS[sort],
                  reverse=True)
    cgroups = None
    if new.cgroups is not None:
        cgroups = sorted(cgroup_rows(sampler, old, new, ds, secs, flt),
                         key=SORT_KEYS[sort], reverse=True)
    return {
        "time": new.wall,
        "seconds": secs,
        "global": global_row(old, new),
        "processes": rows,
        "total": {k: sum(r[k] for r in rows) for k in TOTAL_KEYS},
        "cgroups": cgroups,
        "unreadable": new.unreadable,
    }


# Text output

# header, width, row key, format
TOP_COLUMNS = [
    ("PID", 7, "pid", "d"), ("COMM", -15, "comm", "s"),
    ("PROM_MB/s", 10, "promoted_mb_per_s", ".1f"),
    ("HOT/s", 10, "hot_per_s", ".0f"),
    ("SCAN_CPU%", 10, "scan_cpu_pct", ".1f"),
    ("PERIOD_MS", 10, "scan_period_ms", "d"),
    ("PROM_MB", 10, "total_promoted_mb", ".1f"),
]
TOP_CGROUP_COLUMNS = [
    ("CGROUP", -23, "cgroup", "s"), ("KMMSCAND", 8, "served", "s"),
    ("PROM_MB/s", 10, "promoted_mb_per_s", ".1f"),
    ("HOT/s", 10, "hot_per_s", ".0f"),
    ("SCAN_CPU%", 10, "scan_cpu_pct", ".1f"),
    ("PROCS", 6, "processes", "d"),
]
SUMMARY_COLUMNS = [
    ("PID", 7, "pid", "d"), ("COMM", -15, "comm", "s"),
    ("PROM_MB", 9, "promoted_mb", ".1f"),
    ("FAILED", 7, "promote_failed", "d"),
    ("HOT", 9, "hot_found", "d"),
    ("PTE_SCANNED", 12, "pte_scanned", "d"),
    ("SCAN_CPU_MS", 12, "scan_cpu_ms", ".1f"),
]
CGROUP_COLUMNS = [
    ("CGROUP", -23, "cgroup", "s"), ("KMMSCAND", 8, "served", "s"),
    ("PROM_MB", 9, "promoted_mb", ".1f"),
    ("FAILED", 7, "promote_failed", "d"),
    ("HOT", 9, "hot_found", "d"),
    ("PTE_SCANNED", 12, "pte_scanned", "d"),
    ("SCAN_CPU_MS", 12, "scan_cpu_ms", ".1f"),
    ("PROCS", 6, "processes", "d"),
]


def format_line(columns, values):
    return " ".join(f"{v:{'<' if w < 0 else '>'}{abs(w)}}"[:abs(w)]
                    for (_, w, _, _), v in zip(columns, values))


def format_table(columns, rows):
    lines = [format_line(columns, [c[0] for c in columns])]
    for r in rows:
        lines.append(format_line(columns, [f"{r[key]:{fmt}}"
                                           for _, _, key, fmt in columns]))
    return lines


def thread_line(doc):
    g = doc["global"]
    nice = "?" if g["thread_nice"] is None else g["thread_nice"]
    line = (f"kmmscand: promoted {g['promoted_mb_per_s']:.1f} MB/s, "
            f"hot found {g['hot_found'] / doc['seconds']:.0f}/s, "
            f"thread CPU {g['thread_cpu_pct']:.1f}% "
            f"({g['scan_cpu_pct']:.1f}% on scans), nice {nice}")
    if g["thread_pid"] is None:
        line += "; no kmmscand thread"
    if doc["unreadable"]:
        line += f"; {doc['unreadable']} processes unreadable (not root?)"
    return line


def emit_json(mode, doc):
    print(json.dumps({"mode": mode, **doc}), flush=True)


# Modes

def live(args, sampler, flt):
    tty = sys.stdout.isatty() and not args.json
    old = sampler.take()
    n = 0
    while args.iterations is None or n < args.iterations:
        time.sleep(args.interval)
        new = sampler.take()
        doc = window(sampler, old, new, flt, args.sort)
        old = new
        n += 1
        if args.json:
            emit_json("live", doc)
            continue
        lines = [f"{time.strftime('%H:%M:%S')}  " + thread_line(doc), ""]
        lines += format_table(TOP_COLUMNS, doc["processes"])
        if doc["cgroups"] is not None:
            lines += [""] + format_table(TOP_CGROUP_COLUMNS, doc["cgroups"])
        if tty:
            height = shutil.get_terminal_size().lines
            sys.stdout.write("\033[H\033[2J" + "\n".join(lines[:height - 1]))
        else:
            sys.stdout.write("\n".join(lines) + "\n\n")
        sys.stdout.flush()
    if tty:
        sys.stdout.write("\n")


def summary(args, sampler, flt):
    old = sampler.take()
    time.sleep(args.summary)
    doc = window(sampler, old, sampler.take(), flt, args.sort)
    if args.json:
        emit_json("summary", doc)
        return
    g, total = doc["global"], doc["total"]
    print(f"over {doc['seconds']:.1f} s:")
    for line in format_table(SUMMARY_COLUMNS, doc["processes"]):
        print(line)
    print(format_line(SUMMARY_COLUMNS, ["", "(processes)"]
                      + [f"{total[key]:{fmt}}"
                         for _, _, key, fmt in SUMMARY_COLUMNS[2:]]))
    print(thread_line(doc))
    print(f"kmmscand: promoted {g['promoted_mb']:.1f} MB, scanned "
          f"{g['pte_scanned']} PTEs, thread CPU {g['thread_cpu_ms']:.1f} ms "
          f"({g['scan_cpu_ms']:.1f} ms on scans)")
    if doc["cgroups"] is not None:
        print("\nper memory cgroup (memory.stat, with descendants):")
        for line in format_table(CGROUP_COLUMNS, doc["cgroups"]):
            print(line)


def load_pyplot():
    """matplotlib's pyplot on a backend that needs no display."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise Failure(f"--plot needs matplotlib ({e}); on Debian: "
                      "apt install python3-matplotlib") from None
    return plt


def plot(args, sampler, flt):
    plt = load_pyplot()     # before sampling: fail at once
    path, seconds = args.plot[0], float(args.plot[1])
    samples = [sampler.take()]
    end = samples[0].time + seconds
    docs = []
    while samples[-1].time < end:
        time.sleep(min(args.interval, max(end - time.monotonic(), 0.01)))
        samples.append(sampler.take())
        docs.append(window(sampler, samples[-2], samples[-1], flt))
        if args.json:
            emit_json("plot", docs[-1])
    times = [s.time - samples[0].time for s in samples]
    series = cumulative_mb(docs, args.by_cgroup)
    top = sorted((k for k in series if series[k][-1] > 0),
                 key=lambda k: series[k][-1], reverse=True)[:args.top]
    what = "cgroup" if args.by_cgroup else "process"
    draw(plt, path, times, [(k, series[k]) for k in top],
         f"MB promoted by kmmscand since the start, per {what}")
    print(f"wrote {path}: {len(samples)} samples over {times[-1]:.1f} s, "
          f"the {len(top)} of {len(series)} {what}"
          f"{'s' if what == 'cgroup' else 'es'} that got most",
          file=sys.stderr if args.json else sys.stdout)


def cumulative_mb(docs, by_cgroup):
    """{label: MB promoted from the first sample to each sample} of the
    processes, or cgroups, of the documents of consecutive intervals."""
    series: dict[str, list[float]] = {}
    for i, doc in enumerate(docs, 1):
        for r in (doc["cgroups"] if by_cgroup else doc["processes"]):
            label = r["cgroup"] if by_cgroup else f"{r['pid']} {r['comm']}"
            s = series.setdefault(label, [0.0] * (len(docs) + 1))
            s[i] += r["promoted_mb"]
    for s in series.values():
        for i in range(1, len(s)):
            s[i] += s[i - 1]
    return series


def draw(plt, path, times, series, title):
    fig, ax = plt.subplots(figsize=(9.6, 4.8))
    for label, ys in series:
        ax.plot(times, ys, label=f"{label} ({ys[-1]:.1f} MB)")
    if series:
        ax.legend(loc="upper left", fontsize="small")
    else:
        ax.text(0.5, 0.5, "nothing promoted", ha="center",
                transform=ax.transAxes)
    ax.set_title(title)
    ax.set_xlabel("seconds")
    ax.set_ylabel("MB")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# Command line

def positive(text):
    v = float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return v


def pid_list(text):
    try:
        pids = [int(p) for p in text.split(",") if p]
    except ValueError:
        pids = []
    if not pids or min(pids) <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not PID[,PID...]")
    return pids


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="kmmscand-top.py", description=__doc__, epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--summary", type=positive, metavar="SECONDS",
                      help="one summary of a window of SECONDS")
    mode.add_argument("--plot", nargs=2, metavar=("FILE", "SECONDS"),
                      help="draw SECONDS of promotion into FILE (a PNG)")
    mode.add_argument("-n", "--iterations", type=int, metavar="N",
                      help="live view: stop after N refreshes")
    mode.add_argument("--once", action="store_const", const=1,
                      dest="iterations", help="live view: one refresh (-n 1)")
    p.add_argument("-p", "--pid", type=pid_list, action="append",
                   metavar="PID[,PID...]",
                   help="only these processes (may be repeated)")
    p.add_argument("-c", "--cgroup", metavar="PATH",
                   help="only cgroup v2 PATH and its descendants")
    p.add_argument("--by-cgroup", action="store_true",
                   help="also one line per memory cgroup")
    p.add_argument("--json", action="store_true",
                   help="a JSON document per sample instead of text")
    p.add_argument("-i", "--interval", type=positive, default=2.0,
                   metavar="S", help="seconds between samples (default 2)")
    p.add_argument("--sort", choices=sorted(SORT_KEYS), default="promoted",
                   help="order of the lines (default: promoted, then hot "
                   "pages found)")
    p.add_argument("--all", action="store_true",
                   help="also show what has nothing to show")
    p.add_argument("--top", type=int, default=8, metavar="K",
                   help="--plot: the K that got the most (default 8)")
    p.add_argument("--root", default="/", metavar="DIR",
                   help="read proc and sysfs under DIR (default /)")
    p.add_argument("--cgroup-root", default="/sys/fs/cgroup", metavar="DIR",
                   help="where cgroup v2 is mounted, under --root "
                   "(default /sys/fs/cgroup)")
    args = p.parse_args(argv)
    if args.plot:
        try:
            positive(args.plot[1])
        except (ValueError, argparse.ArgumentTypeError):
            p.error(f"--plot: {args.plot[1]} is not a positive number")
    if args.iterations is not None and args.iterations <= 0:
        p.error("-n: N must be positive")
    args.pids = sorted({n for group in args.pid or [] for n in group}) or None
    if args.cgroup is not None:
        args.cgroup = cgroup_path(args.cgroup)
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        sampler = Sampler(args.root, args.cgroup_root, args.pids,
                          args.cgroup, args.by_cgroup)
        flt = Filter(args.pids, args.cgroup, args.all)
        if args.summary:
            summary(args, sampler, flt)
        elif args.plot:
            plot(args, sampler, flt)
        else:
            live(args, sampler, flt)
    except Failure as e:
        print(f"kmmscand-top.py: {e}", file=sys.stderr)
        return e.status
    except KeyboardInterrupt:
        print()
    except BrokenPipeError:
        # a reader such as head(1) that stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
