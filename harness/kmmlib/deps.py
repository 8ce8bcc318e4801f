"""Install what the harness needs: Debian packages and virtme-ng."""

import os
import shutil
import subprocess

from .common import BASE_PACKAGE, BASE_TARBALL, VENV, LOGS, die, run, say

# Debian packages, each with a file or command that shows it is present.
APT_PACKAGES = {
    "build-essential": "/usr/bin/gcc",
    "bc": "/usr/bin/bc",
    "bison": "/usr/bin/bison",
    "flex": "/usr/bin/flex",
    "libelf-dev": "/usr/include/libelf.h",
    "libssl-dev": "/usr/include/openssl/ssl.h",
    "cpio": "/usr/bin/cpio",
    "kmod": "/usr/bin/kmod",
    "rsync": "/usr/bin/rsync",
    "xz-utils": "/usr/bin/xz",
    "ccache": "/usr/bin/ccache",
    "sparse": "/usr/bin/sparse",
    "qemu-system-x86": "/usr/bin/qemu-system-x86_64",
    "numactl": "/usr/bin/numactl",
    "libnuma-dev": "/usr/include/numaif.h",
    "libcap-dev": "/usr/include/sys/capability.h",
    "busybox-static": "/bin/busybox",
    "python3-venv": None,
    "git": "/usr/bin/git",
    # make check builds the admin guide's directory with Sphinx.
    "python3-sphinx": "/usr/bin/sphinx-build",
    # make check lints the guest scripts (lint.py).
    "shellcheck": "/usr/bin/shellcheck",
    BASE_PACKAGE: BASE_TARBALL,
}

VIRTME_NG = "virtme-ng==1.42"
# make check's unit tests and lint of the harness (lint.py), pinned: a new
# release's new checks must not fail a check that passed.  Debian 12 has
# no ruff; all three come from PyPI into build/venv.
LINT_TOOLS = {"ruff": "0.17.6", "mypy": "2.4.1", "pytest": "9.2.0"}
# make bench's plots; installed into the venv on first use.
MATPLOTLIB = "matplotlib==3.9.2"


def have_ensurepip():
    res = subprocess.run([shutil.which("python3") or "python3", "-c",
                          "import ensurepip"], capture_output=True,
                         check=False)
    return res.returncode == 0


def missing_packages():
    """Packages whose probe file is absent (None: python3's venv support)."""
    return [p for p, probe in APT_PACKAGES.items()
            if (probe is None and not have_ensurepip()) or
            (probe is not None and not os.path.exists(probe))]


def install_apt(pkgs):
    if os.geteuid() != 0:
        die("missing Debian packages: " + " ".join(pkgs) +
            "\n  install them with: sudo apt-get install " + " ".join(pkgs))
    log = os.path.join(LOGS, "deps.log")
    say(f"installing Debian packages: {' '.join(pkgs)}")
    run(["apt-get", "update"], log=log, what="apt-get update")
    run(["apt-get", "install", "-y", "--no-install-recommends"] + pkgs,
        env={"DEBIAN_FRONTEND": "noninteractive"}, log=log,
        what="apt-get install")
    still = [p for p in missing_packages() + [
        p for p, probe in SERVER_PACKAGES.items() if not os.path.exists(probe)]
        if p in pkgs]
    if still:
        die("still missing after apt-get install: " + " ".join(still))


def vng_path():
    return os.path.join(VENV, "bin", "vng")


def install_venv():
    if os.path.exists(vng_path()):
        return
    log = os.path.join(LOGS, "deps.log")
    python = shutil.which("python3")
    say(f"creating {VENV} with {VIRTME_NG}")
    run([python, "-m", "venv", VENV], log=log, what="python3 -m venv")
    run([os.path.join(VENV, "bin", "pip"), "install", "-q", VIRTME_NG],
        log=log, what=f"pip install {VIRTME_NG}")
    if not os.path.exists(vng_path()):
        die(f"virtme-ng installed but {vng_path()} is missing; see {log}")


