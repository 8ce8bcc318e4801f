#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# What kmmscand, the kernel thread that promotes hot pages from slower
# memory tiers, does for each process. For more info, run:
# ./kmmscand-top.py --help
#
# Python 3 standard library only.

"""kmmscand-top.py: what kmmscand promotes, for which processes, at what cost.

Reads /proc/<pid>/kmmscand of every process, /proc/vmstat (kmmscand_*)
and the CPU time of the "kmmscand" kernel thread, and shows differences
between samples. Pages are counted as base pages and shown in MB; CPU
percentages are of one CPU.

Modes:
  kmmscand-top.py [-i S] [-n N | --once] [--sort KEY] [--all]
      a live view refreshed every S seconds (default 2): the machine's
      promotion rate and kmmscand thread CPU, then one line per process:
        PID, COMM
        PROM_MB/s   MB promoted per second over the interval
        HOT/s       accessed slow-tier pages the scans found per second
        SCAN_CPU%   CPU the kmmscand thread spent on the process
        OWNER_CPU%  CPU the process's threads spent scanning and copying
                    for kmmscand (migrate_by_owner, scan_by_owner)
        PERIOD_MS   scan period the process is at
        PROM_MB     MB promoted since the process was tracked
      Processes with no promotion, no hot page found and less than 0.05%
      CPU spent are left out, here and in --summary, unless --all is given.

  kmmscand-top.py --summary SECONDS [--json] [--by-cgroup]
      samples at the start and the end of a window of SECONDS and prints
      what happened in it, per process and in total.  With --by-cgroup,
      also per memory cgroup, from the kmmscand_* entries of memory.stat
      (which count processes that exited too, and include the cgroup's
      descendants), with whether kmmscand serves the cgroup: "on", "off"
      (its memory.kmmscand is 0) or "off^" (an ancestor's is); its
      SCAN_CPU_MS is kmmscand_cpu_us, the thread's and the processes'
      own CPU time on kmmscand's work.

  kmmscand-top.py --plot FILE.png SECONDS [-i S] [--top K] [--by-cgroup]
      samples every S seconds for SECONDS and writes a PNG chart of the
      MB promoted since the start for the K processes (default 8), or
      cgroup v2 paths with --by-cgroup, that got the most.

Processes that exit between two samples are dropped from the per-process
figures (the totals from /proc/vmstat still count them); files that cannot
be read (a process of another user, without root) are skipped. The exit
status is 2 if the kernel has no /proc/<pid>/kmmscand.
"""

import argparse
import json
import math
import os
import shutil
import struct
import sys
import time
import zlib

MB = 1 << 20
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
CLK_TCK = os.sysconf("SC_CLK_TCK")
PF_KTHREAD = 0x00200000
MIN_CPU_PCT = 0.05
COUNTERS = ("scans", "pte_scanned", "slowtier_accessed", "promoted",
            "promote_failed", "owner_promoted", "kmmscand_cpu_ns",
            "owner_cpu_ns")


class NoSupport(Exception):
    pass


# Sampling

class Proc:
    """One process as one sample saw it."""

    def __init__(self, pid, comm, cgroup, stats):
        self.pid = pid
        self.comm = comm
        self.cgroup = cgroup
        self.stats = stats


class Sample:
    """Every readable /proc/<pid>/kmmscand, /proc/vmstat and the kmmscand
    thread's CPU time, at one moment."""

    def __init__(self, root):
        self.time = time.monotonic()
        self.procs = {}
        self.unreadable = 0
        self.thread_cpu_ns = 0
        self.vmstat = read_pairs(os.path.join(root, "vmstat"), "kmmscand_")
        for name in os.listdir(root):
            if name.isdigit():
                self._add(root, int(name))

    def _add(self, root, pid):
        base = os.path.join(root, str(pid))
        try:
            comm, flags, start, cpu_ticks = read_stat(base)
            if flags & PF_KTHREAD:
                if comm == "kmmscand":
                    self.thread_cpu_ns = cpu_ticks * 10**9 // CLK_TCK
                return
            stats = read_pairs(os.path.join(base, "kmmscand"))
            cgroup = read_cgroup(base)
        except PermissionError:
            self.unreadable += 1
            return
        except (FileNotFoundError, ProcessLookupError, ValueError):
            return          # gone meanwhile
        if stats.get("tracked") or stats.get("promoted"):
            # pid and start time: a reused pid is another process
            self.procs[(pid, start)] = Proc(pid, comm, cgroup, stats)


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


