"""The README's library example runs as written: it identifies a simulated 7-joint arm
(hidden inertias and friction, 0.5 N.m of torque noise) from arrays made in memory, using
only the public API, and predicts a held-out recording to within 1.10 x the noise floor on
every joint; the output the README shows is what it prints."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme() -> str:
    return open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()


def test_readme_example_runs_as_written(capsys):
    text = _readme()
    block = re.search(r"<!-- readme-example:begin -->\n```python\n(.*?)```\n"
                      r"<!-- readme-example:end -->\n\n```console\n(.*?)\n```", text, re.S)
    assert block, "README has no marked example followed by its output"
    exec(compile(block.group(1), "README.md example", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out.strip()
    shown = block.group(2).strip()
    head, ratios = out.split(":", 1)[0], out.rsplit("[", 1)[1].rstrip("]").split()
    assert head == shown.split(":", 1)[0], (out, shown)
    assert head.startswith("69 base parameters"), out
    assert len(ratios) == 7 and all(1.0 <= float(r) <= 1.10 for r in ratios), out
    # the ratios the README shows are the ones printed, to the rounding of a BLAS
    want = [float(r) for r in shown.rsplit("[", 1)[1].rstrip("]").split()]
    assert all(abs(float(r) - w) <= 0.002 for r, w in zip(ratios, want)), (out, shown)
