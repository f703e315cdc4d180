"""Sphinx configuration of tunebus's documentation site (built by `bash scripts/docs`).

The pages are Markdown read by MyST (myst-parser 0.18, Debian 12's python3-myst-parser); the theme
is furo. Every warning is an error (`-W` in scripts/docs): a link to a page or heading that does
not exist fails the build. Generated reference fragments (scripts/docs-generate, when present) are
written to build/docs/generated/ and included by the reference pages.
"""

import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))

project = "tunebus"
author = "the tunebus authors"
copyright = "the tunebus authors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/_generated"]

# Headings of levels 1-4 get anchors (`page.md#a-heading`), GitHub's slugs, so the links that work
# on GitHub work on the site.
myst_heading_anchors = 4
myst_enable_extensions = ["colon_fence", "deflist"]

# Python API (docs/reference/python-api.md): members in source order, with their docstrings as
# written (Google style is read by napoleon).
autodoc_member_order = "bysource"
autodoc_typehints = "none"

html_theme = "furo"
html_title = "tunebus"
html_static_path = ["_static"]
html_show_sourcelink = False
