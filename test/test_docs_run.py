"""The documentation runs: every ```bash and ```python block of README.md and docs/**.md is
run, page by page, as a reader would type it (``docs/testing.md`` describes the convention).

* A page's blocks run in order in a throw-away copy of the checkout (its tracked files
  and the new ones git does not ignore; ``.venv`` and ``../shared`` linked), cwd its
  root, so that what a command writes never lands in the checkout. ``.venv/bin`` comes
  first on PATH, ``FIGAROH_DATA`` is set, the page has a ROS domain of its own
  (``conftest.ros_graph_environment``) and ROS logs go to the copy.
* A bash block starts where the previous one ended: its directory and its exported
  variables carry over, as in one terminal.  Bash runs it with ``set -eo pipefail``.
* ``ros2 launch figaroh_ros NAME ARGS`` runs as ``figaroh-ros launch launch/NAME ARGS``
  (the package's launch runner: no ROS install here).
* The HTML comment ``<!-- doc-test: ... -->`` on the line before a block (blank lines
  between allowed) changes how it runs: ``robot`` (needs a robot or a ROS install: not
  run), ``skip REASON`` (not run, for the reason given), ``background`` (started in the
  background, kept for the rest of the page).  ``<!-- doc-test: page-setup COMMAND -->``
  before a page's first block starts COMMAND in the background first.  Background
  processes are stopped at the page's end (SIGTERM to their process group, SIGKILL after
  20 s, then every process that carries the page's marker in its environment); one that
  ended by itself with an error fails the page.
* Before anything runs, a page fails on a directive it does not know, a ``skip`` without a
  reason, a bash block whose command does not exist (``ros2``, ``colcon`` and ``rosdep``
  among them: such a block is for a robot), or a run block that changes the machine or
  runs the suite (``make``, ``make setup|test|test-graph|demo|bench|clean``, ``pip
  install``, ``apt-get``, ``sudo``): those are marked ``skip``.
* Each block has ``BLOCK_TIMEOUT`` s (``FIGAROH_DOC_BLOCK_TIMEOUT``).

One test per page, its id the page's path. A page that starts ROS nodes (a background
block, a page-setup, ``figaroh-ros launch|call|demo``, ``ros2``, a node made with
``rclpy``) runs in one of the xdist groups of the graph tests (``ros_graph``,
``ros_graph_2``: one graph at a time in each), the pages shared between them; the others
run outside them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK_TIMEOUT = float(os.environ.get("FIGAROH_DOC_BLOCK_TIMEOUT", "150"))
STOP_TIMEOUT = 20.0
RUN_LANGS = ("bash", "python")
MODES = ("robot", "skip", "background", "page-setup")
MARKER = "FIGAROH_DOC_RUN"

DIRECTIVE = re.compile(r"^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\s`]*)[^`]*$")
ROS2_LAUNCH = re.compile(r"\bros2 launch figaroh_ros (\S+)")
USES_ROS = re.compile(r"\bros2\b|\bfigaroh-ros (?:launch|call|demo)\b"
                      r"|\brclpy\.(?:init|create_node|spin)|figaroh_ros\.cli (?:launch|call|demo)\b")
# make targets a page may not run (the suite itself, set-up that installs, long runs)
MAKE_REFUSED = {"setup", "test", "test-graph", "demo", "bench", "clean"}
MAKE_IN_PYTHON = re.compile(r"\bmake(?:\s+-\S+)*\s+(%s)\b|[\"']make[\"']\s*,\s*"
                            r"(?:[\"']-\S+[\"']\s*,\s*)*[\"'](%s)[\"']"
                            % ("|".join(MAKE_REFUSED), "|".join(MAKE_REFUSED)))
FOR_A_ROBOT = {"ros2": "the ros2 CLI", "colcon": "colcon", "rosdep": "rosdep"}


@dataclasses.dataclass
class Block:
    line: int                  # the opening fence's line (1-based)
    lang: str
    text: str
    mode: str = "run"          # run, robot, skip, background
    reason: str = ""


@dataclasses.dataclass
class Page:
    path: str
    blocks: list
    setup: list                # page-setup commands, with their lines
    errors: list

    @property
    def runnable(self) -> list:
        return [b for b in self.blocks if b.lang in RUN_LANGS and b.mode in ("run", "background")]

    @property
    def uses_ros(self) -> bool:
        return bool(self.setup) or any(
            b.mode == "background" or USES_ROS.search(b.text) for b in self.runnable)


def parse_page(text: str, path: str = "page.md") -> Page:
    """The fenced blocks of a Markdown page with their directives, and what is wrong with
    the directives (``Page.errors``: ``path:line: what``)."""
    blocks, setup, errors = [], [], []
    pending = None                       # (mode, reason, line) waiting for its block
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line, no = lines[i], i + 1
        d = DIRECTIVE.match(line)
        m = FENCE.match(line)
        if d:
            words = d.group(1).split(None, 1)
            mode = words[0] if words else ""
            rest = words[1].strip() if len(words) > 1 else ""
            if mode not in MODES:
                errors.append(f"{path}:{no}: unknown doc-test directive {d.group(1)!r} "
                              f"(known: {', '.join(MODES)})")
            elif mode == "page-setup":
                if blocks:
                    errors.append(f"{path}:{no}: page-setup after the page's first block")
                elif not rest:
                    errors.append(f"{path}:{no}: page-setup without a command")
                else:
                    setup.append((no, rest))
            elif mode == "skip" and not rest:
                errors.append(f"{path}:{no}: 'skip' without a reason")
            else:
                if pending:
                    errors.append(f"{path}:{pending[2]}: doc-test directive not followed "
                                  f"by a block")
                pending = (mode, rest, no)
        elif m:
            fence, indent = m.group("fence"), len(m.group("indent"))
            close = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{%d,}[ \t]*$" % len(fence))
            body, j = [], i + 1
            while j < len(lines) and not close.match(lines[j]):
                body.append(re.sub(r"^[ \t]{0,%d}" % indent, "", lines[j]))
                j += 1
            if j == len(lines):
                errors.append(f"{path}:{no}: block never closed")
            b = Block(no, m.group("info").lower(), "\n".join(body) + "\n")
            if pending:
                b.mode, b.reason = pending[0], pending[1]
                pending = None
            blocks.append(b)
            i = j
        elif line.strip() and pending:
            errors.append(f"{path}:{pending[2]}: doc-test directive not followed by a block")
            pending = None
        i += 1
    if pending:
        errors.append(f"{path}:{pending[2]}: doc-test directive not followed by a block")
    return Page(path, blocks, setup, errors)


def as_run_here(text: str) -> str:
    """A block as this machine runs it: ``ros2 launch figaroh_ros X`` by the package's
    launch runner."""
    return ROS2_LAUNCH.sub(r"figaroh-ros launch launch/\1", text)


# ------------------------------------------------------------------ static checks
_KEYWORDS = {"if", "then", "else", "elif", "while", "until", "do", "!", "{", "time"}
_WRAPPERS = {"env", "timeout", "nohup", "exec", "command", "nice"}  # then a command
_NOT_COMMANDS = {"fi", "done", "}", "esac", "in"}
_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", ";;", "|&", "\n"}
_REDIRECTS = {">", ">>", "<", "<<<", ">&", "<&", "&>", "&>>", ">|"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")


def _bash_names() -> set:
    out = subprocess.run(["bash", "-c", "compgen -b -k"], capture_output=True, text=True)
    return set(out.stdout.split())


def command_words(script: str):
    """``(line offset, argv)`` of the simple commands of a bash script, approximately:
    heredoc bodies and ``case`` patterns are not commands, quoted strings spanning lines
    are joined; ``$(...)`` is read as a subshell.  Assignments before a command and
    redirections are left out; after ``env``, ``timeout``, ``nohup``, ``exec``,
    ``command`` and ``nice`` (their options skipped) comes another command."""
    lines, out = script.splitlines(), []
    i, heredoc, case = 0, None, None      # case: None, "head" (to its "in"), "pattern", "body"
    while i < len(lines):
        start, chunk = i, lines[i]
        if heredoc:
            if lines[i].strip() == heredoc:
                heredoc = None
            i += 1
            continue
        while True:                              # continuation lines and open quotes
            if chunk.endswith("\\") and i + 1 < len(lines):
                i += 1
                chunk = chunk[:-1] + " " + lines[i]
                continue
            try:
                lex = shlex.shlex(chunk, posix=True, punctuation_chars=";&|()<>")
                lex.whitespace_split, lex.commenters = True, "#"
                tokens = list(lex)
                break
            except ValueError:
                if i + 1 >= len(lines):
                    tokens = []
                    break
                i += 1
                chunk += "\n" + lines[i]
        h = _HEREDOC.search(chunk)
        if h:
            heredoc = h.group(2)
        i += 1
        argv, expect, skip_next, in_for, wrapper = [], True, False, False, None
        for tok in tokens + ["\n"]:
            if skip_next:
                skip_next = False
                continue
            if case == "head":
                case = "pattern" if tok == "in" else "head"
                continue
            if case == "pattern":
                if tok == "esac":
                    case = None
                elif tok == ")":
                    case, argv, expect = "body", [], True
                continue
            if case == "body" and tok in (";;", "esac"):
                if argv:
                    out.append((start, argv))
                argv, expect = [], True
                case = "pattern" if tok == ";;" else None
                continue
            if tok in _SEPARATORS:
                if argv:
                    out.append((start, argv))
                argv, expect, in_for, wrapper = [], True, False, None
                continue
            if tok in _REDIRECTS or tok.startswith("<<"):
                skip_next = True
                continue
            if in_for:
                continue
            if not expect:
                argv.append(tok)
                continue
            if tok == "case":
                case = "head"
                continue
            if tok in ("for", "select"):
                in_for = True
                continue
            if tok in _NOT_COMMANDS or tok in _KEYWORDS or _ASSIGNMENT.match(tok):
                continue
            if wrapper and (tok.startswith("-") or (
                    wrapper == "timeout" and re.fullmatch(r"[\d.]+[smhd]?", tok))):
                continue
            if argv:
                out.append((start, argv))          # the wrapper itself
            argv = [tok]
            wrapper = tok if tok in _WRAPPERS else None
            expect = wrapper is not None
    return out


def _defined_functions(script: str) -> set:
    return set(re.findall(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)", script, re.M))


def static_errors(page: Page, path_env: str, work: str) -> list:
    """What is wrong with a page before running it: its directive errors, commands that
    do not exist, blocks that must be marked skip."""
    errors = list(page.errors)
    known = _bash_names() | {"[", "[[", "]]", "source", "."}
    functions = set()
    scripts = [(line, "page-setup", cmd) for line, cmd in page.setup] + \
              [(b.line, b.mode, b.text) for b in page.runnable if b.lang == "bash"]
    for b in page.runnable:
        m = MAKE_IN_PYTHON.search(b.text) if b.lang == "python" else None
        if m:
            errors.append(f"{page.path}:{b.line}: the block runs make "
                          f"{m.group(1) or m.group(2)}: mark it "
                          f"`<!-- doc-test: skip REASON -->`")
    for line, mode, text in scripts:
        functions |= _defined_functions(text)
        text = as_run_here(text)
        for offset, argv in command_words(text):
            where = f"{page.path}:{line + offset + (0 if mode == 'page-setup' else 1)}"
            word = argv[0]
            if word == "make":
                targets = [a for a in argv[1:] if not a.startswith("-") and "=" not in a]
                refused = [t for t in targets if t in MAKE_REFUSED] or \
                    ([] if targets else ["(default target: setup)"])
                if refused:
                    errors.append(f"{where}: `{' '.join(argv)}` runs make "
                                  f"{', '.join(refused)}: mark the block "
                                  f"`<!-- doc-test: skip REASON -->`")
            elif word in ("sudo", "apt", "apt-get") or \
                    (word in ("pip", "pip3", "uv") and "install" in argv[1:3]) or \
                    (word.endswith("python") and argv[1:4] == ["-m", "pip", "install"]):
                errors.append(f"{where}: `{' '.join(argv)[:80]}` changes the machine: mark "
                              f"the block `<!-- doc-test: skip REASON -->`")
            if word in FOR_A_ROBOT:
                errors.append(f"{where}: `{word}` ({FOR_A_ROBOT[word]}) is not installed "
                              f"here: mark the block `<!-- doc-test: robot -->`")
            elif "$" in word or "`" in word or word in known or word in functions:
                continue
            elif "/" in word:
                if not os.path.exists(os.path.join(work, word)) and \
                        not (os.path.isabs(word) and os.path.exists(word)):
                    errors.append(f"{where}: `{word}`: no such file")
            elif shutil.which(word, path=path_env) is None:
                errors.append(f"{where}: `{word}`: command not found")
    return errors


# ------------------------------------------------------------------ running a page
def _copy_checkout(dst: str) -> None:
    """The checkout's files (tracked, and new ones git does not ignore) copied to ``dst``,
    its virtual environments linked."""
    try:
        listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"],
                                cwd=ROOT, capture_output=True, check=True).stdout
        files = [f for f in listed.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):          # not a git checkout
        files = [os.path.relpath(os.path.join(d, f), ROOT)
                 for d, dirs, names in os.walk(ROOT)
                 if not any(p in (".git", ".venv", ".venv-jazzy", "build", "__pycache__")
                            for p in os.path.relpath(d, ROOT).split(os.sep))
                 for f in names]
    for rel in files:
        src = os.path.join(ROOT, rel)
        if not os.path.lexists(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, rel)) or dst, exist_ok=True)
        shutil.copy2(src, os.path.join(dst, rel), follow_symlinks=False)
    for venv in (".venv", ".venv-jazzy"):
        if os.path.isdir(os.path.join(ROOT, venv)):
            os.symlink(os.path.join(ROOT, venv), os.path.join(dst, venv))


def _marked_pids(marker: str) -> list:
    """The processes whose environment carries ``MARKER=marker``: the page's."""
    pids, tag = [], f"{MARKER}={marker}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/environ", "rb") as f:
                if tag in f.read().split(b"\0") and int(pid) != os.getpid():
                    pids.append(int(pid))
    return pids


