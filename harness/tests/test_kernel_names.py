"""Every kmmscand name the harness uses exists on the kernel side of this
repository: a knob or counter renamed in the series must fail here, not
at the end of a 35-minute make bench.

The kernel side: mm/kmmscand.c (its sysfs attributes, the figures of
/proc/<pid>/kmmscand, the defaults the cost model reads), the ABI
document of its sysfs directory, and the vmstat counters the patches add
to mm/vmstat.c and include/linux/vm_event_item.h.
"""

import os
import re

import pytest

from kmmlib import costmodel, demo
from kmmlib.common import HARNESS, REPO

KMMSCAND_C = os.path.join(REPO, "mm", "kmmscand.c")
ABI = os.path.join(REPO, "Documentation", "ABI", "testing",
                   "sysfs-kernel-mm-kmmscand")
PATCHES = os.path.join(REPO, "patches")
GUEST = os.path.join(HARNESS, "guest")
WORKLOADS = os.path.join(HARNESS, "workloads")


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


def harness_counters():
    """vmstat counters the harness reads by name."""
    names = {k for _, keys in costmodel.TERMS for k in keys}
    names.add(costmodel.OWNER_MIGRATED)
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
    used = guest_knobs() | python_knobs()
    assert {"scan_enabled", "smart_scan", "pmd_young", "skip_idle_mm"} \
        <= used
    attrs, documented = sysfs_attributes(), abi_files()
    assert not used - attrs, "not in mm/kmmscand.c's kmmscand_attrs"
    assert not used - documented, "not in sysfs-kernel-mm-kmmscand"


def test_vmstat_counters_exist():
    used = harness_counters()
    assert "kmmscand_pte_scanned" in used
    counters = vmstat_counters()
    assert not used - counters, "no such counter in the series' mm/vmstat.c"
    events = vm_events()
    assert not {c.upper() for c in used} - events, \
        "no such event in the series' vm_event_item.h"


def test_proc_figures_exist():
    """tierbench reads owner_cpu_ns and owner_scans from
    /proc/self/kmmscand."""
    used = set()
    for f in os.listdir(WORKLOADS):
        if f.endswith(".c"):
            used |= set(re.findall(r'kmm_figure\("(\w+)"\)',
                                   read(os.path.join(WORKLOADS, f))))
    assert used >= {"owner_cpu_ns", "owner_scans"}
    shown = set(re.findall(r'seq_printf\(m, "(\w+) ', read(KMMSCAND_C)))
    assert not used - shown, "not a line of /proc/<pid>/kmmscand"


def test_cost_model_defaults_exist():
    """The cost model reads these defines at the end of a bench run."""
    try:
        defaults = costmodel.kmmscand_defaults()
    except ValueError as e:
        pytest.fail(str(e))
    assert set(defaults) == set(costmodel.DEFAULTS)
