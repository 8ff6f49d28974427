"""The rules of the path confinement (``io/confine.py``) at their bounds: what a bag
folder may hold (sub-folders yes; a FIFO, a link out of the roots or more than
``MAX_BAG_ENTRIES`` entries no), the field a refusal names, and what an answer never
quotes of a request's files (a bag's ``metadata.yaml``, short and quoted cells, bytes that
are not UTF-8), whatever other paths come before them."""
import os

import pytest

from figaroh_ros.action import Calibrate, RunExperiment
from figaroh_ros.io.confine import (
    MAX_BAG_ENTRIES, SCRUB_MIN, PathRefused, readable, request_paths, scrub, writable
)


@pytest.fixture()
def bags(tmp_path):
    root = tmp_path / "bags"
    bag = root / "exp"
    (bag / "sub").mkdir(parents=True)
    (bag / "exp_0.mcap").write_bytes(b"x" * 100)
    (bag / "sub" / "deep.bin").write_bytes(b"y" * 1000)       # a sub-folder's files
    (bag / "metadata.yaml").write_text("topic_name: /secret_robot_topic\n"
                                       "serialization_format: cdr\n")
    return root, bag


def test_a_bag_folder_holds_files_and_folders_but_nothing_special(bags):
    root, bag = bags
    size = 100 + (bag / "metadata.yaml").stat().st_size        # not the sub-folder's files
    assert readable("bag", str(bag), [str(root)], folder=True, max_bytes=size) == str(bag)
    with pytest.raises(PathRefused, match=f"holds {size} bytes, more than the {size - 1} "):
        readable("bag", str(bag), [str(root)], folder=True, max_bytes=size - 1)
    os.mkfifo(bag / "pipe")
    with pytest.raises(PathRefused) as exc:
        readable("bag", str(bag), [str(root)], folder=True)
    assert str(exc.value) == (f"bag: {str(bag)!r} holds 'pipe', not a regular file (a "
                              "device, FIFO or socket)")
    os.remove(bag / "pipe")
    (bag / "out").symlink_to("/etc/hostname")
    with pytest.raises(PathRefused) as exc:
        readable("bag", str(bag), [str(root)], folder=True)
    assert str(exc.value) == (f"bag: {str(bag)!r} holds 'out', a link out of the readable "
                              "folders")


def test_a_bag_folder_of_at_most_max_bag_entries(tmp_path):
    bag = tmp_path / "many"
    bag.mkdir()
    for k in range(MAX_BAG_ENTRIES):
        (bag / f"f{k}").touch()
    assert readable("bag", str(bag), [str(tmp_path)], folder=True) == str(bag)
    (bag / "one_more").touch()
    with pytest.raises(PathRefused) as exc:
        readable("bag", str(bag), [str(tmp_path)], folder=True)
    assert str(exc.value) == f"bag: {str(bag)!r} holds more than {MAX_BAG_ENTRIES} entries"


def test_a_refused_name_to_write_names_its_field(tmp_path):
    with pytest.raises(PathRefused, match="^output: 'a\\\\x00b' holds a NUL"):
        writable("output", "a\x00b", str(tmp_path))


def test_an_answer_never_quotes_a_bags_metadata_whatever_comes_first(bags, tmp_path):
    root, bag = bags
    text = "failed: topic_name: /secret_robot_topic is not recorded"
    for files in ([str(bag)], [None, "", str(bag)], ["/etc/hostname", str(bag)],
                  [str(root / "missing.csv"), str(bag)]):
        out = scrub(text, files, [str(root)])
        assert out == "failed: <text of metadata.yaml> is not recorded", files


def test_scrub_takes_the_longest_cell_first_and_every_form(tmp_path):
    f = tmp_path / "p.csv"
    f.write_bytes(b"name,joint_alpha_offset;'quoted_cell'\n"
                  b"joint_alpha_offset extra words\n"
                  b"abcdefg1\nabcdefg\n\xff\xfe,broken_bytes_here\n"
                  b"win_path C:\\tmp\\secret_x\n")
    keep = ["a_joint_name"]
    text = ("joint_alpha_offset extra words / joint_alpha_offset / quoted_cell / abcdefg1 / "
            "abcdefg / broken_bytes_here / win_path C:\\\\tmp\\\\secret_x / a_joint_name")
    out = scrub(text, [str(f)], [str(tmp_path)], keep=keep)
    m = "<text of p.csv>"
    assert out.split(" / ") == [m, m, m, m, "abcdefg", m, m, "a_joint_name"]
    assert SCRUB_MIN == 8
    g = tmp_path / "keep.csv"
    g.write_text(f"{g}\nsomething_else\n")                       # its own path: kept
    assert scrub(f"read {g}: something_else", [str(g)], [str(tmp_path)]) == \
        f"read {g}: <text of keep.csv>"


def test_request_paths_are_every_string_of_a_request():
    goal = RunExperiment.Goal(postures_file="/data/p.csv", trajectory_file="",
                              bag_path="/bags/x")
    paths = request_paths(goal)
    assert "/data/p.csv" in paths and "/bags/x" in paths and "" in paths
    assert all(isinstance(p, str) for p in paths)
    assert {"/b/one", "/b/two"} <= set(request_paths(Calibrate.Goal(bags=["/b/one", "/b/two"])))
