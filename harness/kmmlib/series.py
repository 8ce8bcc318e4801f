"""The series as mail: `make series`, `make series-check`, `make deb`.

series        git format-patch of build/linux (kmm-base..kmmscand) into
              out/series/, with a cover letter (summary, how to reproduce
              the benchmark, the benchmark table of out/bench/table.md
              if this checkout made a full run, or else the last full
              run's as results/bench.md publishes it).
series-check  checkpatch --strict on every mailed patch; `git am` of
              out/series on the base in a clone of its own
              (build/series-src) must give exactly the tree `make kernel`
              builds; then the kernel is built after each patch of that
              clone (O=build/obj-series), naming the first that breaks.
deb           bindeb-pkg of the series (O=build/obj-deb) into out/deb/.

Every build holds /tmp/kmm-heavy.lock for its own duration only, so that
other heavy jobs can run between the steps of a long check.
"""

import fcntl
import glob
import json
import os
import re
import shutil
import subprocess
import textwrap
import time

from . import bench, check, kernel, results, tree, vm
from .common import (BASE_VERSION, BUILD, LOGS, OUT, REPO, Progress,
                     base_info, base_line, die, ensure_dir, say,
                     take_heavy_lock)

SERIES_OUT = os.path.join(OUT, "series")
DEB_OUT = os.path.join(OUT, "deb")
BENCH_TABLE = os.path.join(OUT, "bench", "table.md")
BENCH_JSON = os.path.join(OUT, "bench", "bench.json")
# The cover letter's answers to the questions reviewers asked of the
# earlier scanning proposals, with the figures of the last full run.
QUESTIONS = os.path.join(REPO, "harness", "cover-questions.txt")
# The series' version: the cover letter says what changed since the first.
SUBJECT_PREFIX = "PATCH v2"
# What changed since the first version, for the cover letter.
CHANGES = os.path.join(REPO, "harness", "cover-changes.txt")
SRC = os.path.join(BUILD, "series-src")
OBJ = os.path.join(BUILD, "obj-series")
OBJ_DEB = os.path.join(BUILD, "obj-deb")
COVER_SUBJECT = ("mm: kmmscand: promote hot pages from slow memory tiers "
                 "with a scanning thread")
# series-check builds the release flavour (no debug checkers: faster, and
# what users run) plus the KUnit suites, so that each patch's KUnit cases
# are compiled with it. Later assignments override the fragments'.
SERIES_CHECK_EXTRA = """# --- series-check: compile the KUnit suites too
CONFIG_KUNIT=y
CONFIG_KUNIT_ALL_TESTS=n
CONFIG_KMMSCAND_KUNIT_TEST=y
CONFIG_NUMA_PROMOTE_LIMIT_KUNIT_TEST=y
"""
# Files a kernel build never reads: a patch that changes only these builds
# exactly as the one before it (series-check still builds the last patch).
NOT_BUILT = ("Documentation/", "tools/", "MAINTAINERS")
# Debian packages bindeb-pkg needs (its debian/control asks for
# debhelper-compat, which dpkg-buildpackage checks).
DEB_TOOLS = ("dpkg-dev", "debhelper", "fakeroot")
# What bindeb-pkg writes next to its object directory: the packages, and
# the .buildinfo and .changes that describe them (dput and debsign read
# the .changes), all moved to out/deb/ together.
DEB_PRODUCTS = (".deb", ".buildinfo", ".changes")
# What a distro config needs on top to build here and to have the series.
DEB_EXTRA_OPTIONS = [
    # Debian's config names certificates that only exist in its packaging.
    ["--set-str", "SYSTEM_TRUSTED_KEYS", ""],
    ["--set-str", "SYSTEM_REVOCATION_KEYS", ""],
    ["--enable", "KMMSCAND"],
]


# ---------------------------------------------------------------- helpers

def src_lock():
    """Held by series-check and deb: both drive build/series-src."""
    ensure_dir(BUILD)
    f = open(os.path.join(BUILD, "series-src.lock"), "a", encoding="utf-8")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        die("another make series-check or make deb is using "
            "build/series-src; wait for it to finish")
    return f