def read_cgroups(root):
    """{cgroup path: (memory.kmmscand, kmmscand_* of memory.stat)} of every
    memory cgroup under the cgroup v2 mount root; the root cgroup has no
    memory.kmmscand, shown as "-"."""
    out = {}
    for path, _, files in os.walk(root):
        if "memory.stat" not in files:
            continue
        try:
            stats = read_pairs(os.path.join(path, "memory.stat"), "kmmscand_")
            setting = (read_text(os.path.join(path, "memory.kmmscand"))
                       .strip() if "memory.kmmscand" in files else "-")
        except OSError:
            continue        # removed meanwhile, or not readable
        if stats:
            rel = os.path.relpath(path, root)
            out["/" if rel == "." else "/" + rel] = (setting, stats)
    return out


def cgroup_served(cgroups, path):
    """ "off" if memory.kmmscand of path is 0, "off^" if an ancestor's is,
    else "on"."""
    if cgroups[path][0] == "0":
        return "off"
    parent = path
    while parent != "/":
        parent = os.path.dirname(parent)
        if parent in cgroups and cgroups[parent][0] == "0":
            return "off^"
    return "on"


def check_support(root):
    if not os.path.exists(os.path.join(root, "self", "kmmscand")):
        raise NoSupport(f"{root}/<pid>/kmmscand does not exist: this kernel "
                        "has no kmmscand (CONFIG_KMMSCAND) or predates its "
                        "per-process statistics")


# Differences between two samples

def deltas(old, new):
    """(process of new, its counters' increase since old) for each process
    of new; one that old did not have started since, and counts from 0."""
    out = []
    for key, proc in new.procs.items():
        before = old.procs[key].stats if key in old.procs else {}
        out.append((proc, {c: proc.stats.get(c, 0) - before.get(c, 0)
                           for c in COUNTERS}))
    return out


def pages_mb(pages):
    return pages * PAGE_SIZE / MB


def process_row(proc, d, secs):
    """The figures shown of one process over secs seconds."""
    return {
        "pid": proc.pid,
        "comm": proc.comm,
        "cgroup": proc.cgroup,
        "promoted_mb": pages_mb(d["promoted"]),
        "promoted_mb_per_s": pages_mb(d["promoted"]) / secs,
        "owner_promoted_mb": pages_mb(d["owner_promoted"]),
        "promote_failed": d["promote_failed"],
        "hot_found": d["slowtier_accessed"],
        "hot_per_s": d["slowtier_accessed"] / secs,
        "pte_scanned": d["pte_scanned"],
        "scans": d["scans"],
        "scan_cpu_ms": d["kmmscand_cpu_ns"] / 1e6,
        "scan_cpu_pct": d["kmmscand_cpu_ns"] / secs / 1e7,
        "owner_cpu_ms": d["owner_cpu_ns"] / 1e6,
        "owner_cpu_pct": d["owner_cpu_ns"] / secs / 1e7,
        "scan_period_ms": proc.stats.get("scan_period_ms", 0),
        "total_promoted_mb": pages_mb(proc.stats.get("promoted", 0)),
    }


def cgroup_rows(old, new, secs, show_all):
    """The figures of each memory cgroup between two read_cgroups()."""
    rows = []
    for path, (_, stats) in new.items():
        before = old.get(path, (None, {}))[1]

        def d(name):
            return stats.get(name, 0) - before.get(name, 0)
        row = {
            "cgroup": path,
            "served": cgroup_served(new, path),
            "promoted_mb": pages_mb(d("kmmscand_migrated")),
            "promoted_mb_per_s": pages_mb(d("kmmscand_migrated")) / secs,
            "owner_promoted_mb": pages_mb(d("kmmscand_owner_migrated")),
            "promote_failed": d("kmmscand_migrate_failed"),
            "hot_found": d("kmmscand_slowtier_accessed"),
            "pte_scanned": d("kmmscand_pte_scanned"),
            "scans": d("kmmscand_mm_scans"),
            "scan_cpu_ms": d("kmmscand_cpu_us") / 1e3,
        }
        if show_all or row["pte_scanned"] or row["promoted_mb"]:
            rows.append(row)
    return sorted(rows, key=lambda r: (r["promoted_mb"], r["pte_scanned"]),
                  reverse=True)


