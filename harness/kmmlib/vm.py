"""The two-tier VM: virtme-ng on QEMU with an HMAT that puts node 1 lower.

Node 0 holds both CPUs and fast memory. Node 1 is CPU-less memory whose
HMAT latency and bandwidth are worse, so the kernel places it in a lower
memory tier (6.12 needs both entries; latency alone leaves one tier). The
test VMs also give node 0 a DIMM of movable, hot-pluggable memory.
"""

import os
import re
import selectors
import shlex
import subprocess
import time

from .common import LOGS, OUT, REPO, die, ensure_dir, heavy_job, say
from .deps import vng_path

NODE_MEM = "2G"
# The VM's boot memory: the two nodes' together, as virtme-ng's --memory.
VM_MEM_MIB = 4096
# HMAT figures of a DRAM node and a CXL-like node seen from CPU node 0:
# latency in ns, bandwidth per second. The ratio, not the value, decides the
# tier: 6.12 computes an abstract distance from both.
HMAT = [
    "-machine hmat=on",
    "-numa hmat-lb,initiator=0,target=0,hierarchy=memory,"
    "data-type=access-latency,latency=80",
    "-numa hmat-lb,initiator=0,target=0,hierarchy=memory,"
    "data-type=access-bandwidth,bandwidth=20G",
    "-numa hmat-lb,initiator=0,target=1,hierarchy=memory,"
    "data-type=access-latency,latency=250",
    "-numa hmat-lb,initiator=0,target=1,hierarchy=memory,"
    "data-type=access-bandwidth,bandwidth=5G",
]
# The test VMs' fast node also holds a DIMM of hot-pluggable memory, which
# the kernel onlines movable: boot memory never goes offline, and a test
# takes top-tier memory offline under kmmscand with it. Two memory blocks
# of x86's 128 MiB. QEMU merges a second -m into virtme-ng's, adding the
# slot and the room above boot memory that the DIMM is mapped in. The
# bench VMs go without it, so that their figures stay comparable.
DIMM_MIB = 256
MOVABLE_DIMM = [
    f"-m {VM_MEM_MIB}M,slots=1,maxmem={VM_MEM_MIB + DIMM_MIB}M",
    f"-object memory-backend-ram,id=kmm-dimm,size={DIMM_MIB}M",
    "-device pc-dimm,id=kmm-dimm0,memdev=kmm-dimm,node=0",
]
# The kernel onlines hot-added memory, the DIMM included, into ZONE_MOVABLE.
MOVABLE_DIMM_APPEND = "memhp_default_state=online_movable"
EXIT_MARK = "KMM-GUEST-EXIT="
# x86's COMMAND_LINE_SIZE, the terminating NUL included: the kernel cuts a
# longer command line, and virtme-ng puts its init= argument last.
CMDLINE_SIZE = 2048
# The guest's command goes through this file in the shared, writable VM_DIR,
# not base64 on the kernel command line, which already names the checkout's
# path three times (the shared directory, the guest's cwd and init=).
GUEST_SCRIPT = "guest-cmd.sh"
OUT_MARK = "KMM| "
# Whether KVM runs a guest is a fact of the machine, not of a checkout: keep
# the answer where every clone (and CI) finds it.
KVM_PROBE = os.path.join(os.path.expanduser("~"), ".cache", "kmmscand",
                         "kvm-probe")
# A KVM boot finishes in a few seconds; a TCG one in about 20.
KVM_PROBE_TIMEOUT = 30
VM_DIR = os.path.join(OUT, "vm")

# A line of the guest's kernel log that means a test run is broken.
SPLAT = re.compile(
    r"(\bBUG: |\bWARNING: |\bOops\b|Kernel panic|"
    r"rcu: INFO: .*detected stall|self-detected stall|"
    r"INFO: task .* blocked for more than|"
    r"kmemleak: \d+ new suspected memory leak|UBSAN: |"
    r"general protection fault|Unable to handle kernel)")
KLOG = re.compile(r"^\[\s*\d+\.\d+\]")
SPLAT_LINES = 60


def find_splats(console):
    """Each splat in the console text, with the lines that follow it."""
    lines = console.splitlines()
    splats = []
    i = 0
    while i < len(lines):
        if KLOG.match(lines[i]) and SPLAT.search(lines[i]):
            chunk = [lines[i]]
            j = i + 1
            while j < len(lines) and len(chunk) < SPLAT_LINES:
                chunk.append(lines[j])
                if "---[ end trace" in lines[j]:
                    break
                j += 1
            splats.append("\n".join(chunk))
            i = j
        i += 1
    return splats


