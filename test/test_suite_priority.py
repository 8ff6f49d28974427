"""`make test`'s scheduling: the ROS graph tests at the priority and policy the suite started
with, the CPU-bound tests of a worker past its graph group under ``BATCH_POLICY``
(``SCHED_IDLE``) at nice ``BATCH_NICE`` (conftest), so that the simulators keep their real
time.  Without pytest-xdist (a serial run) nothing changes."""
import os
import subprocess
import sys

import pytest
from conftest import BATCH_NICE, BATCH_POLICY, START_NICE

from figaroh_ros.ros.transport import EPHEMERAL_PORTS_FROM, MAX_DOMAIN, domain_ports


def _thread_priorities() -> set[int]:
    return {os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir("/proc/self/task")}


def _thread_policies() -> set[int]:
    return {os.sched_getscheduler(int(t)) for t in os.listdir("/proc/self/task")}


def _child_priority() -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", "import os; print(os.getpriority("
                          "os.PRIO_PROCESS, 0), os.sched_getscheduler(0))"],
                         capture_output=True, text=True, check=True)
    nice, policy = out.stdout.split()
    return int(nice), int(policy)


START_POLICY = os.SCHED_OTHER


def test_a_batch_test_and_its_processes_yield_to_the_graphs():
    batch = "PYTEST_XDIST_WORKER" in os.environ
    nice = max(START_NICE, BATCH_NICE) if batch else START_NICE
    policy = BATCH_POLICY if batch else START_POLICY
    assert _thread_priorities() == {nice} and _thread_policies() == {policy}
    assert _child_priority() == (nice, policy)


@pytest.mark.xdist_group("ros_graph")
def test_a_graph_test_keeps_the_suites_priority():
    assert os.getpriority(os.PRIO_PROCESS, 0) == START_NICE
    assert os.sched_getscheduler(0) == START_POLICY
    assert _child_priority() == (START_NICE, START_POLICY)


def test_a_worker_takes_its_ros_domains_in_turn():
    """Four workers have 12 or 13 odd domain ids each (``id + 1`` free for a second graph,
    both up to ``transport.MAX_DOMAIN``); a worker that runs more graphs than that takes
    them again, the least recently used first, and never another worker's."""
    import itertools

    import conftest
    k = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    n = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    taken = list(itertools.islice(conftest._DOMAINS, 250))
    mine = sorted(set(taken))
    assert all(d % 2 == 1 and (d // 2) % n == k and 0 < d < d + 1 <= MAX_DOMAIN for d in mine)
    period = len(mine)
    assert taken[period:2 * period] == taken[:period]        # the same turn again


def test_every_domain_a_graph_may_use_keeps_its_ports_below_the_ephemeral_ones():
    """Domains 1 to MAX_DOMAIN with 54 participants each (a test graph has under 15) stay
    below the ports Linux gives other sockets (``ip_local_port_range``): a socket there
    can hold a participant's port, which then misses discovery.  Domain 102 would not."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
    if low < EPHEMERAL_PORTS_FROM:
        pytest.skip(f"this machine's ephemeral ports start at {low}, below Linux's default")
    assert max(domain_ports(MAX_DOMAIN, 54)) < EPHEMERAL_PORTS_FROM <= low
    assert max(domain_ports(MAX_DOMAIN + 2, 1)) >= EPHEMERAL_PORTS_FROM
    from figaroh_ros.ros.transport import random_domain
    assert {random_domain() for _ in range(2000)} == set(range(1, MAX_DOMAIN + 1))