def is_active(row):
    """Whether row has something to show: CPU below MIN_CPU_PCT alone, the
    cost of scanning a process that is idle or small, is not enough."""
    return (any(row[k] for k in ("promoted_mb", "hot_found",
                                 "total_promoted_mb"))
            or max(row["scan_cpu_pct"], row["owner_cpu_pct"]) >= MIN_CPU_PCT)


def global_row(old, new):
    """The machine's figures between two samples, from /proc/vmstat."""
    secs = new.time - old.time

    def vm(name):
        return new.vmstat.get(name, 0) - old.vmstat.get(name, 0)
    thread_ns = new.thread_cpu_ns - old.thread_cpu_ns
    return {
        "seconds": secs,
        "promoted_mb": pages_mb(vm("kmmscand_migrated")),
        "promoted_mb_per_s": pages_mb(vm("kmmscand_migrated")) / secs,
        "owner_promoted_mb": pages_mb(vm("kmmscand_owner_migrated")),
        "owner_promoted_mb_per_s":
            pages_mb(vm("kmmscand_owner_migrated")) / secs,
        "hot_found": vm("kmmscand_slowtier_accessed"),
        "pte_scanned": vm("kmmscand_pte_scanned"),
        "thread_cpu_ms": thread_ns / 1e6,
        "thread_cpu_pct": thread_ns / secs / 1e7,
    }


SORT_KEYS = {
    "promoted": lambda r: (r["promoted_mb_per_s"], r["hot_per_s"]),
    "hot": lambda r: (r["hot_per_s"], r["promoted_mb_per_s"]),
    "scan-cpu": lambda r: (r["scan_cpu_pct"],),
    "owner-cpu": lambda r: (r["owner_cpu_pct"],),
    "total": lambda r: (r["total_promoted_mb"],),
}


def rows_between(old, new, sort="promoted", show_all=True):
    secs = new.time - old.time
    rows = [process_row(p, d, secs) for p, d in deltas(old, new)]
    if not show_all:
        rows = [r for r in rows if is_active(r)]
    return sorted(rows, key=SORT_KEYS[sort], reverse=True)


# Text output