def src_git(*args, check_rc=True, env=None):
    """git in build/series-src, with the series' identity and dates."""
    return tree.git(*args, cwd=SRC, check=check_rc, env=env)


def mailed_patches():
    """out/series patch files in order, without the cover letter."""
    files = sorted(glob.glob(os.path.join(SERIES_OUT, "[0-9][0-9][0-9][0-9]-*.patch")))
    return [f for f in files if not os.path.basename(f).startswith("0000-")]


def fmt_time(seconds):
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


# ---------------------------------------------------------------- series

def text_section(path):
    """The text of @path for the cover letter, or "" without the file."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip() + "\n"
    except FileNotFoundError:
        return ""


def questions_section():
    """The reviewers' questions and their answers, from QUESTIONS."""
    return text_section(QUESTIONS)


def bench_section():
    """The cover letter's benchmark part: how to run it and its table."""
    lines = ["Benchmark", "---------", "",
             "To reproduce (from the kmmscand repository, on a Debian 12",
             "machine; it builds the release kernel and runs every workload",
             "in a two-tier QEMU VM, one node fast with the CPUs, one slow",
             "and CPU-less):", "",
             "  make bench          # about 35 minutes on 2 cores",
             "  make bench QUICK=1  # about 6 minutes", "",
             "Figures are ratios to the NUMA balancing tiering mode and oracle",
             "runs of the same invocation, since absolute times under TCG mean",
             "little.", ""]
    if local_full_run():
        with open(BENCH_TABLE, encoding="utf-8") as f:
            table = f.read().strip()
        when = time.strftime("%Y-%m-%d", time.gmtime(os.path.getmtime(BENCH_TABLE)))
        lines += [f"Results of the last run ({when}; full data in "
                  "out/bench/bench.json):", "", table, ""]
    elif (table := results.read("bench").strip()):
        lines += [published_intro(results.read_meta("bench")), "", table, ""]
    else:
        lines += ["(No benchmark table yet: neither out/bench/table.md of a",
                  "full run nor results/bench.md.  Run `make bench`, then",
                  "`make series` again.)", ""]
    return "\n".join(lines)


def published_intro(meta):
    """What the cover letter says of the table of results/bench.md: the
    run's date, commit, command and size, from the file's header."""
    what = ", ".join(part for part in (
        meta.get("date"),
        meta.get("commit") and f"commit {meta['commit']}",
        meta.get("command") and f"`{meta['command']}`",
        meta.get("runs") and f"{meta['runs']} runs in " +
        ("one boot" if meta.get("boots", "1") == "1"
         else f"{meta['boots']} boots")) if part)
    text = ("Results of the last full run, as the repository's "
            f"results/bench.md publishes it ({what or 'no header'}).")
    if meta.get("source"):
        # The header's Markdown links, as plain text for the mail.
        source = re.sub(r"\[([^]]*)\]\([^)]*\)", r"\1", meta["source"])
        text += f"  Source: {source}."
    return textwrap.fill(text, width=72)


def local_full_run():
    """Whether out/bench holds a full run: every workload and configuration.

    A partial one (QUICK=1, WORKLOADS=, CONFIGS=) does not speak for the
    series in a cover letter.
    """
    if not (os.path.exists(BENCH_TABLE) and os.path.exists(BENCH_JSON)):
        return False
    with open(BENCH_JSON, encoding="utf-8") as f:
        doc = json.load(f)
    return (not doc.get("quick") and
            set(bench.FULL_WORKLOADS) <= set(doc.get("workloads", ())) and
            set(bench.DEFAULT_CONFIGS) <= set(doc.get("configs", ())))


