"""The README's "Using the library from Python" example runs as written: it identifies a
simulated 7-joint arm to within 1.10 x the noise floor on held-out data and calibrates it to
within 1.15 x the floor, using only the public API on arrays made in memory."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_readme_example_runs_as_written(capsys):
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    block = re.search(r"<!-- readme-example:begin -->\n```python\n(.*?)```\n"
                      r"<!-- readme-example:end -->", text, re.S)
    assert block, "README has no marked example"
    exec(compile(block.group(1), "README.md example", "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "held-out torque RMSE / noise floor" in out and "calibrated" in out
