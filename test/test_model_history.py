"""The published-model log of the calibration node (io/model_history.py): exact texts kept
by hash, the log surviving a restart, previous / nominal / prefix lookups, and bad hashes
or damaged files refused by name."""
import hashlib

import pytest
from hypothesis import given, settings, strategies as st

from figaroh_ros.errors import DataError
from figaroh_ros.io.model_history import ModelHistory, model_hash

NOMINAL = '<robot name="r">\r\n  <link name="a"/>\n</robot>'        # no final newline
CALIBRATED = '<robot name="r"><!-- calibrated by figaroh_ros --><link name="a"/></robot>\n'


def test_texts_kept_exactly_and_the_log_survives_a_restart(tmp_path):
    h = ModelHistory(str(tmp_path))
    assert h.current is None and h.nominal is None and h.previous() is None
    n = h.add(NOMINAL, "nominal")
    c = h.add(CALIBRATED, "calibrated", str(tmp_path / "run" / "result.yaml"))
    assert n.sha256 == hashlib.sha256(NOMINAL.encode()).hexdigest()
    again = ModelHistory(str(tmp_path))                          # a restarted node
    assert [e.sha256 for e in again.entries] == [n.sha256, c.sha256]
    assert again.text(again.nominal) == NOMINAL                 # byte for byte
    assert again.previous().sha256 == n.sha256
    assert again.entries[1].result.endswith("result.yaml") and again.entries[0].result == ""
    again.add(NOMINAL, "restored")                  # the first model: nothing before it
    assert again.previous() is None and again.live_index() == 0
    assert len([f for f in (tmp_path / "models").iterdir() if f.suffix == ".urdf"]) == 2


def test_prefixes_and_refusals(tmp_path):
    h = ModelHistory(str(tmp_path))
    c = h.add(CALIBRATED, "calibrated")
    assert h.find(c.sha256[:8].upper()).sha256 == c.sha256
    for bad, words in (("1234567", "at least 8"), ("zzzzzzzzzz", "hex digits"),
                       ("0" * 64, "no kept model")):
        with pytest.raises(DataError, match=words):
            h.find(bad)
    with open(c.path, "a") as f:                                 # a kept file altered
        f.write(" ")
    with pytest.raises(DataError, match="does not match its hash"):
        h.text(c)
    (tmp_path / "models" / "history.yaml").write_bytes(b"\xff\xfe- [")
    with pytest.raises(DataError, match="not a model history"):
        ModelHistory(str(tmp_path))


@settings(max_examples=30, deadline=None)
@given(texts=st.lists(st.text(min_size=1, max_size=200), min_size=1, max_size=6))
def test_any_texts_round_trip(tmp_path_factory, texts):
    h = ModelHistory(str(tmp_path_factory.mktemp("h")))
    for t in texts:
        h.add(t, "calibrated")
    for e, t in zip(ModelHistory(h.folder.removesuffix("/models")).entries, texts):
        assert e.sha256 == model_hash(t)
        assert h.text(e) == t


def test_previous_steps_back_one_model_at_a_time(tmp_path):
    """Nominal A, then B built on A, C on B: restoring ``previous`` gives B, then A, then
    nothing (never back to C); a model calibrated after restoring A is built on A; a hash
    picks any model, and ``previous`` then steps back from it."""
    h = ModelHistory(str(tmp_path))
    a, b, c = (h.add(f"<robot name='{n}'/>", note)
               for n, note in (("a", "nominal"), ("b", "calibrated"), ("c", "calibrated")))
    assert h.previous().sha256 == b.sha256
    h.add(h.text(b), "restored")
    assert h.previous().sha256 == a.sha256
    h.add(h.text(a), "restored")
    assert h.previous() is None and h.entries[h.live_index()].sha256 == a.sha256
    d = h.add("<robot name='d'/>", "calibrated")                  # built on the restored A
    assert h.previous().sha256 == a.sha256
    h.add(h.text(h.find(c.sha256[:10])), "restored")               # any model by its hash
    again = ModelHistory(str(tmp_path))                            # a restarted node
    assert again.entries[again.live_index()].sha256 == c.sha256
    assert again.previous().sha256 == b.sha256 and d.sha256 != c.sha256
