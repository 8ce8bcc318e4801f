"""make check: the harness's own tests and lint, static checks of the
series, then KUnit and kselftests in the two-tier VM.

Every check adds results to a Tally; the last line printed is the summary
"N passed, N failed, N skipped". A kernel splat anywhere in the guest's log
is a failure of its own, printed in full.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

from . import kernel, lint, tree, vm
from .common import (HARNESS, LOGS, OUT, REPO, TREE, base_line,
                     build_workload, ensure_dir, run, say)

KSFT_SRC = os.path.join(TREE, "tools", "testing", "selftests", "mm")
KSFT_OUT = os.path.join(OUT, "ksft")
GUEST_RUNNER = os.path.join(HARNESS, "guest", "run-tests.sh")

# kselftests make check runs, each with its timeout in seconds in the VM.
# The debug kernel under TCG is slow; a timeout is a hang, not slowness.
KSELFTESTS = [
    ("numa_tiering", 600),
    # KSM's own, unchanged by the series but for its skip schedule, which
    # it now shares with kmmscand (smart_scan_skips()).
    ("ksm_functional_tests", 600),
    # 500 to 660 s; its many_processes_promoted waits up to 420 s on a slow
    # machine, as long as promotion makes progress.
    ("kmmscand", 1200),
    ("promote_rate_limit", 900),
    # The bounded form of the stress suite: about 150 to 190 s under TCG.
    ("kmmscand_stress", 600),
]
# The test of tools/mm/kmmscand-top.py on a real run, with its timeout: a
# script of ours that reports TAP like the kselftests (run after them).
# 93 to 125 s under the debug kernel in TCG: its 40 s window took 62 to
# 79 s to sample, and each of its five Python starts about 7 s.
TOOL_TEST = os.path.join(HARNESS, "guest", "kmmscand_top_test")
TOOL_TEST_TIMEOUT = 240
TOOL = os.path.join(TREE, "tools", "mm", "kmmscand-top.py")
# The whole VM run: boot, every test's timeout, and margin for the rest.
VM_MARGIN = 300


def group_of(name):
    """The group a result is summed in: a kselftest program, a KUnit suite,
    checkpatch, or the check itself."""
    if name.startswith("checkpatch "):
        return "checkpatch"
    if name.startswith("KUnit ") and "." in name:
        return name.split(".", 1)[0]
    if ": " in name:
        return name.split(": ", 1)[0]
    return name


class Tally:
    """Results of a check. A failure or skip shows when it is added, with
    its reason; passes show as counts per group in the summary."""

    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.failures = []
        self.groups = {}

    def add(self, name, outcome, detail=""):
        if outcome not in ("pass", "skip"):
            outcome = "fail"
        counts = self.groups.setdefault(group_of(name),
                                        {"pass": 0, "skip": 0, "fail": 0})
        counts[outcome] += 1
        if outcome == "pass":
            self.passed += 1
            return
        if outcome == "skip":
            self.skipped += 1
        else:
            self.failed += 1
            self.failures.append(name)
        mark = "SKIP" if outcome == "skip" else "FAIL"
        print(f"  {mark:4} {name}" + (f"  ({detail})" if detail else ""),
              flush=True)

    def report(self):
        """A line per group, then the failures, then summary()."""
        width = max((len(g) for g in self.groups), default=0)
        lines = ["Results by group:"]
        for group, c in self.groups.items():
            counts = [f"{c['pass']} passed"]
            counts += [f"{c[k]} {w}" for k, w in (("fail", "failed"),
                                                  ("skip", "skipped")) if c[k]]
            lines.append(f"  {group:{width}}  {', '.join(counts)}")
        if self.failures:
            lines += ["", "Failed:"] + ["  " + f for f in self.failures]
        lines.append(self.summary())
        return "\n".join(lines)

    def summary(self):
        return (f"{self.passed} passed, {self.failed} failed, "
                f"{self.skipped} skipped")


# ---------------------------------------------------------------- static

def checkpatch(path, is_file):
    args = ["perl", os.path.join(TREE, "scripts", "checkpatch.pl"), "--strict",
            "--terse", "--show-types", "--no-summary"]
    if is_file:
        args.append("-f")
    res = subprocess.run(args + [path], cwd=TREE, capture_output=True,
                         text=True, check=False)
    return [line for line in res.stdout.splitlines()
            if re.search(r": (ERROR|WARNING|CHECK):\w+:", line)]


def check_static(t, tip):
    say("static checks: checkpatch --strict")
    for name in tree.series_patches():
        found = checkpatch(os.path.join(tree.PATCHES, name), False)
        t.add(f"checkpatch patches/{name}", "fail" if found else "pass",
              "; ".join(found[:3]))
    for rel in tree.overlay_files():
        if not rel.endswith((".c", ".h")):
            continue
        found = checkpatch(os.path.join(REPO, rel), True)
        t.add(f"checkpatch {rel}", "fail" if found else "pass",
              "; ".join(found[:3]))


def added_lines(tip):
    """{path: set(line numbers)} of lines the series adds or changes."""
    diff = tree.git("diff", "-U0", "kmm-base", tip)
    added: dict[str, set[int]] = {}
    path = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("@@") and path:
            m = re.search(r"\+(\d+)(?:,(\d+))?", line)
            if not m:
                continue
            start, count = int(m.group(1)), int(m.group(2) or 1)
            added.setdefault(path, set()).update(range(start, start + count))
    return added


def series_objects(tip):
    """Kernel .o files built from .c files the series adds or changes."""
    changed = tree.git("diff", "--name-only", "kmm-base", tip).split("\n")
    objs = []
    for path in changed:
        if path.endswith(".c") and not path.startswith(("tools/", "scripts/",
                                                        "Documentation/")):
            objs.append(path[:-2] + ".o")
    return objs


def new_warnings(output, added):
    """Compiler/sparse diagnostics that point at lines the series added."""
    hits = []
    for line in output.splitlines():
        m = re.match(r"^(?:\.\./)*(?:[\w./-]*?/linux/)?([\w./-]+):(\d+):(?:\d+:)? "
                     r"(warning|error)", line)
        if m and int(m.group(2)) in added.get(m.group(1), ()):
            hits.append(line)
    return hits


def check_warnings(t, tip):
    objs = series_objects(tip)
    if not objs:
        t.add("W=1 build of the series' files", "skip", "no .c file changed")
        t.add("sparse on the series' files", "skip", "no .c file changed")
        return
    added = added_lines(tip)
    for label, extra in (("W=1", ["W=1"]), ("sparse (C=2)", ["C=2"])):
        say(f"static checks: {label} on {len(objs)} objects")
        rc, out = kernel.build_objects("debug", objs, extra=extra)
        with open(os.path.join(LOGS, f"static-{extra[0][0]}.log"), "w",
                  encoding="utf-8") as f:
            f.write(out)
        hits = new_warnings(out, added)
        if rc != 0:
            t.add(f"{label} build of the series' files", "fail",
                  f"build failed; see out/logs/static-{extra[0][0]}.log")
        else:
            t.add(f"{label} build of the series' files",
                  "fail" if hits else "pass", "; ".join(hits[:3]))
    # The flags changed the objects; rebuild them normally (cheap).


# ---------------------------------------------------------------- docs

# The documents of the series that Sphinx builds: the directories of the
# admin guide and of the design document (each a subdirectory of
# Documentation with its own index).
SPHINX_DIRS = ("admin-guide/mm", "mm")
DOCS_OUT = os.path.join(OUT, "docs")


def series_doc_lines(output, names):
    """The lines of a docs tool's output that name a file of the series."""
    return [line for line in output.splitlines()
            if any(n in line for n in names) and
            re.search(r"\b(warning|error|WARNING|ERROR)\b", line)]


