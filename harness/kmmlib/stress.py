"""make stress: the kmmscand stress suite, long, in the two-tier VM.

The same kselftest program make check runs in its bounded form
(kmmscand_stress), here for STRESS_SECONDS of stress under the debug
kernel. Prints its TAP, its summary line (processes started, operations,
pages migrated, faults injected) and the splats in the guest's kernel
log; fails if a case failed or the log holds a splat.
"""

import os
import re

from . import check, kernel, tree, vm
from .common import HARNESS, LOGS, base_line, ensure_dir, run as run_cmd, say

NAME = "kmmscand_stress"
# Placement, the reaping deadlines and the isolation watch come on top of
# the stress time; under TCG they can double it. Plus a boot.
OVERHEAD_FACTOR = 2
OVERHEAD_S = 600
SUMMARY = re.compile(r"STRESS-SUMMARY (.*)")


def guest_command(seconds, timeout):
    prog = os.path.join(check.KSFT_OUT, NAME)
    outdir = os.path.join(vm.VM_DIR, "stress")
    runner = os.path.join(HARNESS, "guest", "run-tests.sh")
    return (f"KMM_STRESS_SECONDS={seconds} sh {runner} {outdir} "
            f"{prog}:{timeout}")


def build():
    """Build the program as make check builds its kselftests."""
    ensure_dir(check.KSFT_OUT)
    hdr = os.path.join(kernel.objdir("debug"), "usr", "include")
    run_cmd(["make", "-C", check.KSFT_SRC, f"OUTPUT={check.KSFT_OUT}",
             f"KHDR_INCLUDES=-isystem {hdr}",
             os.path.join(check.KSFT_OUT, NAME)],
            log=os.path.join(LOGS, "stress-build.log"),
            what=f"building the {NAME} kselftest")


def run(seconds):
    tree.refresh()
    say(base_line())
    image = kernel.build("debug")
    build()
    timeout = seconds * OVERHEAD_FACTOR + OVERHEAD_S
    say(f"booting the two-tier VM for {seconds} s of stress "
        f"(up to {timeout + check.VM_MARGIN} s)")
    res = vm.boot(image, guest_command(seconds, timeout),
                  timeout + check.VM_MARGIN,
                  log=os.path.join(LOGS, "stress-console.log"),
                  label="stress", movable_dimm=True)
    tap_path = os.path.join(vm.VM_DIR, "stress", NAME + ".tap")
    text = ""
    if os.path.exists(tap_path):
        with open(tap_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    print(text, flush=True)
    cases = check.parse_tap(text)
    failed = [c for c, o, _ in cases if o != "pass"]
    splats = res.splats()
    for s in splats:
        print("[kmm] kernel splat in the guest log:\n" + s + "\n")
    m = SUMMARY.search(text)
    summary = m.group(1) if m else "no summary line (the program died?)"
    verdict = (not failed and cases and not splats and not res.timed_out
               and res.status is not None and m)
    say(f"VM run took {int(res.elapsed)} s; console: "
        "out/logs/stress-console.log")
    print(f"stress: {summary} splats={len(splats)}")
    print(f"stress: {len(cases) - len(failed)} of {len(cases)} cases passed, "
          f"{len(splats)} splats: {'PASS' if verdict else 'FAIL'}",
          flush=True)
    return 0 if verdict else 1