# header, width, row key, format
TOP_COLUMNS = [
    ("PID", 7, "pid", "d"), ("COMM", -15, "comm", "s"),
    ("PROM_MB/s", 10, "promoted_mb_per_s", ".1f"),
    ("HOT/s", 10, "hot_per_s", ".0f"),
    ("SCAN_CPU%", 10, "scan_cpu_pct", ".1f"),
    ("OWNER_CPU%", 11, "owner_cpu_pct", ".1f"),
    ("PERIOD_MS", 10, "scan_period_ms", "d"),
    ("PROM_MB", 10, "total_promoted_mb", ".1f"),
]
SUMMARY_COLUMNS = [
    ("PID", 7, "pid", "d"), ("COMM", -15, "comm", "s"),
    ("PROM_MB", 9, "promoted_mb", ".1f"),
    ("OWNER_MB", 9, "owner_promoted_mb", ".1f"),
    ("FAILED", 7, "promote_failed", "d"),
    ("HOT", 9, "hot_found", "d"),
    ("PTE_SCANNED", 12, "pte_scanned", "d"),
    ("SCAN_CPU_MS", 12, "scan_cpu_ms", ".1f"),
    ("OWNER_CPU_MS", 13, "owner_cpu_ms", ".1f"),
]
CGROUP_COLUMNS = [
    ("CGROUP", -23, "cgroup", "s"), ("KMMSCAND", 8, "served", "s"),
    ("PROM_MB", 9, "promoted_mb", ".1f"),
    ("OWNER_MB", 9, "owner_promoted_mb", ".1f"),
    ("FAILED", 7, "promote_failed", "d"),
    ("HOT", 9, "hot_found", "d"),
    ("PTE_SCANNED", 12, "pte_scanned", "d"),
    ("SCAN_CPU_MS", 12, "scan_cpu_ms", ".1f"),
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


def global_line(g, unreadable):
    line = (f"kmmscand: promoted {g['promoted_mb_per_s']:.1f} MB/s "
            f"({g['owner_promoted_mb_per_s']:.1f} MB/s by owners), "
            f"hot found {g['hot_found'] / g['seconds']:.0f}/s, "
            f"thread CPU {g['thread_cpu_pct']:.1f}%")
    if unreadable:
        line += f"; {unreadable} processes unreadable (not root?)"
    return line


# Modes

def live(args):
    tty = sys.stdout.isatty()
    old = Sample(args.proc_root)
    n = 0
    while args.iterations is None or n < args.iterations:
        time.sleep(args.interval)
        new = Sample(args.proc_root)
        rows = rows_between(old, new, args.sort, args.all)
        lines = [f"{time.strftime('%H:%M:%S')}  "
                 + global_line(global_row(old, new), new.unreadable), ""]
        lines += format_table(TOP_COLUMNS, rows)
        if tty:
            height = shutil.get_terminal_size().lines
            sys.stdout.write("\033[H\033[2J" + "\n".join(lines[:height - 1]))
        else:
            sys.stdout.write("\n".join(lines) + "\n\n")
        sys.stdout.flush()
        old = new
        n += 1
    if tty:
        sys.stdout.write("\n")


def summary(args):
    cg_old = read_cgroups(args.cgroup_root) if args.by_cgroup else {}
    old = Sample(args.proc_root)
    time.sleep(args.summary)
    new = Sample(args.proc_root)
    cg_new = read_cgroups(args.cgroup_root) if args.by_cgroup else {}
    cgroups = cgroup_rows(cg_old, cg_new, new.time - old.time, args.all)
    rows = rows_between(old, new, args.sort, args.all)
    g = global_row(old, new)
    total = {k: sum(r[k] for r in rows)
             for k in ("promoted_mb", "owner_promoted_mb", "promote_failed",
                       "hot_found", "pte_scanned", "scan_cpu_ms",
                       "owner_cpu_ms")}
    if args.json:
        out = {"global": g, "processes_total": total, "processes": rows,
               "unreadable": new.unreadable}
        if args.by_cgroup:
            out["cgroups"] = cgroups
        json.dump(out, sys.stdout, indent=1)
        print()
        return
    print(f"over {g['seconds']:.1f} s:")
    for line in format_table(SUMMARY_COLUMNS, rows):
        print(line)
    print(format_line(SUMMARY_COLUMNS, ["", "(processes)"]
                      + [f"{total[key]:{fmt}}"
                         for _, _, key, fmt in SUMMARY_COLUMNS[2:]]))
    print(global_line(g, new.unreadable))
    print(f"kmmscand: promoted {g['promoted_mb']:.1f} MB, scanned "
          f"{g['pte_scanned']} PTEs, thread CPU {g['thread_cpu_ms']:.1f} ms")
    if args.by_cgroup:
        print("\nper memory cgroup (memory.stat, with descendants):")
        for line in format_table(CGROUP_COLUMNS, cgroups):
            print(line)


def plot(args):
    path, seconds = args.plot
    group = ((lambda p: p.cgroup) if args.by_cgroup
             else (lambda p: f"{p.pid} {p.comm}"))
    samples = [Sample(args.proc_root)]
    end = samples[0].time + float(seconds)
    while samples[-1].time < end:
        time.sleep(min(args.interval, max(end - time.monotonic(), 0.01)))
        samples.append(Sample(args.proc_root))
    series = cumulative_mb(samples, group)
    top = sorted((k for k in series if series[k][-1] > 0),
                 key=lambda k: series[k][-1], reverse=True)[:args.top]
    times = [s.time - samples[0].time for s in samples]
    what, whats = (("cgroup", "cgroups") if args.by_cgroup
                   else ("process", "processes"))
    write_png(path, chart(times, [(k, series[k]) for k in top],
                          f"MB promoted by kmmscand since the start, "
                          f"per {what}"))
    print(f"wrote {path}: {len(samples)} samples over {times[-1]:.1f} s, "
          f"the {len(top)} of {len(series)} {whats} that got most")


def cumulative_mb(samples, group):
    """{group: MB promoted from the first sample to each sample}."""
    series = {}
    for i, (old, new) in enumerate(zip(samples, samples[1:]), 1):
        for proc, d in deltas(old, new):
            s = series.setdefault(group(proc), [0.0] * len(samples))
            s[i] += pages_mb(d["promoted"])
    for s in series.values():
        for i in range(1, len(s)):
            s[i] += s[i - 1]
    return series


# PNG chart: a canvas, lines, a 5x7 font, and the encoder

# 5x7 glyphs, five columns each, bit 0 at the top; lower case is drawn as
# upper case, anything else missing as "?".
FONT = dict(zip(
    " !%()+,-./0123456789:=?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_", [
        "0000000000", "00005f0000", "2313086462", "001c224100",
        "0041221c00", "08083e0808", "0050300000", "0808080808",
        "0060600000", "2010080402", "3e5149453e", "00427f4000",
        "4261514946", "2141454b31", "1814127f10",
        "2745454539", "3c4a494930", "0171090503", "3649494936",
        "064949291e", "0036360000", "1414141414", "0201510906",
        "7e1111117e", "7f49494936", "3e41414122", "7f4141221c",
        "7f49494941", "7f09090901", "3e4149497a", "7f0808087f",
        "00417f4100", "2040413f01", "7f08142241", "7f40404040",
        "7f020c027f", "7f0408107f", "3e4141413e", "7f09090906",
        "3e4151215e", "7f09192946", "4649494931", "01017f0101",
        "3f4040403f", "1f2040201f", "3f4038403f", "6314081463",
        "0708700807", "6151494543", "007f414100", "0041417f00",
        "4040404040"]))
PALETTE = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40),
           (148, 103, 189), (140, 86, 75), (227, 119, 194), (127, 127, 127),
           (188, 189, 34), (23, 190, 207)]
