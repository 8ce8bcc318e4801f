"""The workloads, configurations and plan (kmmlib/bench/catalogue.py)."""

import shlex

import pytest

from kmmlib.bench import catalogue as cat
from kmmlib.common import Failure


def test_plan_lines_are_what_bench_sh_reads():
    """bench.sh: read -r config workload limit args."""
    plan = cat.make_plan(["a", "d", "s"], ["numab", "kmmscand"], quick=True)
    assert len(plan) == 6
    config, workload, limit, args = plan[2].split(" ", 3)
    assert (config, workload, limit) == ("numab", "d", "32")
    words = shlex.split(args)
    assert words[words.index("-t") + 1] == str(cat.QUICK_SECONDS)
    assert words[words.index("-S") + 1] == str(cat.SEED)
    server = plan[4].split(" ", 3)
    assert server[2] == "-" and server[3].startswith("memcached ")
    assert "-i 1000" in server[3]


def test_full_plan_follows_workload_configs():
    workloads, labels, chosen = cat.choose(False, None, None)
    assert workloads == cat.FULL_WORKLOADS and not chosen
    plan = cat.make_plan(workloads, labels, False, chosen)
    for line in plan:
        config, w = line.split()[:2]
        assert config in cat.WORKLOAD_CONFIGS.get(w, cat.DEFAULT_CONFIGS)
    assert not any(line.startswith("kmm-no-idle-skip a ") for line in plan)
    assert cat.time_budget(workloads, labels, False, chosen) < 2 * 3600


def test_chosen_configs_run_everywhere_and_repeat():
    workloads, labels, chosen = cat.choose(
        True, ("i",), ("none", "numab", "numab"))
    assert chosen and labels == ["none", "numab", "numab#2"]
    assert cat.workload_configs("i", labels, chosen) == labels
    assert cat.describe_config("numab#2").endswith(", run 2")


def test_known_configs():
    assert cat.known_config("kmmscand:min_heat=2:smart_scan=0+mglru")
    assert cat.known_config("damon-paddr:ms=20")
    assert not cat.known_config("damon-paddr:foo=1")
    assert cat.describe_config("kmmscand:min_heat=2+mglru") == \
        "kmmscand with min_heat=2, multi-gen LRU on"


@pytest.mark.parametrize("workloads,configs", [
    (("zz",), None), (("a",), ("numab", "bogus")), (("a",), ("numab-late",)),
])
def test_choose_refuses(workloads, configs):
    with pytest.raises(Failure):
        cat.choose(False, workloads, configs)


def test_full_run():
    assert cat.full_run(False, cat.FULL_WORKLOADS + ("h",),
                        cat.DEFAULT_CONFIGS)
    assert not cat.full_run(True, cat.FULL_WORKLOADS, cat.DEFAULT_CONFIGS)
    assert not cat.full_run(False, ("a",), cat.DEFAULT_CONFIGS)