def cover_blurb(subjects):
    info = base_info()
    listing = "\n".join(f"  {i:2d}. {s}" for i, s in enumerate(subjects, 1))
    return f"""On machines with tiered memory (CXL-attached or otherwise slower,
CPU-less NUMA nodes), hot pages on a slow node should move to a fast one.
NUMA balancing in tiering mode (kernel.numa_balancing=2) finds them through
hint faults taken in the application's own context, so the application
pays for the scan, the faults and the copies.  This series adds kmmscand, a
kernel thread that finds them by testing and clearing PTE Accessed bits and
promotes them with the misplaced-folio migration path, so the application
takes no hint faults.  Its scan cost follows hot memory rather than mapped
memory: a per-region skip history on KSM's smart scan schedule, the
Accessed bit of non-leaf PMD entries, and skipping mms that have not run,
from the hint MGLRU already keeps.  Promotions from both kmmscand and NUMA
balancing obey one per-node rate limit, moved to mm/.

The patches, each of which builds:

{listing}

First the preparations to code that exists: the vmstat counters;
pgpromote_success counted for every promotion path; the promotion rate
limit moved to mm/promote_limit.c (one word per node, charged per CPU in
stocks), which NUMA balancing now obeys with free space too, with its
sysctl documentation and KUnit suite; KSM's smart scan schedule shared;
migrate_misplaced_folios(), which migrates a list of isolated folios with
one migrate_pages() call; migrate_balanced_pgdat() made callable from the
rest of mm/; MGLRU's mm usage hint made one that any page table walker
can own a bit of.  Then kmmscand itself, its hooks and its use of the rate
limit; the scan-cost optimisations, one patch each with its knob, counter
and measurements (a skip history per region, the Accessed bit of
non-leaf PMD entries, the mm usage hint to pass over idle mms); one
migrate_pages() call and one TLB flush per batch; a full top tier
(back-off, kswapd's headroom where kmmscand found no room, a heat
threshold per node, min_heat); memory policies and the owner of an mm;
scale (mms queued by due time, a
work budget per pass, mms with nothing to scan passed over, all of the
work in the thread, at a nice level of its own); control and
visibility (/proc/<pid>/kmmscand, prctl, memory.kmmscand, memory.stat);
last the selftests, the documentation and the kmmscand-top.py tool.

{text_section(CHANGES)}
{questions_section()}
{bench_section()}
Base: Linux {info.get('kernel', '?')} (Debian {info['package']}
{info['package_version']}).  The series applies to any {BASE_VERSION}-based
tree with `git am`.
"""


def write_cover(cover, subjects, count):
    """Fill format-patch's cover letter placeholders."""
    with open(cover, encoding="utf-8") as f:
        text = f.read()
    if "*** SUBJECT HERE ***" not in text or "*** BLURB HERE ***" not in text:
        die(f"{cover}: git format-patch wrote no placeholders to fill")
    text = text.replace("*** SUBJECT HERE ***", COVER_SUBJECT)
    text = text.replace("*** BLURB HERE ***", cover_blurb(subjects))
    with open(cover, "w", encoding="utf-8") as f:
        f.write(text)
    say(f"out/series: cover letter and {count} patches")


def unclaimed_files():
    """New files in the repo that no patch introduces (patches/new-files)."""
    claims = tree.new_file_claims()
    return [rel for rel in tree.overlay_files() if rel not in claims]


def series_tip():
    """build/linux refreshed; the commit of the series' last patch.

    New files no patch introduces are committed after the series by
    `make tree` (so make kernel and make check see them); they are not part
    of the mail, and series-check fails until a patch introduces them.
    """
    tip = tree.refresh()
    loose = unclaimed_files()
    if loose:
        say("warning: out/series leaves out new files no patch introduces "
            f"(name them in patches/new-files): {', '.join(loose)}")
        tip = tree.git("rev-parse", f"{tip}^")
    return tip


def export():
    """make series: out/series/ from build/linux's kmmscand branch."""
    tip = series_tip()
    ensure_dir(SERIES_OUT)
    for old in glob.glob(os.path.join(SERIES_OUT, "*.patch")):
        os.remove(old)
    files = tree.git("format-patch", "--numbered", "--cover-letter",
                     "--no-signature", f"--subject-prefix={SUBJECT_PREFIX}",
                     "-o", SERIES_OUT,
                     f"kmm-base..{tip}").split("\n")
    files = [f for f in files if f]
    if not files:
        die("git format-patch wrote nothing: is the series empty?")
    subjects = [tree.patch_subject(os.path.join(tree.PATCHES, n))
                for n in tree.series_patches()]
    if len(files) != len(subjects) + 1:
        die(f"git format-patch wrote {len(files) - 1} patches for the "
            f"{len(subjects)} of patches/series; run `make tree`")
    write_cover(files[0], subjects, len(subjects))
    return tip


