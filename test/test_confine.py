"""Paths from the graph confined to a node's folders (figaroh_ros/io/confine.py): every
escape is refused by name, before the path is opened or even looked at, and answers never
quote the files a request named."""
import os
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from figaroh_ros.io.confine import (
    MAX_NAME_BYTES, MAX_PATH_BYTES, PathRefused, check_name, read_roots, readable, scrub,
    writable
)


@pytest.fixture()
def tree(tmp_path):
    """roots ``data`` and ``bags`` with a file, a bag folder, links in and out; ``secret``
    outside them."""
    data, bags, secret = tmp_path / "data", tmp_path / "bags", tmp_path / "secret"
    for d in (data, bags, secret):
        d.mkdir()
    (data / "postures.csv").write_text("shoulder_pan_joint\n0.1\n")
    (secret / "shadow").write_text("root:*:20228:0:99999:7:::\n")
    (data / "out_link").symlink_to(secret / "shadow")
    (data / "in_link").symlink_to(data / "postures.csv")
    (data / "secret_dir").symlink_to(secret)
    bag = bags / "exp"
    bag.mkdir()
    (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    (bag / "exp_0.mcap").write_bytes(b"x" * 100)
    os.mkfifo(data / "fifo")
    return tmp_path, [str(data), str(bags)]


def test_a_file_inside_a_root_is_read(tree):
    top, roots = tree
    assert readable("postures_file", str(top / "data" / "postures.csv"), roots) == \
        str(top / "data" / "postures.csv")
    assert readable("postures_file", str(top / "data" / "in_link"), roots)
    assert readable("bags", str(top / "bags" / "exp"), roots, folder=True, max_bytes=200)


@pytest.mark.parametrize("name, words", [
    ("secret/shadow", "escapes the folders this node reads from"),
    ("data/../secret/shadow", "escapes"),
    ("data/out_link", "escapes"),                 # a link out of the root
    ("data/secret_dir/shadow", "escapes"),        # a folder link out of the root
    ("data/fifo", "a device, FIFO or socket"),
    ("data/missing.csv", "not found"),
    ("data", "a folder, expected a regular file"),
])
def test_an_escape_or_a_special_file_is_refused_by_field_and_root(tree, name, words):
    top, roots = tree
    with pytest.raises(PathRefused) as e:
        readable("postures_file", str(top / name), roots)
    assert str(e.value).startswith("postures_file: ") and words in str(e.value), e.value
    assert "root:*" not in str(e.value)
    if "escapes" in words:
        assert all(os.path.realpath(r) in str(e.value) for r in roots)


@pytest.mark.parametrize("path", ["/etc/passwd", "/dev/zero", "/proc/self/environ",
                                  "/sys/kernel/notes"])
def test_system_files_are_refused_even_under_a_root_of_slash(path):
    with pytest.raises(PathRefused, match="escapes"):
        readable("config", path, ["/"] if not path.startswith("/etc") else ["/tmp"])


def test_the_outside_is_refused_before_its_existence_is_told(tree):
    top, roots = tree
    said = set()
    for name in ("secret/shadow", "secret/nothing_here"):
        with pytest.raises(PathRefused) as e:
            readable("config", str(top / name), roots)
        said.add(str(e.value).replace(name, "X"))
    assert len(said) == 1, said


def test_size_limits_of_files_and_bag_folders(tree):
    top, roots = tree
    with pytest.raises(PathRefused, match="holds 23 bytes, more than the 10"):
        readable("postures_file", str(top / "data" / "postures.csv"), roots, max_bytes=10)
    with pytest.raises(PathRefused, match="holds 132 bytes"):
        readable("bags", str(top / "bags" / "exp"), roots, folder=True, max_bytes=131)
    os.symlink(top / "secret" / "shadow", top / "bags" / "exp" / "exp_1.mcap")
    with pytest.raises(PathRefused, match="a link out"):
        readable("bags", str(top / "bags" / "exp"), roots, folder=True)


def test_writing_stays_under_the_write_root(tree):
    top, _ = tree
    bags = str(top / "bags")
    assert writable("bag_path", str(top / "bags" / "new"), bags) == str(top / "bags" / "new")
    assert writable("out", "planned", bags, base=bags) == str(top / "bags" / "planned")
    os.symlink(top / "secret", top / "bags" / "escape")
    for path, words in ((str(top / "elsewhere"), "escapes the folders this node writes"),
                        (str(top / "bags" / ".." / "x"), "escapes"),
                        ("../../x", "escapes"),
                        (str(top / "bags" / "escape" / "new"), "escapes"),
                        (str(top / "bags" / "exp"), "exists already"),
                        (bags, "itself")):
        with pytest.raises(PathRefused, match=words):
            writable("bag_path", path, bags, base=bags)
    assert not os.path.exists(top / "elsewhere") and not os.path.exists(top / "x")


def test_names_too_long_or_not_text_are_refused():
    with pytest.raises(PathRefused, match=f"at most {MAX_PATH_BYTES}"):
        check_name("bag_path", "/a" * MAX_PATH_BYTES)
    with pytest.raises(PathRefused, match=f"at most {MAX_NAME_BYTES}"):
        check_name("bag_path", "/tmp/" + "é" * 200)
    for bad, words in (("/tmp/\udcff", "not UTF-8"), ("/tmp/a\ufffdc", "was not UTF-8"), ("/tmp/a\nb", "control"),
                       ("/tmp/a\x00b", "control"), ("", "expected a path"),
                       (None, "expected a path")):
        with pytest.raises(PathRefused, match=words):
            check_name("bag_path", bad)
    long_name = "/x" * 5000
    with pytest.raises(PathRefused) as e:
        check_name("bag_path", long_name)
    assert len(str(e.value)) < 200


def test_default_read_roots_are_the_bag_and_output_folders_and_the_shared_config():
    roots = read_roots("bags", "cal", "")
    assert roots[:2] == [os.path.abspath("bags"), os.path.abspath("cal")]
    assert roots[2].endswith("config") and os.path.isfile(
        os.path.join(roots[2], "sim_ur10.yaml"))
    assert read_roots("b", "c", f"/x{os.pathsep}/y")[-2:] == ["/x", "/y"]
    assert any(r.endswith("example-robot-data/robots") for r in roots)


def test_an_answer_never_quotes_the_files_of_the_request(tree):
    top, roots = tree
    shadow = top / "data" / "shadow_copy"
    shadow.write_text("root:*:20228:0:99999:7:::\nsecret,cell_value_42,0.5\n")
    message = (f"postures file {shadow}: no column names a robot joint (columns "
               "['root:*:20228:0:99999:7:::'], cell 'cell_value_42', joint shoulder_pan_joint)")
    out = scrub(message, [str(shadow)], roots, keep={"shoulder_pan_joint"})
    assert "root:*" not in out and "cell_value_42" not in out, out
    assert str(shadow) in out and "shoulder_pan_joint" in out
    assert "<text of shadow_copy>" in out
    # a config's bare keys are words of the answers, kept; its lines are not
    config = top / "data" / "strict.yaml"
    config.write_text("acceptance:\n  position_rmse_mm: 0.0001\nsecret_key: s3cr3t-value\n")
    said = ("published despite FAILED acceptance: acceptance_position_rmse; "
            "'secret_key: s3cr3t-value'")
    assert scrub(said, [str(config)], roots) == \
        "published despite FAILED acceptance: acceptance_position_rmse; " \
        "'<text of strict.yaml>'"
    # a file outside the roots, a FIFO: never opened to scrub
    assert scrub("x", [str(top / "secret" / "shadow"), str(top / "data" / "fifo")],
                 roots) == "x"


PIECES = st.sampled_from(["..", ".", "data", "bags", "secret", "out_link", "secret_dir",
                          "exp", "fifo", "postures.csv", "new", "", "/"])


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(PIECES, min_size=1, max_size=6), absolute=st.booleans())
def test_whatever_the_path_reads_and_writes_stay_inside(tree, parts, absolute):
    """Any path made of the tree's names, ``..`` and links: what readable accepts resolves
    inside a root and is a regular file; what writable accepts resolves inside the write
    root and does not exist."""
    top, roots = tree
    path = os.path.join(str(top) if absolute else "", *parts)
    if not path:
        return
    try:
        got = readable("f", path if absolute else os.path.join(str(top), path), roots)
        real = os.path.realpath(got)
        assert any(os.path.commonpath([real, os.path.realpath(r)]) == os.path.realpath(r)
                   for r in roots) and os.path.isfile(real)
        assert "secret" not in real
    except PathRefused as exc:
        assert str(exc).startswith("f: ")
    bags = roots[1]
    try:
        got = writable("w", path, bags, base=bags)
        real = os.path.realpath(got)
        assert real.startswith(os.path.realpath(bags) + "/") and not os.path.lexists(got)
    except PathRefused as exc:
        assert str(exc).startswith("w: ")


@settings(max_examples=200, deadline=None)
@given(name=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"])
                    | st.sampled_from(["\udcff", "\x00", "/", "."] + list(string.printable)),
                    max_size=300))
def test_any_name_is_checked_without_error_or_echo_of_more_than_a_prefix(name):
    try:
        assert check_name("bag_path", name) == name
        assert name and "\x00" not in name and len(name.encode()) <= MAX_PATH_BYTES
    except PathRefused as exc:
        assert str(exc).startswith("bag_path: ") and len(str(exc)) < 300
