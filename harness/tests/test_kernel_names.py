"""Every kmmscand name the harness and tools/mm/kmmscand-top.py use
exists on the kernel side of this repository: a knob or counter renamed
in the series must fail here, not at the end of a 35-minute make bench.
And the kernel side is the one they are written for: all of kmmscand's
work is its thread's, with no knob, figure, counter or skip reason of
work handed to the processes (test_no_work_is_handed_to_processes).

The kernel side: mm/kmmscand.c (its sysfs attributes, the figures of
/proc/<pid>/kmmscand, the defaults the cost model reads), the ABI
document of its sysfs directory, its trace events, and the vmstat and
memory.stat counters the patches add to mm/vmstat.c,
include/linux/vm_event_item.h and mm/memcontrol.c.
"""

import importlib.util
import os
import re

import pytest

from kmmlib import costmodel, demo
from kmmlib.common import HARNESS, REPO

KMMSCAND_C = os.path.join(REPO, "mm", "kmmscand.c")
ABI = os.path.join(REPO, "Documentation", "ABI", "testing",
                   "sysfs-kernel-mm-kmmscand")
TRACE_H = os.path.join(REPO, "include", "trace", "events", "kmmscand.h")
PATCHES = os.path.join(REPO, "patches")
GUEST = os.path.join(HARNESS, "guest")
WORKLOADS = os.path.join(HARNESS, "workloads")
TOP = os.path.join(REPO, "tools", "mm", "kmmscand-top.py")

# The lines of /proc/<pid>/kmmscand, in order: what the thread did for
# the process, and the process's scan period, size and settings.
PROC_FIGURES = ("tracked", "scans", "pte_scanned", "slowtier_accessed",
                "promoted", "promote_failed", "kmmscand_cpu_ns",
                "scan_period_ms", "scan_size_mb", "prctl_mode", "served")
# The nice level of the kmmscand thread, which does all of its work.
NICE_KNOB = "nice"


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def sysfs_attributes():
    """The files of /sys/kernel/mm/kmmscand: the kmmscand_attrs array."""
    text = read(KMMSCAND_C)
    m = re.search(r"kmmscand_attrs\[\]\s*=\s*\{(.*?)\};", text, re.S)
    assert m, "mm/kmmscand.c has no kmmscand_attrs[]"
    return set(re.findall(r"&(\w+)_attr\.", m.group(1)))


def abi_files():
    return set(re.findall(r"^What:\s+/sys/kernel/mm/kmmscand/(\w+)",
                          read(ABI), re.M))


def series():
    return read(os.path.join(PATCHES, "series")).split()


def patch_sections(name, path):
    """The hunks of patch name to path, as lines."""
    lines, inside = [], False
    for line in read(os.path.join(PATCHES, name)).splitlines():
        if line.startswith("diff --git "):
            inside = line.endswith(f" b/{path}")
        elif inside:
            lines.append(line)
    return lines


def added_by_series(path, pattern):
    """Names matching pattern that the series' hunks to path add and do
    not remove again, applied in the series' order."""
    names = set()
    for name in series():
        for line in patch_sections(name, path):
            if line.startswith(("+++", "---")):
                continue
            for found in re.findall(pattern, line[1:]):
                if line.startswith("+"):
                    names.add(found)
                elif line.startswith("-"):
                    names.discard(found)
    return names


def vmstat_counters():
    return added_by_series("mm/vmstat.c", r'"(kmmscand_\w+)"')


def vm_events():
    return added_by_series("include/linux/vm_event_item.h",
                           r"\b(KMMSCAND_\w+)\b")


def memcg_events():
    """The kmmscand_ entries of memory.stat: memcg_vm_event_stat[]."""
    return {e.lower() for e in added_by_series("mm/memcontrol.c",
                                               r"\b(KMMSCAND_\w+)\b")}


def proc_figures():
    """The lines of /proc/<pid>/kmmscand, in the order they are printed."""
    return re.findall(r'seq_printf\(m, "(\w+) ', read(KMMSCAND_C))


def skip_reasons():
    """The reasons kmmscand's skip trace events name."""
    return set(re.findall(r'\{\s*KMMSCAND_SKIP_\w+,\s*"(\w+)"\s*\}',
                          read(TRACE_H)))


# ---- what the harness uses ----

def guest_knobs():
    """Knobs the guest scripts read or write: "$kmm/NAME", and bench.sh's
    list of the ablations' knobs."""
    knobs = set()
    for name in os.listdir(GUEST):
        text = read(os.path.join(GUEST, name))
        knobs |= set(re.findall(r'\$kmm/(\w+)', text))
        knobs |= set(re.findall(r"/sys/kernel/mm/kmmscand/(\w+)", text))
        m = re.search(r'^knobs="([^"]*)"', text, re.M)
        if m:
            knobs |= set(m.group(1).split())
    return knobs


def python_knobs():
    """Knobs the harness's Python names: "kmmscand/NAME" paths, and the
    knob=value of the configurations' descriptions."""
    from kmmlib.bench import catalogue
    knobs = set()
    for root, _, files in os.walk(os.path.join(HARNESS, "kmmlib")):
        for f in files:
            if f.endswith(".py"):
                text = read(os.path.join(root, f))
                knobs |= set(re.findall(r"/kmmscand/(\w+)", text))
    # hostbench.py picks scan_enabled out of the directory's files
    text = read(os.path.join(HARNESS, "kmmlib", "hostbench.py"))
    knobs |= set(re.findall(r'name == "(\w+)"', text))
    knobs |= set(re.findall(r'endswith\("/(\w+)"\)', text))
    for what in catalogue.CONFIGS.values():
        knobs |= set(re.findall(r"kmmscand, (\w+)=\d", what))
    return knobs


