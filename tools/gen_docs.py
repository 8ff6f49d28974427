#!/usr/bin/env python3
"""Write the generated pages of ``docs/`` from the code they document (``make docs``).

    .venv/bin/python tools/gen_docs.py           # rewrite the pages that changed
    .venv/bin/python tools/gen_docs.py --check   # exit 1, naming them, if any is stale

Pages: ``docs/reference/config.md`` (config schemas), ``cli.md`` (argparse parsers),
``nodes.md`` (parameter models and the nodes' ROS graph), ``interfaces.md`` (``msg/``,
``srv/``, ``action/``) and ``docs/performance.md`` (``bench/measured/*.json``).  The output
is deterministic: sorted, no time stamps, no absolute paths.
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tools.docs import cli, config, interfaces, nodes, performance  # noqa: E402

PAGES = {
    "docs/reference/config.md": lambda: config.render(),
    "docs/reference/cli.md": lambda: cli.render(),
    "docs/reference/interfaces.md": lambda: interfaces.render(ROOT),
    "docs/reference/nodes.md": lambda: nodes.render(ROOT),
    "docs/performance.md": lambda: performance.render(ROOT),
}


def generate(names=None) -> dict[str, str]:
    """Page path (relative to the repository) -> its text as the code gives it now."""
    return {path: make() for path, make in PAGES.items() if not names or path in names}


def stale(pages: dict[str, str], root: str = ROOT) -> list[str]:
    """The pages whose file under ``root`` differs from ``pages`` (or is missing)."""
    out = []
    for path, text in pages.items():
        try:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                if f.read() == text:
                    continue
        except FileNotFoundError:
            pass
        out.append(path)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 naming the pages that differ")
    parser.add_argument("pages", nargs="*", metavar="PAGE",
                        help=f"only these pages (default: all): {', '.join(PAGES)}")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.pages) - set(PAGES))
    if unknown:
        parser.error(f"not a generated page: {', '.join(unknown)}")
    pages = generate(args.pages)
    changed = stale(pages)
    if args.check:
        if changed:
            print("generated pages differ from what the code gives: "
                  f"{', '.join(changed)}; run `make docs`", file=sys.stderr)
            return 1
        return 0
    for path in changed:
        os.makedirs(os.path.dirname(os.path.join(ROOT, path)), exist_ok=True)
        with open(os.path.join(ROOT, path), "w", encoding="utf-8") as f:
            f.write(pages[path])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
