"""A node whose goal thread destroys a subscription while the multi-threaded executor
builds its wait set lives on (``common.spin_through_destruction``): with rclpy's bare
``spin()`` the process dies of ``InvalidHandle`` (the executor died this way at a goal's end
under load, its result never sent), so the comparison shows the test can fail.  A SIGTERM
that rclpy's handler does not act on still ends the spin."""
import functools
import os
import signal
import subprocess
import sys

import pytest
from conftest import ROOT, node_script, ros_graph_environment

pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs
_churn = functools.partial(node_script, "churn_node.py")
_shutdown_race = functools.partial(node_script, "shutdown_race_node.py", timeout=60)


def test_a_node_lives_through_entities_destroyed_while_it_spins():
    p = _churn("100")
    assert p.returncode == 0 and "churned 100" in p.stdout, p.stderr[-2000:]


def test_the_bare_spin_dies_of_it():
    """The race itself (measured: 3 of 3 runs of 300 cycles, 3 of 5 of 60): when it did not
    occur, nothing is shown either way."""
    p = _churn("300", "plain")
    if p.returncode == 0 or "churned 300" in p.stdout:
        # all 300 cycles lived (a bare spin may still die at the end, of the shutdown race
        # of the test below: Jazzy, "publisher's context is invalid")
        pytest.skip("the race did not occur in 300 cycles this time")
    assert "InvalidHandle" in p.stderr, (p.returncode, p.stderr[-2000:])


def test_a_callback_refused_by_the_shutdown_ends_the_node_cleanly():
    """A timer that publishes as the context shuts down (the churn node's 1 kHz timer on
    Jazzy) is the shutdown, not a crash; the single-threaded executor raises it
    every time, so the bare ``spin()`` shows the test can fail."""
    p = _shutdown_race()
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    bare = _shutdown_race("plain")
    refused = ("context is invalid" in bare.stderr      # Jazzy
               or "InvalidHandle" in bare.stderr)       # Kilted destroys the publisher
    assert bare.returncode != 0 and refused, bare.stderr[-2000:]


def test_a_shutdown_while_the_node_starts_is_the_shutdown():
    """SIGTERM or Ctrl-C while a node is constructed (rclpy's handler shuts the context
    down; rcl refuses the node's next publisher): exit 0 without a traceback (unhandled,
    4 of 24 SIGTERMs at random moments of the nodes' start-ups end in one, exit 1)."""
    p = _shutdown_race("starting")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]


@pytest.mark.parametrize("threads", ["4", "single"])
def test_a_sigterm_rclpy_does_not_act_on_still_ends_the_node(threads):
    """rclpy's handler neither shut the context down nor woke the executor: the spin sees
    SIGTERM within ``SPIN_LOOK`` s, the node is destroyed and the process exits 0.  rclpy's
    bare ``spin()`` is still waiting 5 s later, so the test can fail."""
    def started(*extra):
        ros_graph_environment()
        p = subprocess.Popen([sys.executable, os.path.join(ROOT, "test",
                                                           "sigterm_unheard_node.py"),
                              *([threads] if threads.isdigit() else []), *extra],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "spinning", p.stderr.read()[-2000:]
        p.send_signal(signal.SIGTERM)
        return p

    p = started()
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0 and "destroyed" in out, (p.returncode, err[-2000:])
    bare = started("plain")
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            bare.wait(timeout=5)
    finally:
        bare.kill()
        bare.communicate()