def check_docs(t):
    """kernel-doc on the series' kernel sources, the ABI files validated,
    and the admin guide built with Sphinx, each with no warning that names
    a file of the series (the base tree's own warnings are not ours)."""
    files = [f for f in tree.overlay_files()
             if f.endswith((".c", ".h")) and not f.startswith("tools/")]
    names = [os.path.basename(f) for f in tree.overlay_files()]
    say(f"docs: kernel-doc on {len(files)} files")
    res = subprocess.run(["perl", "scripts/kernel-doc", "-none", "-Wall",
                          *files], cwd=TREE, capture_output=True, text=True,
                         check=False)
    found = [ln for ln in (res.stdout + res.stderr).splitlines()
             if "warning" in ln or "error" in ln]
    t.add("kernel-doc of the series' sources",
          "fail" if found or res.returncode else "pass", "; ".join(found[:3]))

    say("docs: the ABI files validated")
    res = subprocess.run(["perl", "scripts/get_abi.pl", "validate", "--dir",
                          "Documentation/ABI"], cwd=TREE, capture_output=True,
                         text=True, check=False)
    found = series_doc_lines(res.stdout + res.stderr, names)
    t.add("ABI files of the series", "fail" if found else "pass",
          "; ".join(found[:3]))

    if not shutil.which("sphinx-build"):
        t.add("Sphinx build of " + ", ".join(SPHINX_DIRS), "skip",
              "no sphinx-build (Debian: python3-sphinx; make deps)")
        return
    say("docs: Sphinx on " + ", ".join(SPHINX_DIRS))
    log = os.path.join(LOGS, "docs.log")
    res = subprocess.run(["make", "-s", f"SPHINXDIRS={' '.join(SPHINX_DIRS)}",
                          f"BUILDDIR={DOCS_OUT}", "htmldocs"], cwd=TREE,
                         capture_output=True, text=True, check=False)
    with open(log, "w", encoding="utf-8") as f:
        f.write(res.stdout + res.stderr)
    found = series_doc_lines(res.stdout + res.stderr, names)
    if res.returncode:
        t.add("Sphinx build of " + ", ".join(SPHINX_DIRS), "fail",
              "the build failed; see out/logs/docs.log")
    else:
        t.add("Sphinx build of " + ", ".join(SPHINX_DIRS),
              "fail" if found else "pass", "; ".join(found[:3]))


