"""The rules of the path confinement (``io/confine.py``) at their bounds: what a bag
folder may hold (sub-folders yes; a FIFO, a link out of the roots or more than
``MAX_BAG_ENTRIES`` entries no), the field a refusal names, and what an answer never
quotes of a request's files (a bag's ``metadata.yaml``, short and quoted cells, bytes that
are not UTF-8), whatever other paths come before them."""
import os

import pytest

from figaroh_ros.action import Calibrate, RunExperiment
from figaroh_ros.io.confine import (
    MAX_BAG_ENTRIES, MAX_NAME_BYTES, MAX_PATH_BYTES, SCRUB_BYTES, SCRUB_MIN, SHOWN,
    PathRefused, check_name, read_roots, readable, request_paths, scrub, shown, writable
)
from figaroh_ros.io.share import share_directory
from figaroh_ros.srv import RecorderControl, RestoreDescription


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


def test_every_refusal_repeats_the_name_it_refuses(tmp_path):
    """Each refusal says the field, the refused name as given (its repr) and, for an
    escape, the resolved roots; ``missing`` only when nothing is there inside a root."""
    data, other = tmp_path / "data", tmp_path / "other"
    data.mkdir()
    other.mkdir()
    f = data / "p.csv"
    f.write_text("shoulder_pan_joint\n0.1\n")
    roots = [str(data), str(other)]

    def refusal(call, *args, **kw):
        with pytest.raises(PathRefused) as exc:
            call(*args, **kw)
        return str(exc.value), exc.value.missing

    outside = str(tmp_path / "x.csv")
    assert refusal(readable, "config", outside, roots) == (
        f"config: {outside!r} escapes the folders this node reads from ({data}, {other})",
        False)
    assert refusal(readable, "config", outside, []) == (
        f"config: {outside!r} escapes the folders this node reads from (no folder)", False)
    gone = str(data / "gone.csv")
    assert refusal(readable, "config", gone, roots) == (f"config: {gone!r} not found", True)
    assert refusal(readable, "bag", str(f), roots, folder=True) == (
        f"bag: {str(f)!r} is a regular file, expected a folder", False)
    assert refusal(readable, "config", str(data), roots) == (
        f"config: {str(data)!r} is a folder, expected a regular file", False)
    assert refusal(readable, "config", str(f), roots, max_bytes=3) == (
        f"config: {str(f)!r} holds 23 bytes, more than the 3 a request may make this node "
        "read", False)
    assert refusal(readable, "config", "a\x00b", roots) == (
        "config: 'a\\x00b' holds a NUL or control character", False)
    assert refusal(writable, "bag_path", str(data), str(data)) == (
        f"bag_path: {str(data)!r} is the folder {data} itself", False)
    assert refusal(writable, "bag_path", str(f), str(data)) == (
        f"bag_path: {str(f)!r} exists already", False)
    assert refusal(check_name, "bag_path", "") == ("bag_path: expected a path, got ''", False)
    assert refusal(check_name, "bag_path", 42) == ("bag_path: expected a path, got 42", False)
    assert refusal(check_name, "bag_path", "/tmp/\udcff") == (
        "bag_path: '/tmp/\\udcff' is not UTF-8", False)
    assert refusal(check_name, "bag_path", "/tmp/a\ufffd") == (
        "bag_path: '/tmp/a\ufffd' was not UTF-8 (U+FFFD in its place)", False)
    assert PathRefused("any").missing is False


def test_a_refused_name_is_cut_after_shown_characters():
    assert SHOWN == 160
    fits = "/" + "a" * (SHOWN - 3)                   # its repr: SHOWN characters
    assert shown(fits) == repr(fits)
    over = fits + "b"
    assert shown(over) == repr(over)[:SHOWN] + f"... ({SHOWN + 1} characters)"
    with pytest.raises(PathRefused) as exc:
        check_name("bag_path", "/" + "a" * 300 + "\n")
    assert str(exc.value) == ("bag_path: " + repr("/" + "a" * 300 + "\n")[:SHOWN]
                              + "... (305 characters) holds a NUL or control character")