def _tail(text: str, n: int = 3000) -> str:
    return text if len(text) <= n else "..." + text[-n:]


class PageRun:
    """A page's blocks run in order in a copy of the checkout (see the module docstring)."""

    def __init__(self, page: Page, tmp: str):
        self.page, self.tmp = page, tmp
        self.work = os.path.join(tmp, "checkout")
        os.makedirs(self.work)
        _copy_checkout(self.work)
        beside = os.path.join(os.path.dirname(ROOT), "shared")
        if os.path.isdir(beside):        # the recordings beside the clone (../shared/data)
            os.symlink(os.path.realpath(beside), os.path.join(tmp, "shared"))
        self.state = os.path.join(tmp, "exported.sh")
        self.cwd_file = os.path.join(tmp, "cwd")
        with open(self.cwd_file, "w") as f:
            f.write(self.work)
        self.marker = uuid.uuid4().hex
        bindir = os.path.dirname(sys.executable)
        self.env = dict(os.environ)
        self.env.update({
            "PATH": bindir + os.pathsep + os.environ.get("PATH", ""),
            "FIGAROH_DATA": os.environ.get("FIGAROH_DATA",
                                           os.path.join(ROOT, "..", "shared", "data")),
            "ROS_LOG_DIR": os.path.join(tmp, "ros_log"),
            "ROS_HOME": os.path.join(tmp, "ros_home"),
            MARKER: self.marker,
            "FIGAROH_DOC_STATE": self.state, "FIGAROH_DOC_CWD": self.cwd_file})
        self.env.pop("PYTEST_CURRENT_TEST", None)
        self.background = []           # (Popen, what, log path)
        self._stopped = 0              # how many of them stop() has stopped
        self.timings = []              # (line, seconds)

    def _script(self, block_text: str, lang: str, n: int, keep_state: bool) -> str:
        head = ('source "$FIGAROH_DOC_STATE" 2>/dev/null || true\n'
                'cd "$(cat "$FIGAROH_DOC_CWD")"\n')
        if keep_state:
            head += ("trap 'export -p > \"$FIGAROH_DOC_STATE.new\" && "
                     "mv \"$FIGAROH_DOC_STATE.new\" \"$FIGAROH_DOC_STATE\"; "
                     "pwd > \"$FIGAROH_DOC_CWD\"' EXIT\n")
        if lang == "python":
            path = os.path.join(self.tmp, f"block_{n}.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(block_text)
            return head + f"exec {shlex.quote(sys.executable)} {shlex.quote(path)}\n"
        return head + "set -eo pipefail\n" + as_run_here(block_text)

    def start_background(self, text: str, lang: str, what: str, n: int) -> None:
        log = os.path.join(self.tmp, f"background_{n}.log")
        with open(log, "w") as out:
            p = subprocess.Popen(["bash", "-c", self._script(text, lang, n, False)],
                                 env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        self.background.append((p, what, log))

    def run_block(self, b: Block, n: int) -> str | None:
        """Run a block to its end: None, or why it failed."""
        t0 = time.monotonic()
        p = subprocess.Popen(["bash", "-c", self._script(b.text, b.lang, n, True)],
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            out, err = p.communicate(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            self.timings.append((b.line, time.monotonic() - t0))
            return (f"{self.page.path}:{b.line}: ```{b.lang} block still running after "
                    f"{BLOCK_TIMEOUT:g} s\n{b.text}\nstdout:\n{_tail(out)}\nstderr:\n{_tail(err)}")
        self.timings.append((b.line, time.monotonic() - t0))
        if p.returncode != 0:
            return (f"{self.page.path}:{b.line}: ```{b.lang} block exited {p.returncode}\n"
                    f"{b.text}\nstdout:\n{_tail(out)}\nstderr:\n{_tail(err)}")
        return None

    def stop(self) -> list:
        """Stop the background processes; what went wrong with them (one that ended by
        itself with an error code, with its log's tail)."""
        problems, running = [], self.background[self._stopped:]
        self._stopped = len(self.background)
        for p, what, log in running:
            code = p.poll()
            if code not in (None, 0):
                with open(log, errors="replace") as f:
                    problems.append(f"{what} ended by itself with exit code {code}:\n"
                                    f"{_tail(f.read())}")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for p, _, _ in running:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        self._stop_marked()
        return problems

    def _stop_marked(self) -> None:
        """Every process still carrying the page's marker: SIGTERM, SIGKILL 5 s later."""
        pids = _marked_pids(self.marker)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
            t0 = time.monotonic()
            while pids and time.monotonic() - t0 < 5:
                time.sleep(0.1)
                pids = [q for q in pids if os.path.exists(f"/proc/{q}") and
                        not _is_zombie(q)]
            if not pids:
                break

    def background_logs(self) -> str:
        parts = []
        for _, what, log in self.background:
            with open(log, errors="replace") as f:
                parts.append(f"--- {what}:\n{_tail(f.read(), 2000)}")
        return "\n".join(parts)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def run_page(page: Page) -> tuple[list, list]:
    """Run a page: (failures, [(block line, seconds)]).  Static errors stop it before any
    block runs."""
    from conftest import ros_graph_environment
    ros_graph_environment()                   # a domain of this worker's, DDS over UDP
    with tempfile.TemporaryDirectory(prefix="figaroh_doc_") as tmp:
        run = PageRun(page, tmp)
        errors = static_errors(page, run.env["PATH"], run.work)
        if errors:
            return errors, []
        failures = []
        try:
            for k, (line, cmd) in enumerate(page.setup):
                run.start_background(cmd, "bash", f"{page.path}:{line}: page-setup "
                                                  f"`{cmd}`", 1000 + k)
            for n, b in enumerate(page.blocks):
                if b.lang not in RUN_LANGS or b.mode in ("robot", "skip"):
                    continue
                if b.mode == "background":
                    run.start_background(b.text, b.lang, f"{page.path}:{b.line}: "
                                                         f"background block", n)
                    continue
                why = run.run_block(b, n)
                if why:
                    failures.append(why)
                    break
        finally:
            problems = run.stop()
        failures += problems
        if failures and run.background:
            failures.append("background logs:\n" + run.background_logs())
        return failures, run.timings


def pages() -> list:
    found = [os.path.join(ROOT, "README.md")] + \
        sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    out = []
    for path in found:
        if os.path.isfile(path):
            rel = os.path.relpath(path, ROOT)
            with open(path, encoding="utf-8") as f:
                out.append(parse_page(f.read(), rel))
    return out


_PAGES = pages()
_PLAIN = [p for p in _PAGES if not p.uses_ros]
# the pages that start ROS nodes, shared between the two graph groups (each runs one graph
# at a time, the two groups at once)
_GRAPH = [p for p in _PAGES if p.uses_ros][0::2]
_GRAPH_2 = [p for p in _PAGES if p.uses_ros][1::2]


def _check(page: Page) -> None:
    failures, timings = run_page(page)
    if timings:
        print(f"{page.path}: " + ", ".join(f"line {line} {s:.1f} s" for line, s in timings))
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)


@pytest.mark.xdist_group("ros_graph")
@pytest.mark.parametrize("page", _GRAPH, ids=[p.path for p in _GRAPH])
def test_graph_page_runs(page):
    _check(page)


@pytest.mark.xdist_group("ros_graph_2")
@pytest.mark.parametrize("page", _GRAPH_2, ids=[p.path for p in _GRAPH_2])
def test_graph_page_runs_beside(page):
    _check(page)


@pytest.mark.parametrize("page", _PLAIN, ids=[p.path for p in _PLAIN])
def test_page_runs(page):
    _check(page)


# ------------------------------------------------------------------ the runner itself
FIXTURE = """\
# A page

<!-- doc-test: page-setup sleep 600 -->

```bash
mkdir -p out && cd out
export GREETING=hello
```

Shown, not run:

```console
$ no-such-command
```

<!-- doc-test: robot -->
```bash
ros2 launch figaroh_ros ur10.launch.yaml robot_ip:=192.168.1.10
```

1. In a list:

   ```bash
   test "$GREETING" = hello && test "$(basename "$PWD")" = out
   echo "$GREETING" > greeting.txt
   ```

<!-- doc-test: background -->
```bash
sleep 600
```

```python
import os
assert open("greeting.txt").read() == "hello\\n", os.getcwd()
assert os.environ["FIGAROH_DATA"]
```

<!-- doc-test: skip the whole suite takes minutes -->
```bash
make test
```
"""


def _fixture_run(text: str, tmp_path):
    page = parse_page(text, "fixture.md")
    return page, run_page(page)


def test_the_fixture_runs_as_a_terminal_would(tmp_path):
    page, (failures, timings) = _fixture_run(FIXTURE, tmp_path)
    assert failures == [], failures
    assert [b.mode for b in page.blocks] == ["run", "run", "robot", "run", "background",
                                             "run", "skip"]
    assert page.blocks[3].text.startswith('test "$GREETING"')      # list indent removed
    assert [t[0] for t in timings] == [5, 23, 33]                   # the three run blocks
    assert page.uses_ros                                            # its page-setup


def test_background_processes_end_with_the_page(tmp_path):
    page = parse_page(FIXTURE, "fixture.md")
    with tempfile.TemporaryDirectory() as tmp:
        run = PageRun(page, tmp)
        run.start_background("sleep 600 & sleep 600\n", "bash", "two sleeps", 0)
        t0 = time.monotonic()
        while len(_marked_pids(run.marker)) < 2 and time.monotonic() - t0 < 60:
            time.sleep(0.1)                  # the two sleeps (and bash), on a loaded machine
        assert len(_marked_pids(run.marker)) >= 2
        assert run.stop() == []
        assert _marked_pids(run.marker) == []
        run.start_background("exit 3\n", "bash", "a failing start", 1)
        run.background[-1][0].wait(timeout=20)
        assert "exit code 3" in run.stop()[0]


def test_the_checkout_is_left_as_it_was(tmp_path):
    text = "```bash\necho x > written_by_a_doc.txt\nmkdir -p demo_out && touch demo_out/y\n```\n"
    page, (failures, _) = _fixture_run(text, tmp_path)
    assert failures == []
    assert not os.path.exists(os.path.join(ROOT, "written_by_a_doc.txt"))


@pytest.mark.parametrize("block, expected", [
    ("make test\n", "runs make test"),
    ("make -j2 setup\n", "runs make setup"),
    ("make\n", "default target"),
    ("cd /tmp && make demo\n", "runs make demo"),
    ("pip install figaroh\n", "changes the machine"),
    ("sudo apt-get install -y ccache\n", "changes the machine"),
    ("ros2 topic list\n", "mark the block `<!-- doc-test: robot -->`"),
    ("colcon build --packages-select figaroh_ros\n", "robot"),
    ("figaroh-ros --help | no-such-tool\n", "`no-such-tool`: command not found"),
    ("if true; then\n  not-a-command --x\nfi\n", "`not-a-command`: command not found"),
    ("timeout 5 missing-binary\n", "`missing-binary`: command not found"),
    ("./tools/no_such_script.sh\n", "no such file"),
])
def test_a_block_that_cannot_run_here_fails_before_anything_runs(block, expected, tmp_path):
    text = "First:\n\n```bash\ntouch ran_before.txt\n```\n\n```bash\n" + block + "```\n"
    page = parse_page(text, "bad.md")
    failures, timings = run_page(page)
    assert timings == [] and any(expected in f for f in failures), failures
    assert all(f.startswith("bad.md:") for f in failures), failures


@pytest.mark.parametrize("code", ['subprocess.run(["make", "-j2", "test"])\n',
                                  'os.system("make setup")\n'])
def test_a_python_block_never_runs_the_suite(code):
    page = parse_page("```python\nimport os, subprocess\n" + code + "```\n", "py.md")
    failures, timings = run_page(page)
    assert timings == [] and len(failures) == 1 and "runs make" in failures[0], failures


@pytest.mark.parametrize("block", [
    "for f in config/*.yaml; do head -1 \"$f\" >/dev/null; done\n",
    "X=1 Y=2 env Z=3 figaroh-ros --help >/dev/null\n",
    "cat <<'EOF' > c.yaml\nnot_a_command: 1\nEOF\ncat c.yaml\n",
    "python - <<'EOF'\nimport sys\nprint(sys.version)\nEOF\n",
    "figaroh-ros config-schema identification \\\n  | head -3\n",
    "echo \"a line\nanother line\" | wc -l\n",
    "f() { echo in f; }\nf\n",
    "case x in\n  x) echo x;;\nesac\n",
    "ros2 launch figaroh_ros sim_ur10.launch.yaml --help || true\n",
])
def test_shell_forms_a_page_may_use_pass_the_check(block, tmp_path):
    page = parse_page("```bash\n" + block + "```\n", "ok.md")
    with tempfile.TemporaryDirectory() as tmp:
        run = PageRun(page, tmp)
        assert static_errors(page, run.env["PATH"], run.work) == []


def test_a_failing_block_names_its_page_line_and_output(tmp_path):
    text = "x\n\n```bash\necho to stdout; echo to stderr >&2; false\necho never\n```\n"
    page, (failures, _) = _fixture_run(text, tmp_path)
    assert len(failures) == 1 and failures[0].startswith("fixture.md:3: ```bash block exited 1")
    assert "to stderr" in failures[0] and "never" not in failures[0].split("stdout:")[1]


@pytest.mark.parametrize("text, expected", [
    ("<!-- doc-test: robots -->\n```bash\nls\n```\n", "unknown doc-test directive"),
    ("<!-- doc-test: skip -->\n```bash\nls\n```\n", "'skip' without a reason"),
    ("<!-- doc-test: robot -->\nSome text.\n```bash\nls\n```\n", "not followed by a block"),
    ("```bash\nls\n```\n<!-- doc-test: page-setup sleep 1 -->\n", "after the page's first"),
    ("```bash\nls\n", "never closed"),
])
def test_directive_mistakes_are_named(text, expected):
    assert any(expected in e for e in parse_page(text, "p.md").errors)


def test_ros2_launch_of_this_package_runs_with_its_launch_runner():
    assert as_run_here("ros2 launch figaroh_ros sim_ur10.launch.yaml bag_dir:=b\n") == \
        "figaroh-ros launch launch/sim_ur10.launch.yaml bag_dir:=b\n"
    assert as_run_here("ros2 launch ur_robot_driver x.launch.py\n") == \
        "ros2 launch ur_robot_driver x.launch.py\n"
