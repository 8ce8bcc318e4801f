"""Paths, logging and process helpers shared by every harness step."""

import contextlib
import fcntl
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import IO, NoReturn

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(REPO, "harness")
BUILD = os.path.join(REPO, "build")
OUT = os.path.join(REPO, "out")
TREE = os.path.join(BUILD, "linux")
LOGS = os.path.join(OUT, "logs")
VENV = os.path.join(BUILD, "venv")
# The series' base: Debian's linux-source-X.Y package, of X.Y = BASE_VERSION.
# A base the machine's own suites do not serve comes from the suite
# BASE_SUITES names for it, which `make deps` adds to apt, pinned so that
# nothing else comes from there (deps.py).  Moving the base is changing
# BASE_VERSION (docs/development.md, "The base").
BASE_VERSION = "6.12"
BASE_SUITES = {"7.3": "trixie-backports"}
BASE_SUITE = BASE_SUITES.get(BASE_VERSION)
BASE_PACKAGE = f"linux-source-{BASE_VERSION}"
BASE_TARBALL = f"/usr/src/{BASE_PACKAGE}.tar.xz"

# Top-level kernel directories whose files in this repo are new in-tree files
# (the overlay). Everything else in the repo is harness, docs or patches.
OVERLAY_ROOTS = ("Documentation", "arch", "fs", "include", "init", "kernel",
                 "lib", "mm", "scripts", "tools")


# One kernel build or VM at a time on this machine (2 cores): every build
# and boot holds this lock, whichever checkout it runs from.
HEAVY_LOCK = "/tmp/kmm-heavy.lock"
# How deep this process already is in heavy_job(): a boot inside a build's
# hold (the KVM probe) must not wait for itself.
_HEAVY_DEPTH = [0]


def take_heavy_lock():
    """An open file holding the heavy-job lock; close it to release.

    KMM_HOLDS_HEAVY_LOCK=1 says that the caller already holds it for the
    whole run (`KMM_HOLDS_HEAVY_LOCK=1 flock /tmp/kmm-heavy.lock make
    series-check`, when others keep taking it between the steps).
    """
    if os.environ.get("KMM_HOLDS_HEAVY_LOCK") == "1":
        return None
    f = open(HEAVY_LOCK, "a", encoding="utf-8")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say(f"waiting for {HEAVY_LOCK} (another heavy job runs)")
        fcntl.flock(f, fcntl.LOCK_EX)
    return f


@contextlib.contextmanager
def heavy_job():
    """Hold the heavy-job lock for a kernel build or a VM run."""
    lockf = take_heavy_lock() if not _HEAVY_DEPTH[0] else None
    _HEAVY_DEPTH[0] += 1
    try:
        yield
    finally:
        _HEAVY_DEPTH[0] -= 1
        if lockf:
            lockf.close()


class Failure(Exception):
    """A step failed; the message says what and what to do about it."""


def die(msg: str) -> NoReturn:
    raise Failure(msg)


def say(msg: str) -> None:
    print(f"[kmm] {msg}", flush=True)


def ensure_dir(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return path


def run(cmd, cwd=None, env=None, check=True, capture=False, log=None,
        what=None, timeout=None):
    """Run cmd; on failure raise Failure naming what failed and the log."""
    shown = cmd if isinstance(cmd, str) else " ".join(shlex.quote(c) for c in cmd)
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    stdout: int | IO[str] | None = subprocess.PIPE if capture else None
    logf = None
    if log:
        ensure_dir(os.path.dirname(log))
        logf = open(log, "a", encoding="utf-8")
        logf.write(f"$ {shown}\n")
        logf.flush()
        stdout = logf
    try:
        res = subprocess.run(cmd, cwd=cwd, env=full_env, stdout=stdout,
                             stderr=subprocess.STDOUT if (log or capture) else None,
                             shell=isinstance(cmd, str), timeout=timeout,
                             text=True, check=False)
    except subprocess.TimeoutExpired:
        die(f"{what or shown}: timed out after {timeout} s")
    except FileNotFoundError as exc:
        die(f"{what or shown}: {exc.filename} not found (run `make deps`)")
    finally:
        if logf:
            logf.close()
    if check and res.returncode != 0:
        where = f"; see {log}" if log else ""
        tail = ""
        if log:
            with open(log, encoding="utf-8", errors="replace") as f:
                tail = "".join(f.readlines()[-25:])
        elif capture and res.stdout:
            tail = res.stdout[-3000:]
        die(f"{what or shown} failed (exit {res.returncode}){where}\n{tail}")
    return res


def base_info() -> dict[str, str]:
    """The exact base: Makefile version and the Debian package version."""
    info = {"package": BASE_PACKAGE, "package_version": "unknown"}
    res = subprocess.run(["dpkg-query", "-W", "-f=${Version}", BASE_PACKAGE],
                         capture_output=True, text=True, check=False)
    if res.returncode == 0:
        info["package_version"] = res.stdout.strip()
    mk = os.path.join(TREE, "Makefile")
    if os.path.exists(mk):
        vals = {}
        with open(mk, encoding="utf-8") as f:
            for line in f.readlines()[:8]:
                if "=" in line:
                    k, _, v = line.partition("=")
                    vals[k.strip()] = v.strip()
        info["kernel"] = "{}.{}.{}".format(vals.get("VERSION"),
                                           vals.get("PATCHLEVEL"),
                                           vals.get("SUBLEVEL"))
    return info


def base_line() -> str:
    i = base_info()
    return (f"base: Linux {i.get('kernel', '?')} from {i['package']} "
            f"{i['package_version']}")


class Progress:
    """One status line that rewrites itself on a terminal, sparse otherwise."""

    def __init__(self, label, every=30.0):
        self.label = label
        self.tty = sys.stdout.isatty()
        self.every = every
        self.last = 0.0
        self.start = time.time()

    def update(self, text):
        now = time.time()
        elapsed = int(now - self.start)
        if self.tty:
            sys.stdout.write(f"\r[kmm] {self.label}: {text} ({elapsed} s)\033[K")
            sys.stdout.flush()
        elif now - self.last >= self.every:
            print(f"[kmm] {self.label}: {text} ({elapsed} s)", flush=True)
            self.last = now

    def done(self, text="done"):
        elapsed = int(time.time() - self.start)
        if self.tty:
            sys.stdout.write("\r\033[K")
        print(f"[kmm] {self.label}: {text} ({elapsed} s)", flush=True)


WORKLOADS_SRC = os.path.join(HARNESS, "workloads")
WORKLOADS_BIN = os.path.join(BUILD, "workloads")


def build_workload(name: str, libs: Sequence[str] = ("-lnuma",)) -> str:
    """Compile harness/workloads/NAME.c into build/workloads/NAME, unless
    the binary there is newer than the source (a read-only checkout, such
    as the host's seen from the VM, uses it as it is)."""
    out = os.path.join(WORKLOADS_BIN, name)
    src = os.path.join(WORKLOADS_SRC, f"{name}.c")
    # The headers the workloads share count as sources of each
    newest = max(os.path.getmtime(os.path.join(WORKLOADS_SRC, f))
                 for f in os.listdir(WORKLOADS_SRC)
                 if f == f"{name}.c" or f.endswith(".h"))
    if os.path.exists(out) and os.path.getmtime(out) >= newest:
        return out
    ensure_dir(WORKLOADS_BIN)
    run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", out, src, *libs],
        log=os.path.join(LOGS, "workloads-build.log"),
        what=f"building the {name} workload")
    return out
