"""Configure and build a kernel of the series (debug or release flavour)."""

import os
import re
import shutil
import subprocess

from .common import (BUILD, HARNESS, LOGS, OUT, REPO, TREE, Progress,
                     base_line, die, ensure_dir, heavy_job, run, say)

CONFIGS = os.path.join(HARNESS, "config")
# Fragments of each flavour, applied in order on top of allnoconfig.
FLAVOURS = {
    "debug": ["base.config", "debug.config", "feature.config"],
    "release": ["base.config", "release.config", "feature.config"],
}
# Objects a cold build of each flavour compiles, for the progress of a
# build with no count of its own yet (build/obj-*/kmm-objects): counted
# on 2026-11-26, 1241 and 1268 ("  CC" lines of whole builds), rounded up.
COLD_BUILD_OBJECTS = {"debug": 1250, "release": 1270}


def objdir(flavour):
    return os.path.join(BUILD, f"obj-{flavour}")


def image_path(flavour):
    """The stable path of a flavour's image: out/bzImage is the test kernel."""
    name = "bzImage" if flavour == "debug" else f"bzImage-{flavour}"
    return os.path.join(OUT, name)


def make_env():
    cache = os.environ.get("CCACHE_DIR") or os.path.expanduser("~/.cache/ccache")
    return {
        # Paths below the repo are hashed relative to it, so a fresh clone
        # elsewhere (CI) hits the cache of an earlier build.
        "CCACHE_BASEDIR": REPO,
        "CCACHE_DIR": cache,
        "CCACHE_MAXSIZE": "20G",
        "KBUILD_BUILD_USER": "kmmscand",
        "KBUILD_BUILD_HOST": "kmmscand",
        "KBUILD_BUILD_TIMESTAMP": "2024-12-01",
    }


def make_args(flavour, *targets, extra=()):
    jobs = str(os.cpu_count() or 1)
    cc = "ccache gcc" if shutil.which("ccache") else "gcc"
    return ["make", "-C", TREE, f"-j{jobs}", "ARCH=x86_64",
            f"O={objdir(flavour)}", f"CC={cc}", *extra, *targets]


def fragment_text(flavour):
    parts = []
    for name in FLAVOURS[flavour]:
        path = os.path.join(CONFIGS, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                parts.append(f"# --- {name}\n" + f.read())
    return "\n".join(parts)


def wanted_options(text):
    want = {}
    for line in text.splitlines():
        m = re.match(r"^(CONFIG_\w+)=(.*)$", line.strip())
        if m:
            want[m.group(1)] = m.group(2)
            continue
        m = re.match(r"^# (CONFIG_\w+) is not set", line.strip())
        if m:
            want[m.group(1)] = "n"
    return want


def check_config(flavour, text):
    """Every option a fragment asks for must be in the resulting .config."""
    have = {}
    with open(os.path.join(objdir(flavour), ".config"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^(CONFIG_\w+)=(.*)$", line.strip())
            if m:
                have[m.group(1)] = m.group(2)
    bad = []
    for opt, val in wanted_options(text).items():
        got = have.get(opt, "n")
        if got != val:
            bad.append(f"{opt}={val} (got {got})")
    if bad:
        die(f"{flavour} config: these options did not take (unmet "
            "dependencies?):\n  " + "\n  ".join(bad))


def configure(flavour):
    """Write .config from the fragments when they changed."""
    odir = ensure_dir(objdir(flavour))
    text = fragment_text(flavour)
    frag = os.path.join(odir, "kmm.config")
    old = None
    if os.path.exists(frag):
        with open(frag, encoding="utf-8") as f:
            old = f.read()
    if old == text and os.path.exists(os.path.join(odir, ".config")):
        return
    with open(frag, "w", encoding="utf-8") as f:
        f.write(text)
    say(f"configuring the {flavour} kernel (allnoconfig + fragments)")
    run(make_args(flavour, "allnoconfig", extra=["KCONFIG_ALLCONFIG=kmm.config"]),
        env=make_env(), log=os.path.join(LOGS, f"kernel-{flavour}.log"),
        what=f"make allnoconfig ({flavour})")
    check_config(flavour, text)


def build(flavour="debug", targets=("bzImage",)):
    """Build the flavour's image (and headers for the selftests)."""
    configure(flavour)
    log = os.path.join(LOGS, f"kernel-{flavour}.log")
    ensure_dir(LOGS)
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"== {base_line()}\n")
    # A cold build compiles every object; one on a built tree, fewer.
    count_file = os.path.join(objdir(flavour), "kmm-objects")
    expected = COLD_BUILD_OBJECTS.get(flavour, 0)
    if os.path.exists(count_file):
        with open(count_file, encoding="utf-8") as f:
            expected = max(expected, int(f.read().strip() or 0))
    prog = Progress(f"building the {flavour} kernel")
    cmd = make_args(flavour, *targets, "headers")
    env = dict(os.environ)
    env.update(make_env())
    compiled = 0
    with open(log, "a", encoding="utf-8") as logf, heavy_job():
        logf.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None  # stdout=PIPE
        for line in proc.stdout:
            logf.write(line)
            if line.startswith("  CC "):
                compiled += 1
                of = f" of up to {expected}" if expected else ""
                prog.update(f"{compiled}{of} objects compiled")
        rc = proc.wait()
    if rc != 0:
        with open(log, encoding="utf-8", errors="replace") as f:
            errors = [line for line in f if "error" in line.lower()][-20:]
        die(f"the {flavour} kernel build failed (exit {rc}); see {log}\n" +
            "".join(errors))
    if compiled > expected:
        with open(count_file, "w", encoding="utf-8") as f:
            f.write(str(compiled))
    prog.done(f"{compiled} objects compiled")
    image = os.path.join(objdir(flavour), "arch", "x86", "boot", "bzImage")
    ensure_dir(OUT)
    shutil.copy2(image, image_path(flavour))
    return image_path(flavour)


def build_objects(flavour, objects, extra=()):
    """Build single objects, e.g. with W=1 or C=1, capturing the output."""
    configure(flavour)
    with heavy_job():
        res = subprocess.run(make_args(flavour, *objects, extra=extra),
                             env={**os.environ, **make_env()}, text=True,
                             capture_output=True, check=False)
    return res.returncode, res.stdout + res.stderr
