"""Checks README.md, the front door: every relative link (and image) names a file of the tree, and
a link's `#anchor` into a Markdown file names one of its headings (GitHub's slugs, as the site's
myst_heading_anchors makes them).

Prints one line per broken link (`README.md:LINE: ...`) and exits 1 if any; else prints the count.

Usage: python3 scripts/readme_check.py README.md
"""

import os
import re
import sys

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    """The anchors of a Markdown file's headings (outside code fences)."""
    found, fenced = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r"#{1,6} ", line):
                found.add(slug(line.lstrip("#")))
    return found


def check(readme):
    base = os.path.dirname(os.path.abspath(readme))
    broken, count = [], 0
    with open(readme, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fenced = False
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            count += 1
            path, _, anchor = target.partition("#")
            full = os.path.join(base, path)
            if not os.path.exists(full):
                broken.append("%s:%d: %s: no such file" % (readme, number, path))
            elif anchor and path.endswith(".md") and anchor not in anchors(full):
                broken.append("%s:%d: %s: no heading #%s" % (readme, number, path, anchor))
    return broken, count


def main():
    readme = sys.argv[1] if len(sys.argv) > 1 else "README.md"
    broken, count = check(readme)
    for b in broken:
        print(b)
    if broken:
        print("readme_check: %d of %d relative links broken" % (len(broken), count))
        return 1
    print("readme_check: %d relative links of %s resolve" % (count, readme))
    return 0


if __name__ == "__main__":
    sys.exit(main())