BLACK, GREY, WHITE = (0, 0, 0), (210, 210, 210), (255, 255, 255)


class Canvas:
    def __init__(self, width, height):
        self.width, self.height = width, height
        self.pixels = bytearray(WHITE * (width * height))

    def dot(self, x, y, color):
        if 0 <= x < self.width and 0 <= y < self.height:
            i = 3 * (y * self.width + x)
            self.pixels[i:i + 3] = bytes(color)

    def rect(self, x0, y0, x1, y1, color):
        for y in range(y0, y1 + 1):
            for x in range(x0, x1 + 1):
                self.dot(x, y, color)

    def line(self, x0, y0, x1, y1, color, thick=1):
        """Bresenham, thick pixels wide."""
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.rect(x0, y0, x0 + thick - 1, y0 + thick - 1, color)
            if x0 == x1 and y0 == y1:
                return
            e2 = 2 * err
            if e2 >= dy:
                err += dy
                x0 += sx
            if e2 <= dx:
                err += dx
                y0 += sy

    def text(self, x, y, s, color=BLACK):
        """s at (x, y) top left, 6 pixels a character."""
        for ch in s.upper():
            cols = bytes.fromhex(FONT.get(ch, FONT["?"]))
            for cx, bits in enumerate(cols):
                for cy in range(7):
                    if bits >> cy & 1:
                        self.dot(x + cx, y + cy, color)
            x += 6


def text_width(s):
    return 6 * len(s)


def nice_step(span, ticks=5):
    """A step of 1, 2 or 5 times a power of ten for about that many ticks."""
    raw = span / ticks if span > 0 else 1.0
    mag = 10.0 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def ticks(top, step):
    n = int(top / step + 1e-9)
    return [i * step for i in range(n + 1)]


