"""The VM's kernel command line stays within x86's limit at long paths;
the test VMs carry a movable DIMM on node 0 and the bench VMs do not."""

import ast
import os
import shlex
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kmmlib import deps, vm  # noqa: E402
from kmmlib.common import Failure  # noqa: E402

# The longest checkout path the harness promises to work from.
LONG_PATH = 200


def long_checkout(tmp_path, length):
    """A directory under tmp_path whose absolute path is length characters."""
    path = str(tmp_path)
    while len(path) < length:
        path = os.path.join(path, "d" * min(60, length - len(path) - 1))
    assert len(path) == length
    os.makedirs(path)
    return path


@pytest.fixture
def checkout(tmp_path):
    repo = long_checkout(tmp_path, LONG_PATH)
    vm_dir = os.path.join(repo, "out", "vm")
    os.makedirs(vm_dir)
    image = os.path.join(repo, "bzImage")
    open(image, "w", encoding="utf-8").close()
    return repo, vm_dir, image


def test_script_holds_the_command(checkout):
    repo, vm_dir, _ = checkout
    cmd = vm.script_cmd("echo 'it''s here' && true", repo, vm_dir)
    assert cmd == "sh 'out/vm/" + vm.GUEST_SCRIPT + "'"
    with open(os.path.join(vm_dir, vm.GUEST_SCRIPT), encoding="utf-8") as f:
        assert f.read() == "echo 'it''s here' && true\n"


@pytest.mark.skipif(not os.path.exists(deps.vng_path()),
                    reason="virtme-ng is not installed (make deps)")
def test_cmdline_fits_at_a_long_path(checkout):
    repo, vm_dir, image = checkout
    # The longest guest command the harness sends, with the path in it.
    guest = vm.wrap(f"sh {repo}/harness/guest/run-tests.sh {vm_dir}/ksft " +
                    " ".join(f"{repo}/build/ksft/t{i}:420" for i in range(12)))
    # A test VM's: the DIMM adds to the line.
    cmd = vm.vng_cmd(image, vm.script_cmd(guest, repo, vm_dir), kvm=False,
                     extra_append=["kmmscand.placeholder=1"], repo=repo,
                     vm_dir=vm_dir, movable_dimm=True)
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(deps.vng_path()) + os.pathsep + env["PATH"]
    line = vm.check_cmdline(cmd, env)
    assert repo.lstrip("/") in line
    assert len(line) < vm.CMDLINE_SIZE
    # virtme-ng's init must come last and whole, or the guest runs another.
    assert line.split()[-1].startswith("init=/")
    assert line.split()[-1].endswith("virtme-ng-init")


def test_too_long_a_line_fails_before_boot(monkeypatch):
    monkeypatch.setattr(vm, "kernel_cmdline",
                        lambda cmd, env=None: "x" * vm.CMDLINE_SIZE)
    with pytest.raises(Failure, match="clone to a shorter path"):
        vm.check_cmdline(["vng"])


KMMLIB = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "kmmlib")
# The DIMM's size in MiB, as the test VMs' QEMU must get it.
DIMM_MIB = 256


def qemu_args(cmd):
    """The QEMU arguments vng_cmd hands virtme-ng, split."""
    opts = [a for a in cmd if a.startswith("--qemu-opts=")]
    assert len(opts) == 1
    return shlex.split(opts[0][len("--qemu-opts="):])


def values_of(args, flag):
    return [args[i + 1] for i, a in enumerate(args[:-1]) if a == flag]


def options(value):
    """A QEMU option's value as a dict: "a,b=1" gives {"": "a", "b": "1"}."""
    out = {}
    for part in value.split(","):
        key, _, val = part.partition("=")
        if val:
            out[key] = val
        else:
            out[""] = key
    return out


def appends(cmd):
    return [cmd[i + 1] for i, a in enumerate(cmd[:-1]) if a == "--append"]


def test_test_vm_has_a_movable_dimm_on_node_0():
    cmd = vm.vng_cmd("bzImage", "true", kvm=False, vng="vng",
                     movable_dimm=True)
    args = qemu_args(cmd)
    dimms = [options(v) for v in values_of(args, "-device")
             if options(v)[""] == "pc-dimm"]
    assert len(dimms) == 1
    assert dimms[0]["node"] == "0"
    backends = {o["id"]: o for o in map(options, values_of(args, "-object"))}
    backend = backends[dimms[0]["memdev"]]
    assert backend[""] == "memory-backend-ram"
    assert backend["size"] == f"{DIMM_MIB}M"
    # QEMU merges this -m into virtme-ng's: the same boot memory, a slot,
    # and room for the DIMM above it.
    mem = [options(v) for v in values_of(args, "-m")]
    assert len(mem) == 1
    assert cmd[cmd.index("--memory") + 1] == "4G"
    assert mem[0][""] == "4096M"
    assert mem[0]["slots"] == "1"
    assert mem[0]["maxmem"] == f"{4096 + DIMM_MIB}M"
    assert "memhp_default_state=online_movable" in appends(cmd)
    # The HMAT that makes node 1 the lower tier is still there.
    assert all(h in " ".join(args) for h in vm.HMAT)


def test_bench_vm_has_no_dimm():
    cmd = vm.vng_cmd("bzImage", "true", kvm=False, vng="vng")
    args = qemu_args(cmd)
    assert "-device" not in args and "-m" not in args
    assert not any("memhp" in a for a in appends(cmd))
    # Exactly the bench VM the published figures come from.
    assert cmd == ["vng", "--run", "bzImage", "--verbose", "--force-9p",
                   "--cpus", "2", "--memory", "4G",
                   "--numa", "2G,cpus=0-1", "--numa", "2G,initiator=0",
                   "--qemu-opts=" + " ".join(vm.HMAT),
                   "--rwdir", vm.VM_DIR, "--cwd", vm.REPO,
                   "--append", "printk.time=1", "--disable-kvm",
                   "--exec", "true"]


def parse(path):
    with open(os.path.join(KMMLIB, path), encoding="utf-8") as f:
        return ast.parse(f.read())


def boots(tree):
    """Each vm.boot() or boot() call under tree: whether it has the DIMM."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", None))
        if name != "boot":
            continue
        kw = {k.arg: k.value for k in node.keywords}
        value = kw.get("movable_dimm")
        found.append(isinstance(value, ast.Constant) and value.value is True)
    return found


@pytest.mark.parametrize("path", ["check.py", "stress.py", "series.py"])
def test_test_vms_boot_with_the_dimm(path):
    found = boots(parse(path))
    assert found and all(found)


def test_make_vm_boots_with_the_dimm():
    run_cmd = next(n for n in parse("vm.py").body
                   if isinstance(n, ast.FunctionDef) and n.name == "run_cmd")
    found = boots(run_cmd)
    assert found and all(found)


@pytest.mark.parametrize("path", [os.path.join("bench", "runner.py"),
                                  "demo.py"])
def test_bench_and_demo_vms_boot_without_it(path):
    found = boots(parse(path))
    assert found and not any(found)
