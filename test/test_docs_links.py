"""The pages hold together: every relative link of README.md and docs/**.md reaches a file
of the repository, and every anchor (``page.md#section``, ``#section``) a heading of its
page as GitHub names it (or an explicit ``<a id=...>``); every interface file (``msg/``,
``srv/``, ``action/``) and every node executable is documented in docs/ with its fields or
parameters.

Links inside code (fenced blocks, inline code spans) are not links and are not checked;
absolute URLs (``https:``, ``mailto:``) are not fetched.  GitHub's heading anchors: the
heading's text (link targets and markup dropped, inline code kept as its text), lower
case, every character but letters, digits, ``_``, ``-`` and spaces removed, spaces made
``-``; a repeated heading gets ``-1``, ``-2``...
"""
import glob
import importlib
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
HEADING = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^[ \t]{0,3}\[[^\]]+\]:[ \t]*<?(\S+?)>?(?:[ \t]+.*)?$")
HTML_LINK = re.compile(r"\b(?:href|src)=\"([^\"]+)\"")
HTML_ID = re.compile(r"<[a-zA-Z][^>]*\b(?:id|name)=\"([^\"]+)\"")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def pages() -> list[str]:
    found = [os.path.join(ROOT, "README.md")] + \
        sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return [os.path.relpath(p, ROOT) for p in found if os.path.isfile(p)]


def prose_lines(text: str):
    """``(line number, line)`` of a page outside its fenced code blocks, inline code spans
    blanked."""
    fence = None
    for no, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and \
                    not line.strip().strip(fence[0]):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        yield no, INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text (before de-duplication)."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(text: str) -> set:
    """Every anchor a page has: its headings' (GitHub's names) and explicit ids."""
    seen, out = {}, set()
    fence = None
    for line in text.splitlines():
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and not line.strip().strip(fence[0]):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        h = HEADING.match(line)
        if h:
            s = slug(h.group(2))
            n = seen.get(s, 0)
            out.add(s if n == 0 else f"{s}-{n}")
            seen[s] = n + 1
        out.update(HTML_ID.findall(line))
    return out


def links(text: str):
    """``(line number, target)`` of every link of a page's prose."""
    for no, line in prose_lines(text):
        for pattern in (LINK, HTML_LINK):
            for m in pattern.finditer(line):
                yield no, m.group(1)
        r = REFERENCE.match(line)
        if r:
            yield no, r.group(1)


def _read(rel: str, root: str = ROOT) -> str:
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def broken_links(rel: str, text: str, root: str = ROOT) -> list[str]:
    """``page:line: target: why`` for every relative link of a page that leads nowhere."""
    bad = []
    here = os.path.dirname(rel)
    for no, target in links(text):
        if not target or SCHEME.match(target):
            continue
        path, _, anchor = target.partition("#")
        where = f"{rel}:{no}: {target}"
        if not path:
            if anchor not in anchors(text):
                bad.append(f"{where}: this page has no heading or id '{anchor}'")
            continue
        if path.startswith("/"):
            dest = os.path.normpath(path.lstrip("/"))
        else:
            dest = os.path.normpath(os.path.join(here, path))
        if dest.startswith(".."):
            bad.append(f"{where}: leaves the repository")
            continue
        full = os.path.join(root, dest)
        if not os.path.exists(full):
            bad.append(f"{where}: no such file {dest}")
            continue
        if not anchor:
            continue
        if dest.endswith(".md"):
            if anchor not in anchors(_read(dest, root)):
                bad.append(f"{where}: {dest} has no heading or id '{anchor}'")
        elif not re.fullmatch(r"L\d+(-L\d+)?", anchor):
            bad.append(f"{where}: an anchor into a file that is not a page")
    return bad


@pytest.mark.parametrize("page", pages())
def test_every_link_of_the_page_leads_somewhere(page):
    bad = broken_links(page, _read(page))
    if bad:
        pytest.fail(f"{len(bad)} broken link(s):\n" + "\n".join(bad), pytrace=False)


# ------------------------------------------------------------------ what docs/ must cover
def _docs() -> dict[str, str]:
    return {p: _read(p) for p in pages() if p.startswith("docs" + os.sep)}


def interface_fields(path: str) -> list[str]:
    """The field and constant names of a .msg/.srv/.action file."""
    names = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line or line == "---":
                continue
            parts = line.split()
            if len(parts) >= 2:
                names.append(parts[1].split("=", 1)[0])
    return names


INTERFACES = sorted(glob.glob(os.path.join(ROOT, "msg", "*.msg")) +
                    glob.glob(os.path.join(ROOT, "srv", "*.srv")) +
                    glob.glob(os.path.join(ROOT, "action", "*.action")))


def _word(name: str):
    return re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)")


@pytest.mark.parametrize("interface", [os.path.relpath(p, ROOT) for p in INTERFACES])
def test_every_interface_is_documented_with_its_fields(interface):
    name = os.path.splitext(os.path.basename(interface))[0]
    docs = _docs()
    mentioning = {p: t for p, t in docs.items() if _word(name).search(t)}
    assert mentioning, f"{interface}: {name} is named on no page of docs/"
    fields = interface_fields(os.path.join(ROOT, interface))
    missing = [f for f in fields
               if not any(_word(f).search(t) for t in mentioning.values())]
    assert not missing, (f"{interface}: the pages naming {name} ({', '.join(mentioning)}) "
                         f"do not name its fields {missing}")