def test_name_checks_at_their_bounds():
    """At most ``MAX_PATH_BYTES`` in all, ``MAX_NAME_BYTES`` a component (counted between
    slashes, spaces and all), control characters (below 32 and DEL) refused, a space or
    any other character kept."""
    at_path_bound = "/a" * (MAX_PATH_BYTES // 2)
    assert check_name("f", at_path_bound) == at_path_bound
    with pytest.raises(PathRefused, match=f"^f: a name of {MAX_PATH_BYTES + 1} bytes"):
        check_name("f", at_path_bound + "a")
    component = "c" * MAX_NAME_BYTES
    long_path = f"/data/{component}/{component}/a file with spaces"
    assert check_name("f", long_path) == long_path
    with pytest.raises(PathRefused) as exc:
        check_name("f", f"/data/{component}c/x")
    assert str(exc.value) == f"f: a path component of {MAX_NAME_BYTES + 1} bytes (at most " \
                             f"{MAX_NAME_BYTES})"
    for ok in ("/tmp/a b", "/tmp/a!b", "/tmp/a\x80b", "/tmp/a~b"):
        assert check_name("f", ok) == ok
    for bad in ("/tmp/a\x1fb", "/tmp/a\x7fb", "/tmp/\tb"):
        with pytest.raises(PathRefused, match="holds a NUL or control character"):
            check_name("f", bad)


def test_read_roots_hold_the_config_folder_of_the_share_wherever_it_runs(tmp_path,
                                                                          monkeypatch):
    share = share_directory()
    assert share is not None
    monkeypatch.chdir(tmp_path)             # the share's config, not one of the cwd
    roots = read_roots("bags", "cal", "")
    assert roots[2] == os.path.join(os.path.abspath(share), "config")
    assert not any(r == str(tmp_path / "config") for r in roots)


def test_request_paths_keep_every_string_whatever_the_order_of_the_fields():
    answer = RestoreDescription.Response(message="restored", model_hash="abc",
                                         history_hashes=["h1", "h2"],
                                         history_results=["/out/a/result.yaml"])
    assert request_paths(answer) == ["restored", "abc", "h1", "h2", "/out/a/result.yaml"]
    control = RecorderControl.Response(message="m", bag_path="/bags/b", topics=["/t"])
    assert request_paths(control) == ["m", "/bags/b", "/t"]


def test_scrub_replaces_the_longest_pieces_first_whatever_their_spelling(tmp_path):
    """A line that holds a shorter cell of the file goes whole, however the two sort as
    words; a cell ending in an ``X`` goes whole; an entry that is no name is skipped."""
    f = tmp_path / "s.csv"
    f.write_text("aaaa_secret_head zzzzzzzz_tail\nzzzzzzzz_tail\nJOINT_INDEX,1\n")
    m = "<text of s.csv>"
    text = "line 'aaaa_secret_head zzzzzzzz_tail', cell zzzzzzzz_tail, key JOINT_INDEX"
    assert scrub(text, [str(f)], [str(tmp_path)]) == f"line '{m}', cell {m}, key {m}"
    assert scrub(text, [None, "", 42, ["a"], str(f)], [str(tmp_path)]) == \
        f"line '{m}', cell {m}, key {m}"


def test_scrub_reads_at_most_scrub_bytes_of_a_file(tmp_path):
    """The scrubbing of an answer reads a bounded part of each file: the lines in its
    first ``SCRUB_BYTES`` are replaced, one after them is not looked at."""
    f = tmp_path / "big.csv"
    head = b"early_secret_line\n"
    with open(f, "wb") as out:
        out.write(head)
        out.write(b"0\n" * ((SCRUB_BYTES - len(head)) // 2 + 1))
        out.write(b"late_secret_line\n")
    assert f.stat().st_size > SCRUB_BYTES
    assert scrub("early_secret_line late_secret_line", [str(f)], [str(tmp_path)]) == \
        "<text of big.csv> late_secret_line"


def test_a_fifo_to_read_is_refused_as_such(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(PathRefused) as exc:
        readable("postures_file", str(fifo), [str(tmp_path)])
    assert str(exc.value) == (f"postures_file: {str(fifo)!r} is a device, FIFO or socket, "
                              "expected a regular file")


def test_without_a_share_folder_the_read_roots_hold_no_config_folder(monkeypatch):
    """Where the package's share folder is not found (neither a checkout nor an ament
    install), a node reads from its bag and output folders, the robot models and the data
    roots only."""
    import figaroh_ros.io.confine as confine
    with_share = read_roots("bags", "cal", "/x")
    monkeypatch.setattr(confine, "share_directory", lambda: None)
    roots = read_roots("bags", "cal", "/x")
    assert roots == [r for r in with_share if not r.endswith(os.sep + "config")]
    assert roots[:2] == [os.path.abspath("bags"), os.path.abspath("cal")] and \
        roots[-1] == "/x"
