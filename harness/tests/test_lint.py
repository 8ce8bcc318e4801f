"""lint.py's reading of the tools' output, and what it checks."""

import os

from kmmlib import deps, lint


def test_pytest_summary():
    out = "....F\n=== 1 failed, 4 passed in 0.12s ===\n"
    assert lint.pytest_summary(out, 1) == "1 failed, 4 passed"
    assert lint.pytest_summary("12 passed in 3.01s\n", 0) == "12 passed"
    assert lint.pytest_summary("", 5) == "no tests collected"


def test_counts():
    assert lint.ruff_count("All checks passed!\n", 0) == 0
    assert lint.ruff_count("...\nFound 8 errors.\n", 1) == 8
    assert lint.mypy_count("Success: no issues found in 25 source files",
                           0) == 0
    assert lint.mypy_count("Found 7 errors in 3 files (checked 25 source "
                           "files)", 1) == 7
    out = ("harness/guest/demo.sh:57:32: note: Double quote [SC2086]\n"
           "harness/guest/demo.sh:72:40: warning: b is referenced [SC2154]\n")
    assert lint.shellcheck_count(out, 1) == 2
    assert lint.shellcheck_count("", 0) == 0


def test_what_is_checked():
    files = lint.python_files()
    assert os.path.join(lint.HARNESS, "kmm") in files
    tool = os.path.join(lint.REPO, "tools", "mm", "kmmscand-top.py")
    assert tool in files and os.path.exists(tool)
    scripts = lint.shell_scripts()
    assert any(s.endswith("bench.sh") for s in scripts)
    assert scripts[-1].endswith(os.path.join(".ci", "run"))
    assert os.path.exists(lint.CONFIG)


def test_tools_are_pinned():
    assert set(deps.LINT_TOOLS) == {"ruff", "mypy", "pytest"}
    assert all(v.count(".") >= 1 for v in deps.LINT_TOOLS.values())
    assert deps.APT_PACKAGES["shellcheck"] == "/usr/bin/shellcheck"
