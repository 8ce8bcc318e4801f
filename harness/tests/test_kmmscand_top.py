"""tools/mm/kmmscand-top.py on a made-up /proc and /sys: its filters, its
JSON in each mode, and the CPU it sums per cgroup.

Each test lays out a machine under a temporary root (--root): processes
with /proc/<pid>/{stat,cgroup,kmmscand}, the kmmscand thread, vmstat, the
nice knob and a cgroup v2 tree.  The tool's clock is replaced by one that
a sleep moves forward, and each sleep applies the next step of the
machine's counters, so that two samples differ by known amounts.
"""

import importlib.util
import io
import json
import os
import sys
import types
from contextlib import redirect_stderr, redirect_stdout

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "mm", "kmmscand-top.py")

PF_KTHREAD = 0x00200000
PAGES_PER_MB = 256          # 4 KiB pages, as the fake machine counts them
TICK_NS = 10**7             # the fake machine's USER_HZ: 100


@pytest.fixture
def top(monkeypatch):
    """The tool, loaded as a module (its name is no identifier), with
    4 KiB pages and 100 clock ticks a second whatever the host has."""
    spec = importlib.util.spec_from_file_location("kmmscand_top", TOOL)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "PAGE_SIZE", 4096)
    monkeypatch.setattr(mod, "CLK_TCK", 100)
    return mod


class Machine:
    """A fake /proc and /sys under root, and the steps its counters take
    at each of the tool's sleeps."""

    def __init__(self, root):
        self.root = str(root)
        self.steps = []
        self.now = 1000.0
        self.sleeps = 0
        self.write("proc/self/kmmscand", "tracked 0\n")
        self.vmstat()
        self.nice(5)

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def remove(self, rel):
        os.unlink(os.path.join(self.root, rel))

    def stat(self, pid, comm, flags=0, start=100, ticks=0):
        fields = ["S", "1", str(pid), str(pid), "0", "-1", str(flags),
                  "0", "0", "0", "0", str(ticks), "0", "0", "0", "20", "0",
                  "1", "0", str(start)] + ["0"] * 30
        self.write(f"proc/{pid}/stat", f"{pid} ({comm}) {' '.join(fields)}\n")

    def process(self, pid, comm, cgroup="/", start=100, **stats):
        """A process tracked by kmmscand, with the fields of
        /proc/<pid>/kmmscand the kernel keeps."""
        self.stat(pid, comm, start=start)
        self.write(f"proc/{pid}/cgroup", f"0::{cgroup}\n")
        fields = {"tracked": 1, "scans": 0, "pte_scanned": 0,
                  "slowtier_accessed": 0, "promoted": 0, "promote_failed": 0,
                  "kmmscand_cpu_ns": 0, "scan_period_ms": 1000,
                  "scan_size_mb": 512, "prctl_mode": 0, "served": 1}
        fields.update(stats)
        self.write(f"proc/{pid}/kmmscand",
                   "".join(f"{k} {v}\n" for k, v in fields.items()))

    def thread(self, pid=50, ticks=0):
        self.stat(pid, "kmmscand", flags=PF_KTHREAD, start=5, ticks=ticks)

    def vmstat(self, **counters):
        text = "nr_free_pages 1000\npgpromote_success 7\n"
        text += "".join(f"kmmscand_{k} {v}\n" for k, v in counters.items())
        self.write("proc/vmstat", text)

    def nice(self, n):
        self.write("sys/kernel/mm/kmmscand/nice", f"{n}\n")

    def cgroup(self, path, pids=(), setting="1", **stats):
        """A memory cgroup: memory.stat with its kmmscand_* entries."""
        d = "sys/fs/cgroup" + ("" if path == "/" else path)
        text = "anon 4096\nfile 0\n"
        text += "".join(f"kmmscand_{k} {v}\n" for k, v in stats.items())
        self.write(f"{d}/memory.stat", text)
        self.write(f"{d}/cgroup.procs", "".join(f"{p}\n" for p in pids))
        if path != "/":
            self.write(f"{d}/memory.kmmscand", f"{setting}\n")

    def step(self, fn):
        """fn(self) runs at the next sleep of the tool not yet stepped."""
        self.steps.append(fn)

    # The tool's clock
    def monotonic(self):
        return self.now

    def time(self):
        return 1.7e9 + self.now

    def sleep(self, secs):
        self.now += secs
        if self.sleeps < len(self.steps):
            self.steps[self.sleeps](self)
        self.sleeps += 1