def venv_versions(names):
    """{distribution: version} of those of names installed in the venv."""
    python = os.path.join(VENV, "bin", "python")
    code = ("import importlib.metadata as m, sys\n"
            "for n in sys.argv[1:]:\n"
            "    try:\n"
            "        print(n, m.version(n))\n"
            "    except m.PackageNotFoundError:\n"
            "        pass\n")
    res = subprocess.run([python, "-c", code, *names], capture_output=True,
                         text=True, check=False)
    return dict(line.split() for line in res.stdout.splitlines()
                if len(line.split()) == 2)


def ensure_lint_tools():
    """LINT_TOOLS in build/venv, at their pinned versions."""
    have = venv_versions(LINT_TOOLS)
    want = [f"{n}=={v}" for n, v in LINT_TOOLS.items() if have.get(n) != v]
    if not want:
        return
    log = os.path.join(LOGS, "deps.log")
    say(f"installing {' '.join(want)} into {VENV}")
    run([os.path.join(VENV, "bin", "pip"), "install", "-q", *want],
        log=log, what=f"pip install {' '.join(want)}")


def ensure():
    pkgs = missing_packages()
    if pkgs:
        install_apt(pkgs)
    install_venv()
    ensure_lint_tools()


def ensure_lint():
    """What make lint needs, and nothing else: the venv with LINT_TOOLS,
    and shellcheck."""
    if not shutil.which("shellcheck"):
        install_apt(["shellcheck"])
    python = os.path.join(VENV, "bin", "python")
    if not os.path.exists(python):
        if not have_ensurepip():
            die("no python3 venv support (apt install python3-venv)")
        say(f"creating {VENV}")
        run([shutil.which("python3") or "python3", "-m", "venv", VENV],
            log=os.path.join(LOGS, "deps.log"), what="python3 -m venv")
    ensure_lint_tools()


# The server workload of make bench (s): memcached, which the VM sees on
# the host's filesystem, and numactl's migratepages (APT_PACKAGES).
SERVER_PACKAGES = {"memcached": "/usr/bin/memcached"}


def ensure_server():
    """memcached for make bench's server workload; installed on first use
    only, as no other step needs it."""
    missing = [p for p, probe in SERVER_PACKAGES.items()
               if not os.path.exists(probe)]
    if missing:
        install_apt(missing)


def ensure_plot_venv():
    """matplotlib in build/venv for the plots, and nothing else: make bench
    HOST=1 runs on a user's machine, where make bench's other dependencies
    (QEMU, virtme-ng, the kernel's build dependencies) are not needed and
    nothing is installed on the system."""
    python = os.path.join(VENV, "bin", "python")
    log = os.path.join(LOGS, "deps.log")
    if not os.path.exists(python):
        if not have_ensurepip():
            die("no python3 venv support for the plots' matplotlib "
                "(apt install python3-venv)")
        say(f"creating {VENV} for matplotlib (the plots)")
        run([shutil.which("python3") or "python3", "-m", "venv", VENV],
            log=log, what="python3 -m venv")
    probe = subprocess.run([python, "-c", "import matplotlib"],
                           capture_output=True, check=False)
    if probe.returncode != 0:
        say(f"installing {MATPLOTLIB} into {VENV}")
        run([os.path.join(VENV, "bin", "pip"), "install", "-q", MATPLOTLIB],
            log=log, what=f"pip install {MATPLOTLIB}")


def ensure_plotting():
    """matplotlib in the venv, for make bench's PNG plots."""
    ensure()
    python = os.path.join(VENV, "bin", "python")
    probe = subprocess.run([python, "-c", "import matplotlib"],
                           capture_output=True, check=False)
    if probe.returncode == 0:
        return
    log = os.path.join(LOGS, "deps.log")
    say(f"installing {MATPLOTLIB} into {VENV}")
    run([os.path.join(VENV, "bin", "pip"), "install", "-q", MATPLOTLIB],
        log=log, what=f"pip install {MATPLOTLIB}")
