"""Shared by the harness's unit tests: kmmlib on the path, and the
captured guest output of harness/tests/fixtures/."""

import os
import sys

import pytest

HARNESS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if HARNESS not in sys.path:
    sys.path.insert(0, HARNESS)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "fixtures")


def fixture_text(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return f.read()


@pytest.fixture
def quick_log():
    """A QUICK=1 run's console: workloads a, c, f under the quick
    configurations, 12 s runs."""
    return fixture_text("bench-quick.log")


@pytest.fixture
def server_log():
    """A server workload's runs, numab and kmmscand twice each
    (CONFIGS=none,numab,kmmscand,numab,kmmscand,oracle WORKLOADS=s)."""
    return fixture_text("bench-server.log")