# ---------------------------------------------------------------- guest

def build_kselftests():
    ensure_dir(KSFT_OUT)
    present = [n for n, _ in KSELFTESTS
               if os.path.exists(os.path.join(KSFT_SRC, n + ".c"))]
    if not present:
        return []
    hdr = os.path.join(kernel.objdir("debug"), "usr", "include")
    say(f"building kselftests: {' '.join(present)}")
    run(["make", "-C", KSFT_SRC, f"OUTPUT={KSFT_OUT}",
         f"KHDR_INCLUDES=-isystem {hdr}"] +
        [os.path.join(KSFT_OUT, n) for n in present],
        log=os.path.join(LOGS, "kselftests-build.log"),
        what="building the kselftests")
    return present


# The diagnostic lines of a failed case: on its report line, and printed
# under the program's results.
FAIL_DIAG_LINES = 3
FAIL_DIAG_PRINTED = 20


def tap_cases(text):
    """(name, outcome, detail, diag) for each test case of a TAP stream.

    diag is the diagnostic lines ("# ...") printed since the case before
    it: kselftests print them before the result line they explain.  A
    failed case's detail is the last few of them."""
    cases = []
    diag = []
    for line in text.splitlines():
        if line.startswith("#"):
            diag.append(line)
            continue
        # "ok 3 name # SKIP why"; ksft_test_result_skip() writes no name
        m = re.match(r"^(not ok|ok) \d+ ?(.*?)(?:\s*#\s*(SKIP|TODO|XFAIL)\b(.*))?$",
                     line)
        if not m:
            continue
        if m.group(3) == "SKIP":
            outcome, detail = "skip", m.group(4).strip()
        elif m.group(1) == "ok":
            outcome, detail = "pass", ""
        else:
            outcome = "fail"
            detail = "; ".join(d.lstrip("# ").rstrip()
                               for d in diag[-FAIL_DIAG_LINES:]
                               if d.lstrip("# "))
        cases.append((m.group(2), outcome, detail, diag))
        diag = []
    return cases


def parse_tap(text):
    """(name, outcome, detail) for each test case of a TAP stream."""
    return [c[:3] for c in tap_cases(text)]


def failed_case_diagnostics(text):
    """(name, lines) of each failed case of a TAP stream: the last
    FAIL_DIAG_PRINTED diagnostic lines printed since the case before it."""
    return [(name, diag[-FAIL_DIAG_PRINTED:])
            for name, outcome, _, diag in tap_cases(text) if outcome == "fail"]