# ---------------------------------------------------------------- checks

def checkpatch_mailed():
    """checkpatch --strict on each mailed patch; [(file, findings)]."""
    bad = []
    for path in mailed_patches():
        found = check.checkpatch(path, False)
        mark = "clean" if not found else f"{len(found)} finding(s)"
        say(f"checkpatch {os.path.basename(path)}: {mark}")
        if found:
            bad.append((os.path.basename(path), found))
    return bad


def ensure_src():
    """build/series-src: a clone of build/linux, at the base, clean."""
    if not os.path.isdir(os.path.join(SRC, ".git")):
        say(f"cloning the base into {os.path.relpath(SRC, REPO)}")
        res = subprocess.run(["git", "clone", "-q", "--shared", "-n",
                              tree.TREE, SRC], capture_output=True, text=True,
                             check=False)
        if res.returncode != 0:
            die(f"git clone of {tree.TREE} failed:\n{res.stderr.strip()}")
        src_git("config", "gc.auto", "0")
    src_git("fetch", "-q", tree.TREE, "+refs/tags/kmm-base:refs/tags/kmm-base")
    src_git("am", "--abort", check_rc=False)
    src_git("checkout", "-q", "-f", "--detach", "kmm-base")
    src_git("clean", "-q", "-f", "-d")


def am_series(want_tree):
    """git am out/series on the base; the tree must be the one we build."""
    ensure_src()
    patches = mailed_patches()
    res = subprocess.run(["git", "am", "-q", *patches], cwd=SRC,
                         env={**os.environ, **tree.IDENT}, capture_output=True,
                         text=True, check=False)
    if res.returncode != 0:
        src_git("am", "--abort", check_rc=False)
        die(f"git am of out/series on the base failed:\n"
            f"{(res.stdout + res.stderr).strip()}")
    got = src_git("rev-parse", "HEAD^{tree}")
    want = tree.git("rev-parse", f"{want_tree}^{{tree}}")
    if got != want:
        diff = src_git("diff", "--stat", "HEAD", want, check_rc=False)
        die(f"git am of out/series gives tree {got[:12]}, but make kernel "
            f"builds {want[:12]}:\n{diff}")
    say(f"git am of out/series on the base: tree {got[:12]}, identical to "
        "the one make kernel builds")
    return src_git("rev-list", "--reverse", "kmm-base..HEAD").split()


def step_make(args, log, what, lock=True):
    """One make in build/series-src under the heavy lock; output to log."""
    env = {**os.environ, **kernel.make_env()}
    cc = "ccache gcc" if shutil.which("ccache") else "gcc"
    jobs = str(os.cpu_count() or 1)
    cmd = ["make", "-C", SRC, f"-j{jobs}", "ARCH=x86_64", f"CC={cc}", *args]
    lockf = take_heavy_lock() if lock else None
    try:
        with open(log, "a", encoding="utf-8") as logf:
            logf.write("$ " + " ".join(cmd) + "\n")
            logf.flush()
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            prog = Progress(what)
            compiled = 0
            for line in proc.stdout or ():
                logf.write(line)
                if line.startswith("  CC "):
                    compiled += 1
                    prog.update(f"{compiled} objects compiled")
            rc = proc.wait()
    finally:
        if lockf:
            lockf.close()
    return rc, compiled