def top_tool():
    """tools/mm/kmmscand-top.py as a module (its name is no identifier)."""
    spec = importlib.util.spec_from_file_location("kmmscand_top", TOP)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def top_names():
    """What kmmscand-top.py reads by name: (knobs, vmstat counters,
    /proc/<pid>/kmmscand figures, memory.stat entries)."""
    text = read(TOP)
    knobs = set(re.findall(r'self\.knobs, "(\w+)"', text))
    counters = set(re.findall(r'vm\("(kmmscand_\w+)"\)', text))
    tool = top_tool()
    figures = set(tool.COUNTERS)
    figures |= set(re.findall(r'stats\.get\("(\w+)"', text))
    return knobs, counters, figures, set(tool.CG_COUNTERS)


def harness_counters():
    """vmstat counters the harness reads by name."""
    names = {k for _, keys in costmodel.TERMS for k in keys}
    names |= {c for c in demo.COUNTERS if c.startswith("kmmscand_")}
    m = re.search(r'^counters="([^"]*)"', read(os.path.join(GUEST,
                                                             "demo.sh")),
                  re.M)
    assert m, "demo.sh has no counters list"
    names |= {c for c in m.group(1).split() if c.startswith("kmmscand_")}
    for f in os.listdir(WORKLOADS):
        if f.endswith((".c", ".h")):
            names |= set(re.findall(r'vmstat\("(kmmscand_\w+)"\)',
                                    read(os.path.join(WORKLOADS, f))))
    return names


def test_the_kernel_side_is_found():
    assert {"scan_enabled", "smart_scan", "pmd_young",
            "skip_idle_mm"} <= sysfs_attributes()
    assert "kmmscand_pte_scanned" in vmstat_counters()


def test_knobs_exist():
    used = guest_knobs() | python_knobs() | top_names()[0]
    assert {"scan_enabled", "smart_scan", "pmd_young", "skip_idle_mm",
            NICE_KNOB} <= used
    attrs, documented = sysfs_attributes(), abi_files()
    assert not used - attrs, "not in mm/kmmscand.c's kmmscand_attrs"
    assert not used - documented, "not in sysfs-kernel-mm-kmmscand"


def test_vmstat_counters_exist():
    used = harness_counters() | top_names()[1]
    assert {"kmmscand_pte_scanned", "kmmscand_cpu_us"} <= used
    counters = vmstat_counters()
    assert not used - counters, "no such counter in the series' mm/vmstat.c"
    events = vm_events()
    assert not {c.upper() for c in used} - events, \
        "no such event in the series' vm_event_item.h"


def test_memory_stat_entries_exist():
    used = top_names()[3]
    assert "kmmscand_migrated" in used
    assert not used - memcg_events(), \
        "not in the series' memcg_vm_event_stat[] (mm/memcontrol.c)"


def test_proc_figures_exist(tmp_path):
    """kmmscand-top.py reads these from /proc/<pid>/kmmscand, and its
    tests lay out a /proc with PROC_FIGURES."""
    from test_kmmscand_top import Machine
    used = top_names()[2]
    assert {"promoted", "kmmscand_cpu_ns", "scan_period_ms"} <= used
    assert not used - set(PROC_FIGURES), "not in PROC_FIGURES"
    Machine(tmp_path).process(100, "app")
    faked = (tmp_path / "proc" / "100" / "kmmscand").read_text()
    assert tuple(line.split()[0] for line in faked.splitlines()) == \
        PROC_FIGURES, "test_kmmscand_top.py's /proc is not the kernel's"
    assert tuple(proc_figures()) == PROC_FIGURES, \
        "mm/kmmscand.c prints other lines in /proc/<pid>/kmmscand"


def test_no_work_is_handed_to_processes():
    """The kernel the harness is written for: the kmmscand thread does
    all of kmmscand's work, at the nice level of its knob; no knob, figure,
    counter or trace reason of scanning or copying in a process's own
    context is left."""
    knobs = sysfs_attributes()
    assert NICE_KNOB in knobs and NICE_KNOB in abi_files()
    for what, names in (("knob", knobs), ("documented knob", abi_files()),
                        ("/proc/<pid>/kmmscand line", set(proc_figures())),
                        ("vmstat counter", vmstat_counters()),
                        ("memory.stat entry", memcg_events()),
                        ("skip reason", skip_reasons())):
        left = sorted(n for n in names if "owner" in n or "handed" in n)
        assert not left, f"{what}s of work done by the processes: {left}"
    assert "kmmscand_cpu_us" in vmstat_counters()
    assert "kmmscand_cpu_us" not in memcg_events(), \
        "memory.stat has the thread's CPU, which no cgroup is charged"
    assert "kmmscand_cpu_ns" in proc_figures()


def test_cost_model_defaults_exist():
    """The cost model reads these defines at the end of a bench run."""
    try:
        defaults = costmodel.kmmscand_defaults()
    except ValueError as e:
        pytest.fail(str(e))
    assert set(defaults) == set(costmodel.DEFAULTS)
