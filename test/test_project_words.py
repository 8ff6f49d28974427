"""The project speaks only of the product: no line of the documentation, the code, its
comments and docstrings, the tests, the benchmarks or the configs tells the project's
development history.  A reader of this tree cannot resolve a development round, a CI run,
a session or an issue of this project by its number, nor a seed document by its index: why
code is the way it is belongs beside it as a fact about the code, papers are cited by their
authors and year, another project's issue as ``owner/repo#N``.

Markers (``HISTORY`` below; each test of this module names every offending file:line):

* a numbered development session or round, a CI run by its number;
* a run of the suite called red or green;
* an issue of this project by its number (``owner/repo#N`` is another project's: allowed);
* a seed document by its index;
* a narrative of what the code did before: a sentence opening "Before," or "Before:", a
  parenthesis "(before: ...)" giving a past verb or a duration (a measurement before and
  after a calibration, "(before: 10.8 mm)", is product output and allowed);
* a dated timing log: an ISO date on a line that also gives a duration or a time of day.

ISO dates alone are not flagged: in this tree they are data provenance (the recordings'
file names, the retrieval date of a vendored file, an upstream commit's date, the stamps of
test fixtures) or the release dates of the changelog, all facts about the product.  A date
next to a duration or a time of day is how a timing log reads, and is flagged.

The patterns are written so that this file's own text does not match them (an alternation
splits each word), and the examples of ``test_the_markers_catch_history`` are joined at run
time: the module is scanned like every other file, without an exception.
"""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the trees whose every text line is checked, one test each
TREES = ("README.md", "docs", "figaroh_ros", "test", "bench", "launch", "config", "tools",
         "msg", "srv", "action", "scripts")
BUILD_FILES = ("Makefile", ".ci/run", "CMakeLists.txt", "setup.py", "setup.cfg",
               "package.xml")

_N = r"#?\d+"
HISTORY = {
    "a development session by its number": re.compile(r"\bses(?:sion)s? " + _N + r"\b", re.I),
    "a development round by its number": re.compile(r"\bro(?:und)s? " + _N + r"\b", re.I),
    "a CI run by its number": re.compile(
        r"\bC(?:I)(?: run)? ?" + _N + r"\b|\bC(?:I) runs? " + _N + r"\b"),
    "a run called red or green": re.compile(r"\b(?:r(?:ed)|g(?:reen)) runs?\b", re.I),
    "an issue of this project by its number": re.compile(
        r"\biss(?:ue)s? " + _N + r"\b|\b(?:PR|pull request) " + _N + r"\b", re.I),
    "a bare issue number (another project's is owner/repo#N)": re.compile(
        r"(?:^|(?<=[\s(\[,;]))#\d{1,5}(?=$|[\s).,;:\]'\"])"),
    "a seed document by its index": re.compile(r"\bse(?:ed)s? 0\d\d\b", re.I),
    "a narrative of what the code did before": re.compile(
        r"\bB(?:efore)[:,] |\(b(?:efore): (?:\w+ed\b|[^)]*?\d ?(?:s|min)\b)"),
}
_DATE = re.compile(r"(?<![\w-])20\d\d-[01]\d-[0-3]\d(?![\w-])")
_TIMING = re.compile(r"\b\d+(?:\.\d+)? ?(?:s|ms|min|h|CPU-s)\b|\b[0-2]\d:[0-5]\d\b")


def markers(line: str) -> list[str]:
    """What history ``line`` tells: the descriptions of the markers it matches."""
    found = [what for what, pattern in HISTORY.items() if pattern.search(line)]
    if _DATE.search(line) and _TIMING.search(_DATE.sub("", line)):
        found.append("a dated timing log (a date beside a duration or a time of day)")
    return found


def _files(tree: str) -> list[str]:
    """The tree's files that git tracks or would track (ignored ones left out)."""
    path = os.path.join(ROOT, tree)
    if not os.path.exists(path):
        return []
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "--", tree],
                             cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return sorted(set(out.split("\n")) - {""})
    except (OSError, subprocess.CalledProcessError):     # not a git checkout
        if os.path.isfile(path):
            return [tree]
        return sorted(os.path.relpath(os.path.join(d, f), ROOT)
                      for d, dirs, files in os.walk(path)
                      if "__pycache__" not in d for f in files)