def vng_cmd(image, guest_cmd, kvm, extra_append=(), repo=REPO, vm_dir=VM_DIR,
            vng=None, movable_dimm=False):
    """virtme-ng's command line; movable_dimm: a test VM's, with the DIMM."""
    qemu_opts = HMAT + (MOVABLE_DIMM if movable_dimm else [])
    # --force-9p: no virtiofsd here; vng would wait for it before falling
    # back to 9p anyway.
    cmd = [vng or vng_path(), "--run", image, "--verbose", "--force-9p",
           "--cpus", "2", "--memory", f"{VM_MEM_MIB // 1024}G",
           "--numa", f"{NODE_MEM},cpus=0-1",
           "--numa", f"{NODE_MEM},initiator=0",
           # "=" form: the value starts with a dash.
           "--qemu-opts=" + " ".join(qemu_opts),
           "--rwdir", vm_dir, "--cwd", repo,
           "--append", "printk.time=1"]
    if movable_dimm:
        cmd += ["--append", MOVABLE_DIMM_APPEND]
    for a in extra_append:
        cmd += ["--append", a]
    if not kvm:
        cmd.append("--disable-kvm")
    cmd += ["--exec", guest_cmd]
    return cmd


def wrap(cmd):
    """Run cmd in the guest; mark its output and print its exit status.

    The kernel log shares the console with the command, so every line of
    the command's output gets OUT_MARK in front, and the harness tells the
    two apart by that.
    """
    return (f"{{ sh -c {sh_quote(cmd)}; echo $? >/tmp/kmm-rc; }} 2>&1 | "
            f"sed -u 's/^/{OUT_MARK}/'; sync; "
            f"echo; echo {EXIT_MARK}$(cat /tmp/kmm-rc)")


def script_cmd(guest_cmd, repo=REPO, vm_dir=VM_DIR):
    """Write guest_cmd to the shared script; return the command that runs it.

    The guest starts in repo (--cwd), so a relative path keeps the command
    line's share of it short whatever the checkout's path.
    """
    path = os.path.join(vm_dir, GUEST_SCRIPT)
    with open(path, "w", encoding="utf-8") as f:
        f.write(guest_cmd + "\n")
    return "sh " + sh_quote(os.path.relpath(path, repo))


def kernel_cmdline(cmd, env=None):
    """The kernel command line that cmd would boot with (vng --dry-run)."""
    res = subprocess.run(cmd + ["--dry-run"], env=env, capture_output=True,
                         text=True, check=False)
    for line in res.stdout.splitlines():
        args = shlex.split(line) if "-append" in line else []
        if "-append" in args:
            return args[args.index("-append") + 1]
    die("vng --dry-run printed no -append; cannot check the kernel command "
        f"line's length:\n{res.stdout}{res.stderr}")


def check_cmdline(cmd, env=None):
    """Fail before booting if the kernel would cut the command line."""
    line = kernel_cmdline(cmd, env)
    if len(line) >= CMDLINE_SIZE:
        die(f"the guest's kernel command line would be {len(line)} bytes, "
            f"over the {CMDLINE_SIZE - 1} the kernel keeps, and the boot "
            f"would run the wrong init. It names this checkout's path "
            f"({len(REPO)} characters) several times: clone to a shorter "
            f"path. The line:\n{line}")
    return line


def sh_quote(s):
    return "'" + s.replace("'", "'\"'\"'") + "'"


class Result:
    def __init__(self, status, console, elapsed, timed_out=False):
        self.status = status
        self.console = console
        self.elapsed = elapsed
        self.timed_out = timed_out

    def output(self):
        """The guest command's own lines, without kernel log lines."""
        return "\n".join(line[len(OUT_MARK):]
                         for line in self.console.splitlines()
                         if line.startswith(OUT_MARK))

    def splats(self):
        return find_splats(self.console)


