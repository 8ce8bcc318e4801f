"""Install what the harness needs: Debian packages and virtme-ng."""

import dataclasses
import glob
import os
import shutil
import subprocess
from collections.abc import Sequence

from .common import (BASE_PACKAGE, BASE_SUITE, BASE_TARBALL, VENV, LOGS,
                     Failure, die, run, say)

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
    suite = BASE_SUITE if BASE_PACKAGE in pkgs else None
    if suite:
        pkgs.remove(BASE_PACKAGE)
    if pkgs:
        install_apt(pkgs)
    if suite:
        install_base_from(suite)
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


# A base that the machine's own suites do not serve (common.BASE_SUITE):
# make deps adds its suite, from the mirror that the machine's own entry
# for the Debian archive names, and pins it so that nothing comes from
# there unless asked for by name; then it installs the base alone.
APT_ETC = "/etc/apt"
# debian-archive-keyring's keyring of every release, the suite's included.
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


@dataclasses.dataclass
class AptSource:
    """One entry of apt's sources: a one-line entry or a deb822 stanza."""
    path: str
    types: list[str]
    uris: list[str]
    suites: list[str]
    signed_by: str | None


def parse_one_line(text: str, path: str) -> list[AptSource]:
    """The entries of a sources.list-style file: "deb [opt=v ...] URI
    SUITE COMPONENT...", "#" to the end of a line a comment."""
    entries = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        options: dict[str, str] = {}
        if len(words) > 1 and words[1].startswith("["):
            end = next((i for i, w in enumerate(words) if w.endswith("]")),
                       len(words))
            for opt in " ".join(words[1:end + 1]).strip("[] ").split():
                key, _, value = opt.partition("=")
                options[key.lower()] = value
            words = words[:1] + words[end + 1:]
        if len(words) >= 3:
            entries.append(AptSource(path, [words[0]], [words[1]],
                                     [words[2]], options.get("signed-by")))
    return entries


def parse_deb822(text: str, path: str) -> list[AptSource]:
    """The entries of a .sources file: stanzas of "Field: value" lines
    apart by blank lines; a line that starts with white space continues
    the field before, one that starts with "#" is a comment."""
    stanzas: list[dict[str, str]] = []
    fields: dict[str, str] = {}
    key = ""
    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            continue
        if not line.strip():
            if fields:
                stanzas.append(fields)
            fields, key = {}, ""
        elif line[0] in " \t":
            if key:
                fields[key] += "\n" + line.strip()
        else:
            key, _, value = line.partition(":")
            key = key.strip().lower()
            fields[key] = value.strip()
    return [AptSource(path, f.get("types", "").split(),
                      f.get("uris", "").split(), f.get("suites", "").split(),
                      f.get("signed-by"))
            for f in stanzas if f.get("enabled", "yes").lower() != "no"]


def apt_sources(etc: str = APT_ETC) -> list[AptSource]:
    """Every entry of apt's sources under etc, in apt's order of files."""
    paths = [os.path.join(etc, "sources.list")] + sorted(
        glob.glob(os.path.join(etc, "sources.list.d", "*.list")) +
        glob.glob(os.path.join(etc, "sources.list.d", "*.sources")))
    entries = []
    for path in paths:
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                parse = parse_deb822 if path.endswith(".sources") \
                    else parse_one_line
                entries += parse(f.read(), path)
    return entries


def debian_archive(sources: Sequence[AptSource], codename: str) -> AptSource:
    """The entry of the Debian archive: a "deb" entry of the release's own
    suite (codename, not codename-security), signed by Debian's archive
    keys where it names a key (another archive may serve a suite of that
    name too, signed by its own)."""
    for src in sources:
        keys = (src.signed_by or "").replace(",", " ").split()
        if "deb" in src.types and codename in src.suites and src.uris and \
           all(os.path.basename(k).startswith("debian-archive")
               for k in keys):
            return src
    served = [f"{uri} {suite} ({src.path})" for src in sources
              if "deb" in src.types for uri in src.uris for suite in src.suites]
    die(f"none of apt's sources serves Debian's {codename} suite, whose "
        "mirror make deps would take; they serve: " +
        ("; ".join(served) or "nothing"))


def release_codename(os_release: str) -> str:
    """VERSION_CODENAME of /etc/os-release's text."""
    for line in os_release.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "VERSION_CODENAME" and value.strip(" \"'"):
            return value.strip(" \"'")
    die("/etc/os-release names no VERSION_CODENAME: which Debian is this?")