def offending_lines(relpaths) -> list[str]:
    """``file:line: markers: text`` for every line of the text files that tells history."""
    bad = []
    for rel in relpaths:
        try:
            with open(os.path.join(ROOT, rel), "rb") as f:
                raw = f.read()
        except FileNotFoundError:          # listed by git, deleted in the work tree
            continue
        if b"\0" in raw:
            continue                       # binary
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for no, line in enumerate(text.splitlines(), 1):
            found = markers(line)
            if found:
                bad.append(f"{rel}:{no}: {'; '.join(found)}: {line.strip()[:160]}")
    return bad


@pytest.mark.parametrize("tree", TREES + ("build files",))
def test_no_development_history(tree):
    files = _files(tree) if tree != "build files" else \
        [p for p in BUILD_FILES if os.path.exists(os.path.join(ROOT, p))]
    bad = offending_lines(files)
    if bad:
        pytest.fail(f"{len(bad)} line(s) tell the project's history:\n" + "\n".join(bad),
                    pytrace=False)


def _j(*parts: str) -> str:
    return "".join(parts)


@pytest.mark.parametrize("line", [
    _j("locked (ses", "sion 19), the code of a goal"),
    _j("(Ses", "sion 18 saw simulators stop)"),
    _j("after ro", "und 3 the suite took 5 min"),
    _j("a frame was once 0.8 s late: Jazzy, C", "I43)"),
    _j("killed (C", "I 67)"),
    _j("the cause of r", "ed runs: README"),
    _j("two g", "reen runs in a row"),
    _j("The publication gate (is", "sue 16 items 3 and 6)"),
    _j("as reported in Is", "sue #", "15"),
    _j("fixed by PR ", "#42"),
    _j("the race (ros2/rclpy#878, ", "#1123)"),
    _j("see (", "#12)"),
    _j("the drive model (se", "ed 000 Eq. 3)"),
    _j("   Be", "fore, a publisher alone let the start go on"),
    _j("| 20", "26-11-30 | make bench | 41.2 s |"),
    _j("20", "26-11-30: the suite in 5 min 54 s"),
    _j("### `make bench` output, 20", "26-11-28, 05:47-05:59 (this machine)"),
    _j("| ur10 | 9.5 s (b", "efore: 348 s, 150 iterations) |"),
    _j("cover it 10 s after its end (b", "efore: waited for ever)"),
    _j("- B", "efore: a goal accepted after its experiment ended"),
])
def test_the_markers_catch_history(line):
    assert markers(line), line


@pytest.mark.parametrize("line", [
    "in between (ros2/rclpy#878, ros2/rclpy#1123): Jazzy drops it",
    "resample_hz: 1000.0   # stamps jitter 0.7-8.8 ms around 1 ms",
    "path: ${FIGAROH_DATA}/tiago/mocap/qualisys_2021-11-30_static_postures.csv",
    "#    retrieved: 2020-06-16, last modified: 2020-06-09",
    "- Commit: `2221ec0f720fb1af99339eb891639b499b62f1da` (2024-10-14)",
    "START = 1.7e9   # 2023-11-14, the first day's first stamp (s)",
    "## 0.4.0 (2026-12-01)",
    "x = np.round(q, 3)  # rounds to 3 decimals",
    "position RMSE before: 10.8 mm, after: 0.03 mm",
    "tool position error (before: 10.8 mm, after: 0.03 mm)",
    "Before anything moves, the pre-flight checks the graph.",
    "the dynamic session predicts torques at the noise floor",
    "the issue a user meets most: a stalled publisher",
    "the seed of the hidden placement errors (truth.seed: 7)",
    "style fill:#333,stroke:#111",
    "| `robot.gravity` | list of 3 numbers | none | m/s^2 (Tröbinger et al.) |",
    "two rounds of three readers killed after 4 s",
    "a CIE 1931 colour; CIFAR 10; the CI job runs `make test`",
])
def test_the_markers_leave_product_text_alone(line):
    assert not markers(line), (line, markers(line))