def boot(image, guest_cmd, timeout, kvm=None, log=None, echo=False,
         label="VM", extra_append=(), movable_dimm=False):
    """Boot image, run guest_cmd, return a Result (status None: no exit).

    echo: True prints the guest command's output; a callable gets each line.
    movable_dimm: a test VM, with the DIMM of movable memory on node 0.
    """
    if not os.path.exists(image):
        die(f"no kernel image at {image}: run `make kernel` first")
    if not os.path.exists(vng_path()):
        die("virtme-ng is not installed: run `make deps`")
    if kvm is None:
        kvm = kvm_works(image)
    ensure_dir(VM_DIR)
    log = log or os.path.join(LOGS, "vm-console.log")
    ensure_dir(os.path.dirname(log))
    env = dict(os.environ)
    # vng runs virtme-run and friends from PATH.
    env["PATH"] = os.path.dirname(vng_path()) + os.pathsep + env["PATH"]
    lines = []
    timed_out = False
    # The timeout counts from the boot, not from the wait for the lock.
    # The script is written under the lock: another boot from this checkout
    # may be waiting to write its own.
    with heavy_job(), open(log, "w", encoding="utf-8") as logf:
        cmd = vng_cmd(image, script_cmd(wrap(guest_cmd)), kvm, extra_append,
                      movable_dimm=movable_dimm)
        check_cmdline(cmd, env)
        start = time.time()
        logf.write("$ " + " ".join(sh_quote(c) for c in cmd) + "\n")
        logf.write(f"$ cat {os.path.join(VM_DIR, GUEST_SCRIPT)}\n"
                   f"{wrap(guest_cmd)}\n")
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True,
                                errors="replace", stdin=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = start + timeout
        sel = selectors.DefaultSelector()
        stdout = proc.stdout
        assert stdout is not None  # stdout=PIPE
        sel.register(stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.time()
            if left <= 0:
                timed_out = True
                break
            if not sel.select(timeout=min(left, 1.0)):
                if proc.poll() is not None:
                    break
                # A callable echo with a tick() shows a heartbeat while
                # the guest is quiet.
                if callable(getattr(echo, "tick", None)):
                    echo.tick()
                continue
            line = stdout.readline()
            if not line:
                break
            lines.append(line)
            logf.write(line)
            logf.flush()
            if echo and line.startswith(OUT_MARK):
                if callable(echo):
                    echo(line[len(OUT_MARK):])
                else:
                    print(line[len(OUT_MARK):], end="", flush=True)
        if timed_out:
            os.killpg(proc.pid, 9)
        proc.wait()
    console = "".join(lines)
    status = None
    for m in re.finditer(rf"^{EXIT_MARK}(\d+)", console, re.M):
        status = int(m.group(1))
    return Result(status, console, time.time() - start, timed_out)


def kvm_works(image):
    """Probe /dev/kvm once with a short boot; remember the answer."""
    if os.path.exists(KVM_PROBE):
        with open(KVM_PROBE, encoding="utf-8") as f:
            return f.read().strip() == "kvm"
    ok = False
    if os.path.exists("/dev/kvm") and os.access("/dev/kvm", os.R_OK | os.W_OK):
        say(f"probing KVM with a {KVM_PROBE_TIMEOUT} s boot")
        res = boot(image, "grep -q hypervisor /proc/cpuinfo", KVM_PROBE_TIMEOUT,
                   kvm=True, log=os.path.join(LOGS, "kvm-probe.log"))
        # QEMU falls back to TCG silently; the guest knows which it got.
        ok = res.status == 0 and "Hypervisor detected: KVM" in res.console
        if not ok and "Linux version" not in res.console:
            # QEMU itself gave up (on this machine: an MSR that KVM
            # refuses). A broken image shows in the TCG boot that follows.
            last = res.console.strip().splitlines()[-1:] or ["no output"]
            say(f"KVM does not run a guest here ({last[0].strip()}); "
                "see out/logs/kvm-probe.log")
    ensure_dir(os.path.dirname(KVM_PROBE))
    with open(KVM_PROBE, "w", encoding="utf-8") as f:
        f.write("kvm\n" if ok else "tcg\n")
    say("VM acceleration: " + ("KVM" if ok else "TCG (software emulation)"))
    return ok


def run_cmd(image, guest_cmd, timeout):
    """make vm: run a command, show its output, return its exit status."""
    res = boot(image, guest_cmd, timeout, echo=True, movable_dimm=True)
    if res.timed_out:
        die(f"the VM did not finish within {timeout} s; console log: "
            f"{os.path.join(LOGS, 'vm-console.log')}")
    if res.status is None:
        tail = "\n".join(res.console.splitlines()[-30:])
        die("the guest did not report an exit status (crash or boot failure); "
            f"last console lines:\n{tail}")
    for s in res.splats():
        print("[kmm] kernel splat in the guest log:\n" + s)
    return res.status
