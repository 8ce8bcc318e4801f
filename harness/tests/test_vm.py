"""The VM's kernel command line stays within x86's limit at long paths."""

import os
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
    cmd = vm.vng_cmd(image, vm.script_cmd(guest, repo, vm_dir), kvm=False,
                     extra_append=["kmmscand.placeholder=1"], repo=repo,
                     vm_dir=vm_dir)
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
