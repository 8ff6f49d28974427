"""A Fast DDS profile without shared memory (``config/fastdds_udp_loopback.xml``: UDP on the
loopback interface) against the stall of a publisher beside readers that die.  With Fast
DDS's shared memory (the rmw's LOCALHOST discovery range adds it), a publish after readers'
processes were killed (SIGKILL) blocked 0.33-1 s inside rclpy's ``publish``, which holds
the GIL: every thread of the publishing process stopped (a simulator stopped that way
stalls the whole graph it serves).  Here a publisher at 500 Hz outlives two rounds of
three readers killed after 4 s (the second round starting as the first dies), publishing
3 s after the last: with the profile no publish takes 50 ms (its wall time less what its
thread waited for a CPU: a loaded machine can preempt one for 73 ms; its memory locked
like the simulator's, as a 63 ms block beside a colcon build has been seen) and neither
the publisher nor a reader maps a shared-memory port of this domain.  With the LOCALHOST
range instead, the same test fails on both distros: a publish blocked 0.33 s, or the
ports were mapped (each check fails alone).  The profile is for a robot whose nodes may be
killed (docs/troubleshooting.md); every test graph runs over it (conftest.ros_graph_environment)."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import WITHOUT_SHARED_MEMORY, ros_graph_environment, stop_processes

from figaroh_ros.ros.transport import without_shared_memory as profile_variables

pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs

PERIOD = 0.002   # s: 500 Hz
# the schedule under which shared memory stalled the publisher in every run (readers killed
# 0.5 s after they matched, the publisher going on for 2 s, it did not)
ALIVE = 4.0      # s each round's readers live; the next round starts as they die
AFTER_KILL = 3.0  # s of publishing after the last round is killed
READER = ("import rclpy; from sensor_msgs.msg import JointState; rclpy.init(); "
          "n = rclpy.create_node('killed_reader'); "
          "n.create_subscription(JointState, 'js', lambda m: None, 100); rclpy.spin(n)")


def _ports(pid: int, domain: int) -> set[str]:
    """Fast DDS shared-memory ports of ``domain`` that process ``pid`` has mapped (its RTPS
    ports: 7400 + 250 domain + 0..249; files ``fastdds_port<n>`` from Fast DDS 3,
    ``fastrtps_port<n>`` from 2).  What a process maps, not what exists: a killed process
    of an earlier run may have left files of the same domain in /dev/shm."""
    low, found = 7400 + 250 * domain, set()
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            name = line.split()[-1] if "/dev/shm/fast" in line else ""
            port = name.rsplit("_port", 1)[-1]
            if port.isdigit() and low <= int(port) < low + 250:
                found.add(name)
    return found


# The publisher is a process of its own: Fast DDS reads its profiles file once per process,
# at the first participant, so one created here by an earlier test would have kept the
# transports this test replaces (Jazzy's suite run, where this process had made nodes).
PUBLISHER = """
import sys, threading, time, rclpy
from sensor_msgs.msg import JointState
from figaroh_ros.ros.memory_lock import lock_memory
lock_memory()      # resident, as the simulator: a page read back from disk is no DDS block
rclpy.init()
node = rclpy.create_node('publisher_beside_killed_readers')
pub = node.create_publisher(JointState, 'js', 100)
msg = JointState(name=[f'j{i}' for i in range(6)], position=[0.1] * 6)
stop, took, seen = threading.Event(), [], 0
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()


def waited():
    # this thread's time runnable but waiting for a CPU (s): not a block of the publish
    try:
        with open('/proc/thread-self/schedstat') as f:
            return int(f.read().split()[1]) * 1e-9
    except (OSError, IndexError, ValueError):
        return 0.0


due = time.monotonic()
while not stop.is_set():
    due += %r
    time.sleep(max(0.0, due - time.monotonic()))
    t, w = time.monotonic(), waited()
    pub.publish(msg)
    took.append(time.monotonic() - t - (waited() - w))
    if len(took) %% 10 == 0 and pub.get_subscription_count() != seen:
        seen = pub.get_subscription_count()
        print('matched', seen, flush=True)
