"""make run: the demo workload in the two-tier VM."""

import os

from . import kernel, tree, vm
from .common import BUILD, HARNESS, LOGS, base_line, die, ensure_dir, say
from .common import run as run_cmd

HOTSET_SRC = os.path.join(HARNESS, "workloads", "hotset.c")
HOTSET = os.path.join(BUILD, "workloads", "hotset")
DEMO = os.path.join(HARNESS, "guest", "demo.sh")
MODES = ("none", "numab", "kmmscand")


def build_hotset():
    ensure_dir(os.path.dirname(HOTSET))
    run_cmd(["gcc", "-O2", "-Wall", "-o", HOTSET, HOTSET_SRC, "-lnuma"],
        log=os.path.join(LOGS, "workloads-build.log"),
        what="building the hotset workload")
    return HOTSET


def run(seconds):
    tree.refresh()
    say(base_line())
    image = kernel.build("debug")
    hotset = build_hotset()
    say(f"booting the two-tier VM: {seconds} s of hot-set access per mode "
        f"({', '.join(MODES)})")
    res = vm.boot(image, f"sh {DEMO} {hotset} {seconds} {' '.join(MODES)}",
                  timeout=300 + 3 * (seconds + 60), echo=True,
                  log=os.path.join(LOGS, "demo-console.log"))
    for s in res.splats():
        print("[kmm] kernel splat in the guest log:\n" + s)
    if res.status != 0:
        die(f"the demo failed in the guest (status {res.status}); "
            "see out/logs/demo-console.log")
    return 0
