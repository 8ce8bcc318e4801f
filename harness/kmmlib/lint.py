"""The harness's own checks: its unit tests, and lint.

unit() runs pytest on harness/tests with build/venv's python; lint() runs
ruff on harness/'s Python (harness/kmm included) and on the Python the
series ships (tools/mm/kmmscand-top.py), mypy on harness/kmmlib
(both configured by harness/pyproject.toml) and shellcheck on the guest
scripts and .ci/run.  Each returns (ok, one-line summary) and writes the
tools' full output to out/logs/ (unit.log, lint.log).  `make deps`
installs the tools (deps.py LINT_TOOLS, shellcheck from apt); `make lint`
runs both, and `make check` calls them.
"""

import glob
import os
import re
import shutil
import subprocess
from collections.abc import Sequence

from .common import HARNESS, LOGS, REPO, VENV, ensure_dir

CONFIG = os.path.join(HARNESS, "pyproject.toml")
TESTS = os.path.join(HARNESS, "tests")
UNIT_LOG = os.path.join(LOGS, "unit.log")
LINT_LOG = os.path.join(LOGS, "lint.log")
# Seconds each tool may take: the suite and the checks take seconds.
TIMEOUT_S = 600


def venv_bin(name: str) -> str:
    return os.path.join(VENV, "bin", name)


def python_files() -> list[str]:
    """What ruff checks: harness/ (its *.py), harness/kmm, which has no
    .py suffix and so is named explicitly, and tools/mm/kmmscand-top.py,
    the Python the series ships."""
    return [HARNESS, os.path.join(HARNESS, "kmm"),
            os.path.join(REPO, "tools", "mm", "kmmscand-top.py")]


def shell_scripts() -> list[str]:
    """What shellcheck checks: the guest scripts and CI's entry point."""
    return sorted(glob.glob(os.path.join(HARNESS, "guest", "*.sh"))) + [
        os.path.join(REPO, ".ci", "run")]


def _run(cmd: Sequence[str], cwd: str = REPO) -> tuple[int, str]:
    """(exit status, stdout and stderr); 127 and a note if cmd[0] is
    missing, 124 on timeout."""
    try:
        res = subprocess.run(list(cmd), cwd=cwd, capture_output=True,
                             text=True, check=False, timeout=TIMEOUT_S)
    except FileNotFoundError:
        return 127, f"{cmd[0]}: not installed (run `make deps`)\n"
    except subprocess.TimeoutExpired:
        return 124, f"{cmd[0]}: timed out after {TIMEOUT_S} s\n"
    return res.returncode, res.stdout + res.stderr


def _write(path: str, sections: Sequence[tuple[str, Sequence[str], str]],
           ) -> None:
    ensure_dir(os.path.dirname(path))
    with open(path, "w", encoding="utf-8") as f:
        for title, cmd, out in sections:
            f.write(f"== {title}: $ {' '.join(cmd)}\n{out}")
            if not out.endswith("\n"):
                f.write("\n")


def pytest_summary(out: str, status: int) -> str:
    """pytest's closing counts ("1 failed, 12 passed"), or what went
    wrong when it has none."""
    for line in reversed(out.splitlines()):
        if re.search(r"\d+ (passed|failed|errors?|skipped)", line):
            line = re.sub(r" in [\d.]+s.*$", "", line.strip("= \n"))
            return line
    if status == 5:
        return "no tests collected"
    last = out.strip().splitlines()
    return last[-1] if last else f"exit {status}"


def unit() -> tuple[bool, str]:
    """The harness's unit tests (pytest on harness/tests)."""
    cmd = [venv_bin("python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
           TESTS]
    status, out = _run(cmd)
    _write(UNIT_LOG, [("pytest", cmd, out)])
    summary = pytest_summary(out, status)
    ok = status == 0
    where = os.path.relpath(UNIT_LOG, REPO)
    return ok, f"unit tests: {summary}" + ("" if ok else f"; see {where}")


def ruff_count(out: str, status: int) -> int:
    """ruff's findings ("Found N errors."); 0 when it passed."""
    m = re.search(r"Found (\d+) error", out)
    return int(m.group(1)) if m else (0 if status == 0 else 1)


def mypy_count(out: str, status: int) -> int:
    """mypy's errors ("Found N errors in M files"); 0 when it passed."""
    m = re.search(r"Found (\d+) errors? in", out)
    return int(m.group(1)) if m else (0 if status == 0 else 1)


def shellcheck_count(out: str, status: int) -> int:
    """shellcheck's findings, one a line in gcc format."""
    n = sum(1 for line in out.splitlines()
            if re.search(r":\d+:\d+: (error|warning|note|style):", line))
    return n if n or status == 0 else 1


def lint() -> tuple[bool, str]:
    """ruff, mypy and shellcheck over the harness; ok if none finds
    anything."""
    shellcheck = shutil.which("shellcheck") or "shellcheck"
    checks = [
        ("ruff", [venv_bin("ruff"), "check", "--config", CONFIG,
                  "--no-cache", *python_files()], REPO, ruff_count),
        ("mypy", [venv_bin("mypy"), "--config-file", CONFIG,
                  "--no-incremental", "--cache-dir", os.devnull, "kmmlib"],
         HARNESS, mypy_count),
        ("shellcheck", [shellcheck, "-f", "gcc", *shell_scripts()], REPO,
         shellcheck_count),
    ]
    sections = []
    parts = []
    ok = True
    for name, cmd, cwd, count in checks:
        status, out = _run(cmd, cwd)
        sections.append((name, cmd, out))
        if status in (124, 127):
            parts.append(f"{name} {out.strip().split(': ', 1)[-1]}")
            ok = False
            continue
        n = count(out, status)
        ok = ok and status == 0
        parts.append(f"{name} {n} finding{'' if n == 1 else 's'}")
    _write(LINT_LOG, sections)
    where = os.path.relpath(LINT_LOG, REPO)
    return ok, "lint: " + ", ".join(parts) + ("" if ok else f"; see {where}")


def run() -> int:
    """make lint: both, each summary on a line; 0 if both pass."""
    results = [unit(), lint()]
    for ok, summary in results:
        print(f"[kmm] {'ok' if ok else 'FAILED'}: {summary}", flush=True)
    return 0 if all(ok for ok, _ in results) else 1
