"""make bench HOST=1's pure parts (kmmlib/hostbench.py): the latencies
it models with, and the plan at another scale."""

from kmmlib import hostbench
from kmmlib.bench.model import Latencies


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_node_latencies_from_the_hmat(tmp_path):
    base = "devices/system/node/node{}/access0/initiators/read_latency"
    write(tmp_path, base.format(0), "110\n")
    write(tmp_path, base.format(2), "390\n")
    assert hostbench.node_latencies(0, 2, str(tmp_path)) == \
        Latencies(fast_ns=110, slow_ns=390)
    # no HMAT figure for the slow node: the VM's figures instead
    assert hostbench.node_latencies(0, 3, str(tmp_path)) is None


def test_scaled_plan():
    plan = hostbench.make_host_plan(["a", "m", "s"], ["kmmscand"], False,
                                    True, 2)
    assert plan[0].startswith("kmmscand a - -p uniform -s 1536 -H 384 ")
    assert "-P 4:512,128:8 -s 8 -H 2" in plan[1]
    assert "-k 1048576" in plan[2] and "-M 2048" in plan[2]
    assert hostbench.slow_footprint_mib("m", "-P 4:256,128:4 -s 4") == 1536