def build_errors(log):
    with open(log, encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    hits = [ln for ln in lines
            if re.search(r"error|undefined reference", ln, re.I)]
    return "".join(hits[-15:] or lines[-15:])


def configure_step(log):
    """allnoconfig + release fragments + KUnit, at this step's Kconfig."""
    ensure_dir(OBJ)
    frag = os.path.join(OBJ, "kmm.config")
    with open(frag, "w", encoding="utf-8") as f:
        f.write(kernel.fragment_text("release") + "\n" + SERIES_CHECK_EXTRA)
    rc, _ = step_make([f"O={OBJ}", "KCONFIG_ALLCONFIG=kmm.config",
                       "allnoconfig"], log, "configuring", lock=False)
    if rc != 0:
        die(f"make allnoconfig failed; see {log}\n{build_errors(log)}")


def check_final_config():
    """At the last step every fragment option must have taken."""
    have = {}
    with open(os.path.join(OBJ, ".config"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^(CONFIG_\w+)=(.*)$", line.strip())
            if m:
                have[m.group(1)] = m.group(2)
    want = kernel.wanted_options(kernel.fragment_text("release") +
                                 SERIES_CHECK_EXTRA)
    bad = [f"{o}={v} (got {have.get(o, 'n')})" for o, v in want.items()
           if have.get(o, "n") != v]
    if bad:
        die("series-check config: options that did not take at the last "
            "patch:\n  " + "\n  ".join(bad))


def touches_kernel_build(commit):
    """Whether a commit changes a file the kernel build reads."""
    changed = src_git("diff", "--name-only", f"{commit}^", commit).split()
    return any(not p.startswith(NOT_BUILT) for p in changed)


def parse_only(only, count):
    """--only N-M,K,...: the 0-based indices of the patches (numbered from
    1) to build after."""
    wanted: set[int] = set()
    for part in (only or "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            die(f"--only {only}: want N, N-M or a comma-separated list of "
                f"them, patch numbers from 1 to {count}")
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        if not 1 <= first <= last <= count:
            die(f"--only {only}: want 1 <= N <= M <= {count}")
        wanted.update(range(first - 1, last))
    return wanted


# The kselftest programs of the series: after a patch that adds or changes
# one, series-check --tests runs it whole in the two-tier VM on the kernel
# of that prefix (with its timeout in seconds there: the release flavour
# is faster than the debug kernel make check runs them on).
SERIES_KSELFTESTS = {name: timeout for name, timeout in check.KSELFTESTS
                     if name != "ksm_functional_tests"}
KSFT_DIR = "tools/testing/selftests/mm"
KSFT_OUT = os.path.join(OUT, "series-ksft")


def changed_kselftests(commit):
    """The series' kselftest programs whose source @commit adds or changes."""
    changed = src_git("diff", "--name-only", f"{commit}^", commit,
                      "--", KSFT_DIR).split()
    return [n for n in SERIES_KSELFTESTS
            if f"{KSFT_DIR}/{n}.c" in changed]


def test_prefix(number, count, programs, tally):
    """Build @programs after patch @number of @count, against its headers,
    and run each whole in the two-tier VM on the kernel just built; add
    the results of every case and a splat check to @tally."""
    label = f"[{number}/{count}]"
    log = os.path.join(LOGS, "series-check.log")
    rc, _ = step_make([f"O={OBJ}", "headers"], log, f"{label}: headers")
    if rc != 0:
        die(f"{label}: make headers failed; see {log}\n{build_errors(log)}")
    shutil.rmtree(KSFT_OUT, ignore_errors=True)
    ensure_dir(KSFT_OUT)
    hdr = os.path.join(OBJ, "usr", "include")
    res = subprocess.run(["make", "-C", os.path.join(SRC, KSFT_DIR),
                          f"OUTPUT={KSFT_OUT}",
                          f"KHDR_INCLUDES=-isystem {hdr}"] +
                         [os.path.join(KSFT_OUT, n) for n in programs],
                         capture_output=True, text=True, check=False)
    with open(log, "a", encoding="utf-8") as f:
        f.write(res.stdout + res.stderr)
    if res.returncode != 0:
        tally.add(f"{label}: building {' '.join(programs)}", "fail",
                  f"see {os.path.relpath(log, REPO)}")
        return
    guest_out = os.path.join(vm.VM_DIR, "series-ksft")
    specs = " ".join(f"{os.path.join(KSFT_OUT, n)}:{SERIES_KSELFTESTS[n]}"
                     for n in programs)
    timeout = check.VM_MARGIN + sum(SERIES_KSELFTESTS[n] for n in programs)
    console = os.path.join(LOGS, "series-tests-console.log")
    say(f"{label}: running {' '.join(programs)} in the two-tier VM")
    image = os.path.join(OBJ, "arch", "x86", "boot", "bzImage")
    run = vm.boot(image, f"sh {check.GUEST_RUNNER} {guest_out} {specs}",
                  timeout, log=console, label="series tests",
                  echo=check.Progress(), movable_dimm=True)
    # Each prefix's console and TAP are kept for the report.
    keep = os.path.join(OUT, "series-tests", str(number))
    shutil.rmtree(keep, ignore_errors=True)
    ensure_dir(keep)
    shutil.copy2(console, os.path.join(keep, "console.log"))
    for path in glob.glob(os.path.join(guest_out, "*.tap")) + \
            glob.glob(os.path.join(guest_out, "*.rc")):
        shutil.copy2(path, keep)
    if run.timed_out or run.status is None:
        tally.add(f"{label}: VM run", "fail",
                  "timed out" if run.timed_out else "no exit status")
    check.report_kselftests(tally, programs, tap_dir=keep,
                            prefix=f"{label}: ")
    splats = run.splats()
    for s in splats:
        print("[kmm] kernel splat in the guest log:\n" + s + "\n")
    tally.add(f"{label}: no kernel splat", "fail" if splats else "pass")


def build_each(commits, only=None, tests=False):
    """Build the kernel after each patch (or those @only names); stop at
    the first that breaks.  With @tests, run the kselftest programs a
    patch adds or changes on the kernel of its prefix."""
    names = tree.series_patches()
    mailed = [os.path.basename(p) for p in mailed_patches()]
    log = os.path.join(LOGS, "series-check.log")
    ensure_dir(LOGS)
    with open(log, "w", encoding="utf-8") as f:
        f.write(f"== {base_line()}\n")
    times = []
    wanted = parse_only(only, len(commits)) if only else range(len(commits))
    tally = check.Tally() if tests else None
    for i, commit in enumerate(commits):
        label = f"[{i + 1}/{len(commits)}] {names[i]}"
        if i not in wanted:
            continue
        programs = changed_kselftests(commit) if tests else []
        if (0 < i < len(commits) - 1 and not programs and
                not touches_kernel_build(commit)):
            say(f"{label}: changes no file of the kernel build "
                "(Documentation/, tools/, MAINTAINERS): builds as the one before")
            continue
        src_git("checkout", "-q", "-f", "--detach", commit)
        start = time.time()
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"\n== {label} ({commit[:12]})\n")
        configure_step(log)
        if i == len(commits) - 1:
            check_final_config()
        rc, compiled = step_make([f"O={OBJ}", "bzImage"], log,
                                 f"{label}: building")
        took = time.time() - start
        if rc != 0:
            die(f"the kernel does not build after patch {i + 1}, "
                f"{names[i]} (out/series/{mailed[i]}); see {log}\n"
                f"{build_errors(log)}")
        times.append(took)
        say(f"{label}: builds ({compiled} objects, {fmt_time(took)})")
        if programs:
            test_prefix(i + 1, len(commits), programs, tally)
    if tally is not None:
        if tally.failures:
            print("\nFailed:\n  " + "\n  ".join(tally.failures))
        say("kselftests at their prefixes: " + tally.summary())
        if tally.failed:
            die("series-check: a kselftest failed at the prefix that "
                "adds or changes it")
    return times


def series_check(only=None, tests=False):
    """make series-check: checkpatch, git am equality, a build per patch."""
    lock = src_lock()
    tip = export()
    problems = []
    say("checkpatch --strict on every patch of out/series")
    for name, found in checkpatch_mailed():
        problems.append(f"checkpatch {name}:\n    " + "\n    ".join(found))
    loose = unclaimed_files()
    if loose:
        problems.append("the tree make kernel builds also holds new files "
                        "that no patch introduces: " + ", ".join(loose))
    commits = am_series(tip)
    if len(commits) != len(tree.series_patches()):
        die(f"git am made {len(commits)} commits for "
            f"{len(tree.series_patches())} patches")
    times = build_each(commits, only, tests)
    which = f"patches {only} of the series build" if only else \
        "every prefix of the series builds"
    say(f"{which}: {len(times)} builds, "
        f"{fmt_time(sum(times))} in all, longest {fmt_time(max(times))}")
    if problems:
        die("series-check: " + "\n".join(problems))
    say("series-check: passed")
    lock.close()
    return 0


# ---------------------------------------------------------------- deb

def deb_configure(base_config, log):
    """obj-deb/.config: the given config + the series, or the release one."""
    ensure_dir(OBJ_DEB)
    if base_config:
        if not os.path.isfile(base_config):
            die(f"DEB_CONFIG={base_config}: no such file")
        shutil.copy(base_config, os.path.join(OBJ_DEB, ".config"))
        cfg = os.path.join(SRC, "scripts", "config")
        for opt in DEB_EXTRA_OPTIONS:
            subprocess.run([cfg, "--file", os.path.join(OBJ_DEB, ".config"),
                            *opt], check=True)
        target = ["olddefconfig"]
        say(f"configuring from {base_config} + CONFIG_KMMSCAND=y (olddefconfig)")
    else:
        with open(os.path.join(OBJ_DEB, "kmm.config"), "w",
                  encoding="utf-8") as f:
            f.write(kernel.fragment_text("release"))
        target = ["KCONFIG_ALLCONFIG=kmm.config", "allnoconfig"]
        say("configuring the release flavour (allnoconfig + "
            "harness/config/{base,release,feature}.config)")
    rc, _ = step_make([f"O={OBJ_DEB}", *target], log, "configuring",
                      lock=False)
    if rc != 0:
        die(f"configuring the deb kernel failed; see {log}\n{build_errors(log)}")
    with open(os.path.join(OBJ_DEB, ".config"), encoding="utf-8") as f:
        if "CONFIG_KMMSCAND=y\n" not in f.read():
            die("CONFIG_KMMSCAND=y did not take in the deb config (it needs "
                "NUMA, MIGRATION and NUMA_BALANCING)")


def deb_products(folder):
    """What bindeb-pkg writes in @folder: the packages, .buildinfo, .changes."""
    return [path for ext in DEB_PRODUCTS
            for path in glob.glob(os.path.join(folder, f"*{ext}"))]


def check_deb_tools():
    """bindeb-pkg runs dpkg-buildpackage, which checks the build deps."""
    missing = [pkg for pkg in DEB_TOOLS
               if subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg],
                                 capture_output=True, text=True,
                                 check=False).stdout != "install ok installed"]
    if missing:
        die(f"make deb needs {', '.join(missing)}: "
            f"apt-get install {' '.join(missing)}")