def report_kselftests(t, present, tap_dir=None, prefix="kselftest "):
    """Add each program's cases, from the TAP run-tests.sh wrote in
    @tap_dir, to @t, each name after @prefix."""
    tap_dir = tap_dir or os.path.join(vm.VM_DIR, "ksft")
    for name in present:
        tap_path = os.path.join(tap_dir, name + ".tap")
        rc_path = os.path.join(tap_dir, name + ".rc")
        if not os.path.exists(tap_path):
            t.add(f"{prefix}{name}", "fail", "did not run (VM died?)")
            continue
        with open(tap_path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        rc = open(rc_path).read().strip() if os.path.exists(rc_path) else "?"
        cases = parse_tap(text)
        for case, outcome, detail in cases:
            t.add(f"{prefix}{name}: {case}", outcome, detail)
        if rc in ("137", "124"):
            t.add(f"{prefix}{name}", "fail",
                  f"timed out; see {os.path.relpath(tap_path, REPO)}")
        elif not cases:
            t.add(f"{prefix}{name}", "fail" if rc != "4" else "skip",
                  f"no TAP results, exit {rc}")
        for case, diag in failed_case_diagnostics(text):
            if not diag:
                continue
            print(f"      {name}: {case} failed after:")
            print("\n".join("        " + ln for ln in diag))


def kunit_cases(group, prefix=""):
    """(suite.case, status) for every case of kunit.py's JSON, nested."""
    for case in group.get("test_cases", []):
        yield f"{prefix}{case.get('name', '?')}", case.get("status", "")
    for sub in group.get("sub_groups", []):
        yield from kunit_cases(sub, f"{prefix}{sub.get('name', '?')}.")


def report_kunit(t, console_log):
    """Parse the boot-time KTAP in the console with the kernel's kunit.py."""
    with open(console_log, encoding="utf-8", errors="replace") as f:
        if "KTAP version" not in f.read():
            t.add("KUnit", "fail", "no KTAP output in the console: "
                  "KUnit disabled or the kernel died before it ran")
            return
    path = os.path.join(LOGS, "kunit.json")
    if os.path.exists(path):
        os.remove(path)
    kunit = os.path.join(TREE, "tools", "testing", "kunit", "kunit.py")
    res = subprocess.run(["python3", kunit, "parse", f"--json={path}",
                          os.path.abspath(console_log)],
                         capture_output=True, text=True, check=False)
    with open(os.path.join(LOGS, "kunit.log"), "w", encoding="utf-8") as f:
        f.write(res.stdout + res.stderr)
    if not os.path.exists(path):
        t.add("KUnit", "fail", "kunit.py parse failed; see out/logs/kunit.log")
        return
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    cases = 0
    for name, status in kunit_cases(data):
        outcome = {"PASS": "pass", "SKIP": "skip"}.get(status, "fail")
        t.add(f"KUnit {name}", outcome, status if outcome == "fail" else "")
        cases += 1
    if not cases or res.returncode != 0:
        t.add("KUnit parse", "fail", "kunit.py parse: see out/logs/kunit.log")


def guest_command(present, hotset):
    tests = " ".join(f"{os.path.join(KSFT_OUT, n)}:{to}"
                     for n, to in KSELFTESTS if n in present)
    tests += f" {TOOL_TEST}:{TOOL_TEST_TIMEOUT}"
    return (f"KMM_TOP={TOOL} KMM_HOTSET={hotset} "
            f"sh {GUEST_RUNNER} {os.path.join(vm.VM_DIR, 'ksft')} {tests}")


def clock(secs):
    return f"{int(secs) // 60}m{int(secs) % 60:02d}s"


class Progress:
    """Shows each kselftest result as the guest reports it and, while a
    program is quiet, a heartbeat: its case count and elapsed time against
    its timeout. vm.boot() calls tick() about once a second."""

    RESULT = re.compile(r"^(not )?ok \d+ (.*)$")
    PLAN = re.compile(r"^1\.\.(\d+)$")
    # A quiet program shows a heartbeat line this often in a log; on a
    # terminal the line rewrites itself every tick.
    HEARTBEAT = 60

    def __init__(self, budgets=None):
        # Reset by the guest's first line: the boot may wait for the lock.
        self.started = time.time()
        self.heard = False
        self.budgets = budgets or {}
        self.prog = None
        self.prog_start = self.last = self.started
        self.cases = self.plan = 0
        self.tty = sys.stdout.isatty()
        self.shown = False

    def say(self, text):
        if self.shown:
            sys.stdout.write("\r\033[K")
            self.shown = False
        say(text)
        self.last = time.time()

    def heartbeat(self):
        now = time.time()
        budget = self.budgets.get(self.prog)
        plan = f" of {self.plan}" if self.plan else ""
        return (f"  {self.prog}: {self.cases}{plan} cases done, "
                f"{clock(now - self.prog_start)}" +
                (f" of its {clock(budget)} budget" if budget else ""))

    def tick(self):
        if not self.prog:
            return
        if self.tty:
            sys.stdout.write("\r[kmm] " + self.heartbeat() + "\033[K")
            sys.stdout.flush()
            self.shown = True
        elif time.time() - self.last >= self.HEARTBEAT:
            self.say(self.heartbeat())

    def __call__(self, line):
        line = line.rstrip("\n")
        if not self.heard:
            self.heard = True
            self.started = time.time()
        if line.startswith("KMM-TEST-START "):
            self.prog = line.split()[1]
            self.prog_start = time.time()
            self.cases = self.plan = 0
            self.say(f"  {self.prog} ...")
            return
        if line.startswith("KMM-TEST-END "):
            _, name, rc = line.split()
            self.say(f"  {name} done (exit {rc}, {self.cases} cases) "
                     f"[{clock(time.time() - self.started)}]")
            self.prog = None
            return
        m = self.PLAN.match(line)
        if m and self.prog:
            self.plan = int(m.group(1))
            return
        m = self.RESULT.match(line)
        if m and self.prog:
            self.cases += 1
            outcome = "FAIL" if m.group(1) else (
                "SKIP" if "# SKIP" in m.group(2) else "ok")
            if self.shown:
                sys.stdout.write("\r\033[K")
                self.shown = False
            print(f"      {outcome:4} {m.group(2)}", flush=True)
            self.last = time.time()


def check_harness(t):
    """The harness's own unit tests and lint, before anything is built:
    a harness that cannot parse a run fails here, not after the run."""
    say("the harness: unit tests (pytest), lint (ruff, mypy, shellcheck)")
    for name, result in (("harness unit tests", lint.unit),
                         ("harness lint", lint.lint)):
        ok, summary = result()
        t.add(name, "pass" if ok else "fail", summary)
        if ok:
            say(summary)


def check(skip_static=False):
    t = Tally()
    check_harness(t)
    tip = tree.refresh()
    say(base_line())
    image = kernel.build("debug")
    if not skip_static:
        check_static(t, tip)
        check_warnings(t, tip)
        check_docs(t)
        image = kernel.build("debug")
    present = build_kselftests()
    hotset = build_workload("hotset")
    budgets = {n: to for n, to in KSELFTESTS if n in present}
    budgets[os.path.basename(TOOL_TEST)] = TOOL_TEST_TIMEOUT
    timeout = VM_MARGIN + sum(budgets.values())
    say(f"booting the two-tier VM for KUnit, {len(present)} kselftest "
        f"programs and the test of kmmscand-top (up to {timeout} s)")
    res = vm.boot(image, guest_command(present, hotset), timeout,
                  log=os.path.join(LOGS, "check-console.log"),
                  label="tests", echo=Progress(budgets), movable_dimm=True)
    say(f"VM run took {int(res.elapsed)} s; console: out/logs/check-console.log")
    if res.timed_out or res.status is None:
        t.add("VM run", "fail", "timed out" if res.timed_out else
              "no exit status (guest crashed?)")
    report_kunit(t, os.path.join(LOGS, "check-console.log"))
    report_kselftests(t, present + [os.path.basename(TOOL_TEST)])
    splats = res.splats()
    for s in splats:
        print("[kmm] kernel splat in the guest log:\n" + s + "\n")
    t.add("no kernel splat (BUG/WARNING/KASAN/lockdep/Oops/stall/kmemleak)",
          "fail" if splats else "pass",
          f"{len(splats)} splats" if splats else "")
    print("\n" + t.report(), flush=True)
    return 0 if t.failed == 0 else 1
