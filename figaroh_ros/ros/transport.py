"""The DDS transport of the graphs this package starts itself (the demo, the test graphs):
Fast DDS over UDP on the loopback interface, without its shared memory.

With shared memory, a publish after a reader's process died blocked 0.33-1 s inside
rclpy's ``publish``, which holds the GIL: every thread of the publishing node stopped
(``test/test_dds_transport.py``).  The profile is ``config/fastdds_udp_loopback.xml``; the
rmw's LOCALHOST discovery range would add shared memory back, so the range is left to the
system default and the profile's interface list keeps the graph on this computer.
"""
from __future__ import annotations

import glob
import os
import random
import sys

from figaroh_ros.errors import ConfigError
from figaroh_ros.io.share import share_directory

FAST_DDS_2_DISTROS = ("humble", "iron", "jazzy")
PROFILE_NAME = "fastdds_udp_loopback.xml"

# A domain's DDS ports are 7400 + 250 x id + 0 ... 249 (RTPS port mapping: discovery, then
# two per participant).  Linux gives sockets ephemeral ports from 32768 up: from id 102 on
# (32900) another process's socket can hold a port a participant needs, and it then misses
# discovery (ROS 2's domain-id guide).  Id 101 keeps 54 participants under 32768, lower ids
# more; the graphs this package starts pick from 1 to MAX_DOMAIN.
EPHEMERAL_PORTS_FROM = 32768
MAX_DOMAIN = 100


def domain_ports(domain: int, participants: int) -> range:
    """The UDP ports of ``domain``'s first ``participants`` (RTPS defaults: PB 7400, DG 250,
    PG 2, d1 10 / d3 11 their unicast discovery and user ports)."""
    base = 7400 + 250 * domain
    return range(base, base + 12 + 2 * participants)


def random_domain() -> int:
    """A ROS domain id from 1 to :data:`MAX_DOMAIN`, at random."""
    return random.randint(1, MAX_DOMAIN)


def fast_dds_2() -> bool:
    """Whether this ROS has Fast DDS 2 (``libfastrtps``: Humble to Jazzy), which reads a
    profiles file from ``FASTRTPS_DEFAULT_PROFILES_FILE`` only; Fast DDS 3 (Kilted on)
    reads ``FASTDDS_DEFAULT_PROFILES_FILE`` and warns on every node's stderr for the
    other name."""
    distro = os.environ.get("ROS_DISTRO", "")
    if distro:
        return distro in FAST_DDS_2_DISTROS
    return bool(glob.glob(os.path.join(sys.prefix, "lib", "libfastrtps.so*")))


def udp_loopback_profile() -> str:
    """``config/fastdds_udp_loopback.xml`` of this checkout or of the installed share;
    ConfigError when neither holds it (the nodes would silently keep shared memory)."""
    share = share_directory()
    path = os.path.join(share or "<no share directory>", "config", PROFILE_NAME)
    if share is None or not os.path.isfile(path):
        raise ConfigError(f"Fast DDS profile {path} not found: figaroh_ros is neither a "
                          "checkout nor installed in an ament prefix (colcon build installs "
                          "config/)")
    return path


def without_shared_memory(profile: str | None = None) -> dict[str, str]:
    """The environment variables that put the nodes started with them on ``profile``
    (default: :func:`udp_loopback_profile`)."""
    profile = profile or udp_loopback_profile()
    name = ("FASTRTPS" if fast_dds_2() else "FASTDDS") + "_DEFAULT_PROFILES_FILE"
    return {"ROS_AUTOMATIC_DISCOVERY_RANGE": "SYSTEM_DEFAULT", name: profile}