def deb(base_config=None):
    """make deb: bindeb-pkg of the series into out/deb/."""
    check_deb_tools()
    lock = src_lock()
    tip = export()
    am_series(tip)
    log = os.path.join(LOGS, "deb.log")
    ensure_dir(LOGS)
    with open(log, "w", encoding="utf-8") as f:
        f.write(f"== {base_line()}\n")
    deb_configure(base_config, log)
    # bindeb-pkg writes the packages next to the object directory.
    for old in deb_products(os.path.dirname(OBJ_DEB)):
        os.remove(old)
    start = time.time()
    rc, compiled = step_make([f"O={OBJ_DEB}", "LOCALVERSION=-kmmscand",
                              "KDEB_PKGVERSION=" + base_info()["kernel"] +
                              "-kmmscand1", "bindeb-pkg"], log,
                             "building the deb packages")
    if rc != 0:
        die(f"make bindeb-pkg failed (exit {rc}); see {log}\n{build_errors(log)}")
    debs = glob.glob(os.path.join(os.path.dirname(OBJ_DEB), "*.deb"))
    if not debs:
        die(f"make bindeb-pkg wrote no .deb next to {OBJ_DEB}; see {log}")
    ensure_dir(DEB_OUT)
    for old in deb_products(DEB_OUT):
        os.remove(old)
    for path in sorted(deb_products(os.path.dirname(OBJ_DEB))):
        shutil.move(path, os.path.join(DEB_OUT, os.path.basename(path)))
        size = os.path.getsize(os.path.join(DEB_OUT, os.path.basename(path)))
        say(f"out/deb/{os.path.basename(path)} ({size / 1e6:.1f} MB)")
    say(f"deb packages built in {fmt_time(time.time() - start)} "
        f"({compiled} objects compiled)")
    lock.close()
    return 0
