"""make run: the demo workload in the two-tier VM."""

import os

from . import kernel, tree, vm
from .common import HARNESS, LOGS, base_line, build_workload, die, say

DEMO = os.path.join(HARNESS, "guest", "demo.sh")
MODES = ("none", "numab", "kmmscand")


def run(seconds):
    tree.refresh()
    say(base_line())
    image = kernel.build("debug")
    hotset = build_workload("hotset")
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