def suite_files(suite: str, etc: str = APT_ETC) -> tuple[str, str]:
    """Where make deps writes suite's apt source and its pin."""
    return (os.path.join(etc, "sources.list.d", f"kmm-{suite}.sources"),
            os.path.join(etc, "preferences.d", f"kmm-{suite}"))


def suite_source(uri: str, suite: str) -> str:
    """The .sources file of suite on the mirror uri."""
    return ("# Written by kmmscand's make deps for the base's package; "
            f"pinned in\n# preferences.d/kmm-{suite}.\n"
            "Types: deb\n"
            f"URIs: {uri}\n"
            f"Suites: {suite}\n"
            "Components: main\n"
            f"Signed-By: {DEBIAN_KEYRING}\n")


def suite_pin(suite: str, package: str) -> str:
    """apt preferences for suite: nothing comes from it unless asked for
    by name ("package/suite"), not even upgrades of installed packages
    (the default of a backports suite), but package, once installed,
    follows the suite's updates."""
    return (f"Explanation: kmmscand's make deps: from {suite}, only what "
            "is asked for\n"
            "Package: *\n"
            f"Pin: release n={suite}\n"
            "Pin-Priority: 1\n"
            "\n"
            f"Explanation: {package}, the base, follows its updates there\n"
            f"Package: {package}\n"
            f"Pin: release n={suite}\n"
            "Pin-Priority: 100\n")


def suite_versions(madison: str, suite: str) -> dict[str, list[str]]:
    """{package: versions} of apt-cache madison's lines from suite."""
    found: dict[str, list[str]] = {}
    for line in madison.splitlines():
        cols = [c.strip() for c in line.split("|")]
        where = cols[2].split() if len(cols) == 3 else []
        if len(where) >= 2 and where[1].split("/")[0] == suite:
            found.setdefault(cols[0], []).append(cols[1])
    return found


def base_install_cmd(package: str, suite: str) -> list[str]:
    """package alone from suite: "package/suite" takes that version of it
    and nothing else from there (-t would upgrade from there too)."""
    return ["apt-get", "install", "-y", "--no-install-recommends",
            f"{package}/{suite}"]


def write_config(path: str, text: str) -> None:
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    say(f"wrote {path}")


def install_base_from(suite: str) -> None:
    """BASE_PACKAGE from suite, which is added to apt where no source
    serves it yet."""
    if os.geteuid() != 0:
        die(f"{BASE_PACKAGE} is missing; it comes from {suite}, which "
            "make deps adds to apt: run make deps as root")
    source, pin = suite_files(suite)
    others = [s for s in apt_sources() if s.path != source]
    if not any("deb" in s.types and suite in s.suites for s in others):
        with open("/etc/os-release", encoding="utf-8") as f:
            codename = release_codename(f.read())
        try:
            archive = debian_archive(others, codename)
        except Failure as exc:
            die(f"{BASE_PACKAGE} comes from {suite}, which make deps adds "
                f"from the machine's Debian mirror: {exc}")
        write_config(source, suite_source(archive.uris[0], suite))
    write_config(pin, suite_pin(suite, BASE_PACKAGE))
    log = os.path.join(LOGS, "deps.log")
    run(["apt-get", "update"], log=log, what="apt-get update")
    search = run(["apt-cache", "search", "--names-only", "^linux-source-"],
                 capture=True, what="apt-cache search").stdout
    names = sorted({line.split()[0] for line in search.splitlines()
                    if line.startswith("linux-source-")})
    madison = run(["apt-cache", "madison", *names], capture=True,
                  what="apt-cache madison").stdout if names else ""
    served = suite_versions(madison, suite)
    if BASE_PACKAGE not in served:
        die(f"{suite} does not serve {BASE_PACKAGE}; the linux-source "
            "packages it serves: " +
            ("; ".join(f"{p} {', '.join(v)}" for p, v in served.items())
             or "none") +
            "\n  BASE_VERSION and BASE_SUITES in harness/kmmlib/common.py "
            "name the base and its suite")
    say(f"installing {BASE_PACKAGE} from {suite}")
    run(base_install_cmd(BASE_PACKAGE, suite),
        env={"DEBIAN_FRONTEND": "noninteractive"}, log=log,
        what=f"apt-get install {BASE_PACKAGE}/{suite}")
    if not os.path.exists(BASE_TARBALL):
        die(f"{BASE_PACKAGE} installed from {suite} but {BASE_TARBALL} "
            "is missing")