def _node_parameters(module: str) -> list[str]:
    """The ROS parameters a node module declares (``parameters.declare(node, Model)``)."""
    mod = importlib.import_module(module)
    with open(mod.__file__, encoding="utf-8") as f:
        source = f.read()
    names = []
    for model in re.findall(r"\bdeclare\(\s*\w+\s*,\s*(\w+)\s*\)", source):
        names += list(getattr(mod, model).model_fields)
    return names


def _executables() -> dict[str, str]:
    from figaroh_ros.cli.launch_runner import OUR_EXECUTABLES
    return dict(OUR_EXECUTABLES)


@pytest.mark.parametrize("executable", sorted(_executables()))
def test_every_node_executable_is_documented_with_its_parameters(executable):
    pytest.importorskip("rclpy")
    module = _executables()[executable]
    docs = _docs()
    mentioning = {p: t for p, t in docs.items() if _word(executable).search(t)}
    assert mentioning, f"the node executable {executable} is named on no page of docs/"
    params = _node_parameters(module)
    assert params, f"{module}: no parameter model found (declare(node, Model))"
    missing = [p for p in params if not any(_word(p).search(t) for t in mentioning.values())]
    assert not missing, (f"{executable}: the pages naming it ({', '.join(mentioning)}) do "
                         f"not name its parameters {missing}")


# the trees whose comments, docstrings, descriptions and messages point readers to pages
POINTING = ("figaroh_ros", "test", "bench", "config", "tools", "launch", "msg", "srv",
            "action", "Makefile", ".ci")
DOC_PATH = re.compile(r"(?<![\w/.-])docs/[\w/.-]+?\.md\b")


def test_every_page_the_code_names_exists():
    """A comment, docstring, config description or message that says ``docs/x.md`` names
    a page that is there (this module's own examples name pages of a made-up tree)."""
    bad = []
    for tree in POINTING:
        path = os.path.join(ROOT, tree)
        files = [path] if os.path.isfile(path) else \
            [os.path.join(d, f) for d, _, names in os.walk(path)
             if "__pycache__" not in d for f in names]
        for full in files:
            if full == os.path.abspath(__file__):
                continue
            try:
                with open(full, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            for no, line in enumerate(text.splitlines(), 1):
                for page in DOC_PATH.findall(line):
                    if not os.path.isfile(os.path.join(ROOT, page)):
                        bad.append(f"{os.path.relpath(full, ROOT)}:{no}: {page}")
    if bad:
        pytest.fail("pages named but missing:\n" + "\n".join(bad), pytrace=False)


# ------------------------------------------------------------------ the checker itself
def test_github_anchor_names():
    text = ("# Quick start\n## `figaroh-ros call` verbs\n## Exit codes & result.yaml\n"
            "## On your robot in six steps\n## Exit codes & result.yaml\n"
            "```bash\n# not a heading\n```\n<a id=\"custom\"></a>\n"
            "### [Linked](other.md) *heading*\n")
    assert anchors(text) == {"quick-start", "figaroh-ros-call-verbs",
                             "exit-codes--resultyaml", "exit-codes--resultyaml-1",
                             "on-your-robot-in-six-steps", "custom", "linked-heading"}


def test_broken_links_are_named_with_their_line(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "config").mkdir()
    (tmp_path / "docs" / "installation.md").write_text("# Installation\n")
    (tmp_path / "docs" / "cli.md").write_text("# CLI\n## Exit codes\n")
    (tmp_path / "config" / "sim_ur10.yaml").write_text("x: 1\n")
    text = ("See [install](installation.md), [a section](#nowhere), [cli](cli.md#no-such),\n"
            "[data](../../shared/data/README.md), [config](../config/sim_ur10.yaml),\n"
            "[web](https://example.org/x#y), `[code](not-a-link.md)`, [top](#a-page)\n"
            "\n# A page\n\n```md\n[in code](missing.md)\n```\n"
            "[ref]: missing-too.md\n<a href=\"gone.md\">x</a> [codes](cli.md#exit-codes)\n"
            "![figure](img/graph.svg)\n")
    bad = broken_links("docs/page.md", text, str(tmp_path))
    assert [b.split(": ")[0] + ": " + b.split(": ")[1] for b in bad] == [
        "docs/page.md:1: #nowhere", "docs/page.md:1: cli.md#no-such",
        "docs/page.md:2: ../../shared/data/README.md", "docs/page.md:10: missing-too.md",
        "docs/page.md:11: gone.md", "docs/page.md:12: img/graph.svg"], bad
    assert "no heading or id 'nowhere'" in bad[0] and "leaves the repository" in bad[2]


def test_interface_fields_are_read_from_the_file(tmp_path):
    p = tmp_path / "X.action"
    p.write_text("# goal\nstring config  # the path\nuint8 OK=0\n---\nbool ok\n---\n"
                 "float64 progress 0.5\n")
    assert interface_fields(str(p)) == ["config", "OK", "ok", "progress"]