@pytest.fixture
def machine(tmp_path, top, monkeypatch):
    m = Machine(tmp_path)
    clock = types.SimpleNamespace(monotonic=m.monotonic, time=m.time,
                                  sleep=m.sleep, strftime=lambda f: "12:00:00")
    monkeypatch.setattr(top, "time", clock)
    return m


def run(top, machine, *args):
    """(exit status, stdout, stderr) of the tool on machine."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = top.main(["--root", machine.root, *args])
    return status, out.getvalue(), err.getvalue()


def run_json(top, machine, *args):
    status, out, err = run(top, machine, "--json", *args)
    assert status == 0, err
    return [json.loads(line) for line in out.splitlines()]


DOC_KEYS = {"mode", "time", "seconds", "global", "processes", "total",
            "cgroups", "unreadable"}
GLOBAL_KEYS = {"thread_pid", "thread_nice", "thread_cpu_ms", "thread_cpu_pct",
               "scan_cpu_ms", "scan_cpu_pct", "promoted_mb",
               "promoted_mb_per_s", "promote_failed", "hot_found",
               "pte_scanned"}
PROCESS_KEYS = {"pid", "comm", "cgroup", "promoted_mb", "promoted_mb_per_s",
                "promote_failed", "hot_found", "hot_per_s", "pte_scanned",
                "scans", "scan_cpu_ms", "scan_cpu_pct", "scan_period_ms",
                "scan_size_mb", "prctl_mode", "served", "total_promoted_mb"}
TOTAL_KEYS = {"promoted_mb", "promote_failed", "hot_found", "pte_scanned",
              "scans", "scan_cpu_ms"}
CGROUP_KEYS = {"cgroup", "served", "promoted_mb", "promoted_mb_per_s",
               "promote_failed", "hot_found", "hot_per_s", "pte_scanned",
               "scans", "scan_cpu_ms", "scan_cpu_pct", "processes"}


def check_keys(doc, mode, cgroups):
    assert set(doc) == DOC_KEYS
    assert doc["mode"] == mode
    assert set(doc["global"]) == GLOBAL_KEYS
    assert set(doc["total"]) == TOTAL_KEYS
    for row in doc["processes"]:
        assert set(row) == PROCESS_KEYS
    if not cgroups:
        assert doc["cgroups"] is None
        return
    for row in doc["cgroups"]:
        assert set(row) == CGROUP_KEYS


def busy_machine(m):
    """The kmmscand thread, three busy processes in three cgroups (/app,
    /app/db below it, /batch, whose memory.kmmscand is 0) and an idle one;
    each sleep adds to every counter."""
    m.thread(ticks=100)
    m.vmstat(migrated=0, cpu_us=0, slowtier_accessed=0, pte_scanned=0)
    m.process(100, "web", "/app", promoted=512, kmmscand_cpu_ns=10**9)
    m.process(101, "db", "/app/db", promoted=0, kmmscand_cpu_ns=0)
    m.process(102, "batch", "/batch", promoted=0, kmmscand_cpu_ns=0)
    m.process(103, "idle", "/")
    m.cgroup("/", pids=[1, 103], migrated=512)
    m.cgroup("/app", pids=[100], migrated=512)
    m.cgroup("/app/db", pids=[101], migrated=0)
    m.cgroup("/batch", pids=[102], setting="0", migrated=0)
    m.cgroup("/batch/job", pids=[], mm_scans=0)

    def tick(k):
        def fn(m):
            # per step: web 1 MB promoted and 20 ms, db 2 MB and 30 ms,
            # batch 50 ms and nothing promoted; the thread 1.5 s
            m.thread(ticks=100 + 150 * k)
            m.vmstat(migrated=768 * k, cpu_us=100000 * k,
                     slowtier_accessed=1000 * k, pte_scanned=9000 * k)
            m.process(100, "web", "/app", promoted=512 + 256 * k,
                      slowtier_accessed=300 * k, pte_scanned=3000 * k,
                      scans=k, kmmscand_cpu_ns=10**9 + 20 * 10**6 * k)
            m.process(101, "db", "/app/db", promoted=512 * k,
                      slowtier_accessed=700 * k, pte_scanned=3000 * k,
                      scans=k, kmmscand_cpu_ns=30 * 10**6 * k)
            m.process(102, "batch", "/batch", pte_scanned=3000 * k,
                      scans=k, kmmscand_cpu_ns=50 * 10**6 * k)
            m.cgroup("/", pids=[1, 103], migrated=512 + 768 * k)
            m.cgroup("/app", pids=[100], migrated=512 + 768 * k,
                     pte_scanned=6000 * k)
            m.cgroup("/app/db", pids=[101], migrated=512 * k,
                     pte_scanned=3000 * k)
            m.cgroup("/batch", pids=[102], setting="0", pte_scanned=3000 * k)
        return fn
    for k in range(1, 6):
        m.step(tick(k))


def by_pid(doc):
    return {r["pid"]: r for r in doc["processes"]}


def by_path(doc):
    return {r["cgroup"]: r for r in doc["cgroups"]}


def test_summary_json(top, machine):
    busy_machine(machine)
    (doc,) = run_json(top, machine, "--summary", "2")
    check_keys(doc, "summary", cgroups=False)
    assert doc["seconds"] == pytest.approx(2.0)
    g = doc["global"]
    assert g["thread_pid"] == 50 and g["thread_nice"] == 5
    assert g["thread_cpu_ms"] == pytest.approx(1500)   # 150 ticks
    assert g["thread_cpu_pct"] == pytest.approx(75)
    assert g["scan_cpu_ms"] == pytest.approx(100)      # kmmscand_cpu_us
    assert g["promoted_mb"] == pytest.approx(3)
    rows = by_pid(doc)
    # idle 103 is left out; the busiest first
    assert [r["pid"] for r in doc["processes"]] == [101, 100, 102]
    assert rows[100]["promoted_mb"] == pytest.approx(1)
    assert rows[100]["total_promoted_mb"] == pytest.approx(3)
    assert rows[100]["scan_cpu_ms"] == pytest.approx(20)
    assert rows[100]["scan_cpu_pct"] == pytest.approx(1)
    assert rows[100]["cgroup"] == "/app" and rows[100]["served"] == 1
    assert doc["total"]["promoted_mb"] == pytest.approx(3)
    assert doc["total"]["scan_cpu_ms"] == pytest.approx(100)


def test_all_shows_idle_processes(top, machine):
    busy_machine(machine)
    (doc,) = run_json(top, machine, "--summary", "1", "--all")
    assert 103 in by_pid(doc)


def test_pid_filter(top, machine):
    busy_machine(machine)
    (doc,) = run_json(top, machine, "--summary", "1", "-p", "100,103")
    # a process named is shown even when idle
    assert sorted(by_pid(doc)) == [100, 103]
    assert doc["total"]["promoted_mb"] == pytest.approx(1)
    # the machine's figures stay the machine's
    assert doc["global"]["promoted_mb"] == pytest.approx(3)
    (doc,) = run_json(top, machine, "--summary", "1", "--pid", "102",
                      "--pid", "101")
    assert sorted(by_pid(doc)) == [101, 102]


def test_pid_filter_by_cgroup(top, machine):
    busy_machine(machine)
    (doc,) = run_json(top, machine, "--summary", "1", "-p", "101",
                      "--by-cgroup")
    check_keys(doc, "summary", cgroups=True)
    assert list(by_pid(doc)) == [101]
    # the cgroup of the process, with the CPU of all its processes
    assert list(by_path(doc)) == ["/app/db"]
    assert by_path(doc)["/app/db"]["scan_cpu_ms"] == pytest.approx(30)


def test_cgroup_filter(top, machine):
    busy_machine(machine)
    for path in ("app", "/app", "/app/"):
        (doc,) = run_json(top, machine, "--summary", "1", "-c", path,
                          "--by-cgroup")
        assert sorted(by_pid(doc)) == [100, 101]
        assert sorted(by_path(doc)) == ["/app", "/app/db"]
    (doc,) = run_json(top, machine, "--summary", "1", "--cgroup", "app/db")
    assert list(by_pid(doc)) == [101]
    # both filters: what both select
    (doc,) = run_json(top, machine, "--summary", "1", "-c", "/app",
                      "-p", "100,102")
    assert list(by_pid(doc)) == [100]


def test_cgroup_filter_names_a_missing_cgroup(top, machine):
    busy_machine(machine)
    status, out, err = run(top, machine, "--summary", "1", "-c", "/nope")
    assert status == 1 and out == ""
    assert "no cgroup /nope" in err


def test_cgroup_cpu_is_the_sum_of_its_processes(top, machine):
    busy_machine(machine)
    # 104 exits during the window: the cgroup's CPU misses it
    machine.process(104, "gone", "/app", kmmscand_cpu_ns=5 * 10**9)
    machine.cgroup("/app", pids=[100, 104], migrated=512)

    def exit_104(m, step=machine.steps[0]):
        step(m)
        for name in ("stat", "cgroup", "kmmscand"):
            m.remove(f"proc/104/{name}")
    machine.steps[0] = exit_104
    (doc,) = run_json(top, machine, "--summary", "1", "--by-cgroup")
    cgs = by_path(doc)
    # /app: web (20 ms) and, below it, db (30 ms)
    assert cgs["/app"]["scan_cpu_ms"] == pytest.approx(50)
    assert cgs["/app"]["scan_cpu_pct"] == pytest.approx(5)
    assert cgs["/app"]["processes"] == 2
    assert cgs["/app/db"]["scan_cpu_ms"] == pytest.approx(30)
    assert cgs["/batch"]["scan_cpu_ms"] == pytest.approx(50)
    # the root: every process alive at both samples
    assert cgs["/"]["scan_cpu_ms"] == pytest.approx(100)
    # the other figures come from memory.stat, with descendants
    assert cgs["/app"]["promoted_mb"] == pytest.approx(3)
    assert cgs["/app"]["pte_scanned"] == 6000
    assert [cgs[p]["served"] for p in ("/", "/app", "/batch")] == \
        ["on", "on", "off"]
    # /batch/job has nothing to show but is off through its parent
    (doc,) = run_json(top, machine, "--summary", "1", "--by-cgroup",
                      "-c", "/batch/job")
    assert by_path(doc)["/batch/job"]["served"] == "off^"


def test_live_json_one_document_per_sample(top, machine):
    busy_machine(machine)
    docs = run_json(top, machine, "-n", "3", "-i", "2", "--by-cgroup")
    assert len(docs) == 3
    for doc in docs:
        check_keys(doc, "live", cgroups=True)
        assert doc["seconds"] == pytest.approx(2)
        assert by_pid(doc)[100]["promoted_mb_per_s"] == pytest.approx(0.5)
    assert docs[0]["time"] < docs[1]["time"] < docs[2]["time"]
    (doc,) = run_json(top, machine, "--once", "-p", "102")
    check_keys(doc, "live", cgroups=False)
    assert list(by_pid(doc)) == [102]


class FakePyplot:
    """What --plot asks of matplotlib, recorded."""

    def __init__(self):
        self.lines = []
        self.saved = None
        self.backend = None

    def use(self, backend):
        self.backend = backend

    def subplots(self, figsize):
        plt = self

        class Axes:
            transAxes = None

            def plot(self, xs, ys, label):
                plt.lines.append((label, list(xs), list(ys)))

            def __getattr__(self, name):
                return lambda *a, **k: None

        class Figure:
            def tight_layout(self):
                pass

            def savefig(self, path, dpi):
                plt.saved = path

        return Figure(), Axes()

    def close(self, fig):
        pass


@pytest.fixture
def fake_matplotlib(monkeypatch):
    fake = FakePyplot()
    pyplot = types.SimpleNamespace(subplots=fake.subplots, close=fake.close)
    mpl = types.SimpleNamespace(use=fake.use, pyplot=pyplot)
    monkeypatch.setitem(sys.modules, "matplotlib", mpl)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    return fake


def test_plot_json_and_chart(top, machine, fake_matplotlib, tmp_path):
    busy_machine(machine)
    png = str(tmp_path / "prom.png")
    status, out, err = run(top, machine, "--json", "--plot", png, "6",
                           "-i", "2", "-p", "100,101")
    assert status == 0, err
    docs = [json.loads(line) for line in out.splitlines()]
    assert len(docs) == 3
    for doc in docs:
        check_keys(doc, "plot", cgroups=False)
    assert fake_matplotlib.backend == "Agg"
    assert fake_matplotlib.saved == png
    assert f"wrote {png}" in err        # stdout is JSON only
    lines = {label: (xs, ys) for label, xs, ys in fake_matplotlib.lines}
    assert sorted(lines) == ["100 web (3.0 MB)", "101 db (6.0 MB)"]
    xs, ys = lines["101 db (6.0 MB)"]
    assert xs == pytest.approx([0, 2, 4, 6])
    assert ys == pytest.approx([0, 2, 4, 6])


def test_plot_by_cgroup(top, machine, fake_matplotlib, tmp_path):
    busy_machine(machine)
    png = str(tmp_path / "prom.png")
    status, out, _ = run(top, machine, "--plot", png, "4", "-i", "2",
                         "--by-cgroup", "-c", "/app", "--top", "1")
    assert status == 0
    assert out.startswith(f"wrote {png}: 3 samples")
    assert [label for label, _, _ in fake_matplotlib.lines] == \
        ["/app (6.0 MB)"]


def test_plot_without_matplotlib(top, machine, monkeypatch, tmp_path):
    busy_machine(machine)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    status, out, err = run(top, machine, "--plot", str(tmp_path / "p.png"),
                           "4")
    assert status == 1 and out == ""
    assert "python3-matplotlib" in err
    assert machine.sleeps == 0          # said before any sampling


def test_plot_with_matplotlib(top, machine, tmp_path):
    pytest.importorskip("matplotlib")
    busy_machine(machine)
    png = tmp_path / "prom.png"
    status, _, err = run(top, machine, "--plot", str(png), "4", "-i", "2")
    assert status == 0, err
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_text_modes(top, machine):
    busy_machine(machine)
    status, out, _ = run(top, machine, "--summary", "2", "--by-cgroup")
    assert status == 0
    assert "thread CPU 75.0% (5.0% on scans), nice 5" in out
    assert "thread CPU 1500.0 ms (100.0 ms on scans)" in out
    assert "SCAN_CPU_MS" in out and "PROCS" in out
    assert "/batch" in out and " off " in out
    status, out, _ = run(top, machine, "--once", "--by-cgroup", "-c", "app")
    assert status == 0
    assert "SCAN_CPU%" in out and "/app/db" in out and "batch" not in out
    assert "owner" not in out.lower()


def test_help_documents_json_and_filters(top, capsys):
    with pytest.raises(SystemExit):
        top.parse_args(["--help"])
    text = capsys.readouterr().out
    for word in ("--pid", "--cgroup", "--json", "thread_cpu_ms",
                 "cgroup.procs", "python3-matplotlib", "examples:"):
        assert word in text
    assert "owner" not in text.lower()


def test_bad_pid_list(top, capsys):
    for bad in ("x", "0", ","):
        with pytest.raises(SystemExit):
            top.parse_args(["-p", bad])
    assert "PID[,PID...]" in capsys.readouterr().err


def test_no_kmmscand(top, machine):
    machine.remove("proc/self/kmmscand")
    status, out, err = run(top, machine, "--once")
    assert status == 2 and out == ""
    assert "/proc/<pid>/kmmscand does not exist" in err