def chart(times, series, title, width=960, height=480):
    """A line chart of series [(label, [y for each time])] over times."""
    left, right, top, bottom = 64, 740, 36, height - 44
    c = Canvas(width, height)
    xmax = max(times[-1], 1e-9)
    ystep = nice_step(max([max(s) for _, s in series] + [1.0]))
    xstep = nice_step(xmax)
    ymax = ticks(max([max(s) for _, s in series] + [1.0]) + ystep * 0.999,
                 ystep)[-1]

    def px(t):
        return left + round((right - left) * t / xmax)

    def py(v):
        return bottom - round((bottom - top) * v / ymax)
    for v in ticks(ymax, ystep):
        c.line(left, py(v), right, py(v), GREY)
        label = f"{v:g}"
        c.text(left - 6 - text_width(label), py(v) - 3, label)
    for t in ticks(xmax, xstep):
        c.line(px(t), bottom, px(t), bottom + 4, BLACK)
        label = f"{t:g}"
        c.text(px(t) - text_width(label) // 2, bottom + 8, label)
    c.line(left, top, left, bottom, BLACK)
    c.line(left, bottom, right, bottom, BLACK)
    c.text(left, 12, title)
    c.text(left - 40, top - 16, "MB")
    c.text((left + right - text_width("seconds")) // 2, bottom + 24,
           "seconds")
    for i, (label, ys) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        points = [(px(t), py(v)) for t, v in zip(times, ys)]
        for (x0, y0), (x1, y1) in zip(points, points[1:]):
            c.line(x0, y0, x1, y1, color, thick=2)
        ly = top + 14 * i
        c.rect(right + 14, ly, right + 24, ly + 6, color)
        if len(label) > 24:
            label = "..." + label[-21:]
        c.text(right + 30, ly, f"{label} {ys[-1]:.0f} MB")
    return c


def png_chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(
        ">I", zlib.crc32(body))


def write_png(path, canvas):
    """canvas as an 8-bit RGB PNG, no filter."""
    stride = 3 * canvas.width
    raw = b"".join(b"\0" + canvas.pixels[y * stride:(y + 1) * stride]
                   for y in range(canvas.height))
    header = struct.pack(">IIBBBBB", canvas.width, canvas.height, 8, 2,
                         0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header)
                + png_chunk(b"IDAT", zlib.compress(raw, 9))
                + png_chunk(b"IEND", b""))


# Command line

def positive(text):
    v = float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return v


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="kmmscand-top.py", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--summary", type=positive, metavar="SECONDS",
                      help="one summary of a window of SECONDS")
    mode.add_argument("--plot", nargs=2, metavar=("FILE", "SECONDS"),
                      help="write a PNG chart of SECONDS of promotion")
    mode.add_argument("-n", "--iterations", type=int, metavar="N",
                      help="live view: stop after N refreshes")
    mode.add_argument("--once", action="store_const", const=1,
                      dest="iterations", help="live view: one refresh (-n 1)")
    p.add_argument("-i", "--interval", type=positive, default=2.0,
                   metavar="S", help="seconds between samples (default 2)")
    p.add_argument("--sort", choices=sorted(SORT_KEYS), default="promoted",
                   help="order of the processes (default: promoted, then "
                   "hot pages found)")
    p.add_argument("--all", action="store_true",
                   help="also show tracked processes with nothing to show")
    p.add_argument("--json", action="store_true",
                   help="--summary: print JSON instead of a table")
    p.add_argument("--top", type=int, default=8, metavar="K",
                   help="--plot: the K that got the most (default 8)")
    p.add_argument("--by-cgroup", action="store_true",
                   help="--plot: one line per cgroup v2 path; --summary: "
                   "add a table per memory cgroup")
    p.add_argument("--proc-root", default="/proc", metavar="DIR",
                   help="where proc is mounted (default /proc)")
    p.add_argument("--cgroup-root", default="/sys/fs/cgroup", metavar="DIR",
                   help="where cgroup v2 is mounted (default /sys/fs/cgroup)")
    args = p.parse_args(argv)
    if args.plot:
        try:
            positive(args.plot[1])
        except (ValueError, argparse.ArgumentTypeError):
            p.error(f"--plot: {args.plot[1]} is not a positive number")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        check_support(args.proc_root)
        if args.summary:
            summary(args)
        elif args.plot:
            plot(args)
        else:
            live(args)
    except NoSupport as e:
        print(f"kmmscand-top.py: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print()
    except BrokenPipeError:
        # a reader such as head(1) that stopped reading
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
