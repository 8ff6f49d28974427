"""Robots run ROS 2 Humble, whose Python is 3.10: the package must import there.

No Humble wheels install on this machine (Python 3.11), so the check is static: vermin
(from PyPI, requirements.txt) reads every module of ``figaroh_ros/`` and names each
construct, module, function or keyword argument that needs a later Python (``tomllib``,
``except*``, ``typing.Self``, ``datetime.UTC`` ...).  A second check covers the rclpy API:
a name that Humble's rclpy lacks must stand in a guard whose comment says which distros
lack it (``# Humble: ...``).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

VERMIN = os.path.join(os.path.dirname(sys.executable), "vermin")

# rclpy names added after Humble (rclpy 3.3): the distro that brought each
AFTER_HUMBLE = {
    r"\bget_type_description\b": "Iron",            # Node.get_type_description service
    r"\bEventsExecutor\b": "Jazzy",                 # rclpy.experimental.EventsExecutor
    r"\brclpy\.event_handler\b": "Iron",            # Humble: rclpy.qos_event
    r"\bclock_type\b": "Iron",                      # Humble: rclpy.clock.ClockType
    r"\bservice_introspection\b": "Iron",
    r"\bconfigure_introspection\b": "Iron",
    r"\bTimerInfo\b": "Jazzy",                      # a timer callback's argument
    r"\bautostart\s*=": "Jazzy",                    # Node.create_timer(autostart=)
    r"\benable_logger_service\b": "Iron",
    r"\badd_post_set_parameters_callback\b": "Iron",
    r"\badd_pre_set_parameters_callback\b": "Iron",
    r"\bget_clients_info_by_service\b": "Kilted",
    r"\bget_servers_info_by_service\b": "Kilted",
    r"\bget_action_names_and_types\b": "Jazzy",
    r"\bpublication_sequence_number\b": "Iron",     # take_message's message info
    r"\breception_sequence_number\b": "Iron",
}
GUARD_WINDOW = 4   # lines above a use where the guard's comment may stand


def _vermin(*paths: str) -> subprocess.CompletedProcess:
    return subprocess.run([VERMIN, "-t=3.10-", "--no-tips", "--violations",
                           "--eval-annotations", "--processes=1", *paths],
                          capture_output=True, text=True, timeout=300)


def unguarded_after_humble(source: str) -> list[str]:
    """The lines of ``source`` using an rclpy name Humble lacks (``AFTER_HUMBLE``) with no
    comment naming Humble on the line or in the ``GUARD_WINDOW`` lines above it."""
    lines, found = source.splitlines(), []
    for k, line in enumerate(lines):
        code = line.split("#", 1)[0]
        for pattern, distro in AFTER_HUMBLE.items():
            if re.search(pattern, code):
                window = lines[max(0, k - GUARD_WINDOW):k + 1]
                if not any("#" in w and "humble" in w.split("#", 1)[1].lower()
                           for w in window):
                    found.append(f"{k + 1}: {line.strip()} (since {distro})")
    return found


@pytest.mark.skipif(not os.path.exists(VERMIN), reason="vermin not installed (make setup)")
def test_the_package_needs_no_python_after_3_10():
    done = _vermin(os.path.join(ROOT, "figaroh_ros"))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Target versions not met" not in done.stdout, done.stdout[-2000:]


@pytest.mark.skipif(not os.path.exists(VERMIN), reason="vermin not installed (make setup)")
def test_the_check_names_what_python_3_10_lacks(tmp_path):
    (tmp_path / "later.py").write_text(textwrap.dedent("""\
        import tomllib
        from datetime import UTC
        try:
            pass
        except* ValueError:
            pass
    """))
    done = _vermin(str(tmp_path))
    assert done.returncode != 0, done.stdout
    for words in ("'tomllib' module requires", "`except*` requires", "datetime.UTC"):
        assert words in done.stdout, done.stdout


def test_every_rclpy_name_humble_lacks_is_guarded():
    bad = {}
    for folder, _, files in os.walk(os.path.join(ROOT, "figaroh_ros")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    if found := unguarded_after_humble(f.read()):
                        bad[os.path.relpath(path, ROOT)] = found
    assert not bad, bad


def test_the_guard_check_finds_an_unguarded_use():
    source = textwrap.dedent("""\
        timer = node.create_timer(0.1, tick, autostart=False)
        # Humble, Iron: no autostart (rclpy's Jazzy API); started below instead
        other = node.create_timer(0.1, tick, autostart=False) if NEW else None
        x = 1  # get_type_description in a comment is not a use
    """)
    assert unguarded_after_humble(source) == [
        "1: timer = node.create_timer(0.1, tick, autostart=False) (since Jazzy)"]