print('took', len(took), max(took), flush=True)
""" % PERIOD


class _Publisher:
    """The publishing process, its stdout read line by line on a thread."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", PUBLISHER], env=dict(os.environ),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.reading = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout))
        self.reading.start()

    def matched(self, count: int, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while self._count() < count and time.monotonic() < end:
            time.sleep(0.02)
        assert self._count() >= count, f"{self._count()} readers matched, {count} started"

    def _count(self) -> int:
        counts = [int(line.split()[1]) for line in list(self.lines) if line.startswith("matched")]
        return counts[-1] if counts else 0

    def finish(self) -> tuple[int, float]:
        """Stop publishing; the number of publishes and the longest, in s."""
        self.proc.stdin.write("stop\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.reading.join(timeout=10)
        last = [line.split() for line in self.lines if line.startswith("took")]
        assert last, f"the publisher printed no result (exit code {self.proc.returncode})"
        return int(last[-1][1]), float(last[-1][2])


@pytest.fixture
def without_shared_memory():
    """This process and its children on the profile, in a fresh domain; restored after."""
    before = dict(os.environ)
    domain = ros_graph_environment()
    os.environ.update(WITHOUT_SHARED_MEMORY)
    yield domain
    os.environ.clear()
    os.environ.update(before)


def test_a_killed_reader_never_blocks_a_publisher(without_shared_memory):
    domain = without_shared_memory
    publisher, readers, mapped = _Publisher(), [], set()
    try:
        for round_ in (1, 2):
            started = [subprocess.Popen([sys.executable, "-c", READER], env=dict(os.environ),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                       for _ in range(3)]
            readers += started
            publisher.matched(3 * round_)
            time.sleep(ALIVE)
            for pid in [publisher.proc.pid] + [p.pid for p in started]:
                mapped |= _ports(pid, domain)
            for p in started:
                p.send_signal(signal.SIGKILL)
        time.sleep(AFTER_KILL)
        count, longest = publisher.finish()
    finally:
        stop_processes(readers + [publisher.proc])
    assert count > 2000
    assert longest < 0.05, f"a publish blocked {longest:.3f} s after readers were killed"
    assert not mapped, f"shared-memory ports of domain {domain} mapped: {sorted(mapped)}"


@pytest.mark.parametrize("distro, name", [
    ("humble", "FASTRTPS"), ("jazzy", "FASTRTPS"), ("kilted", "FASTDDS"), ("rolling", "FASTDDS")])
def test_the_profile_goes_where_the_distros_fast_dds_reads_it(monkeypatch, distro, name):
    """Fast DDS 2 (Humble to Jazzy) reads FASTRTPS_DEFAULT_PROFILES_FILE only, 3 (Kilted on)
    FASTDDS_...; the profile itself is installed with the package (config/)."""
    monkeypatch.setenv("ROS_DISTRO", distro)
    env = profile_variables()
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SYSTEM_DEFAULT"
    assert set(env) == {"ROS_AUTOMATIC_DISCOVERY_RANGE", f"{name}_DEFAULT_PROFILES_FILE"}
    assert os.path.isfile(env[f"{name}_DEFAULT_PROFILES_FILE"])


def test_the_demo_runs_over_the_profile_unless_the_caller_chose_a_transport():
    from figaroh_ros.ros.demo import demo_transport
    assert demo_transport({}) == profile_variables()
    for chosen in ("ROS_AUTOMATIC_DISCOVERY_RANGE", "FASTDDS_DEFAULT_PROFILES_FILE",
                   "FASTRTPS_DEFAULT_PROFILES_FILE"):
        assert demo_transport({chosen: "x"}) == {}, chosen


def test_a_missing_profile_is_a_clear_error(monkeypatch, tmp_path):
    """An install without config/ (or no share directory at all): ConfigError naming the
    file, never nodes silently left on shared memory."""
    from figaroh_ros.errors import ConfigError
    from figaroh_ros.ros import transport
    for share in (None, str(tmp_path)):
        monkeypatch.setattr(transport, "share_directory", lambda s=share: s)
        with pytest.raises(ConfigError, match="fastdds_udp_loopback.xml not found"):
            profile_variables()
