"""scripts/docs_tools/snippets.py, the docs' snippet runner: which blocks it runs, its markers,
and that a failing snippet fails naming its file and line."""

import os
import subprocess
import sys

import pytest

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts", "docs_tools"))

import snippets  # noqa: E402

PAGE = """# A page

<!-- snippet: skip an outline -->
```python
def outline(): ...
```

```yaml
name: ok
trainable: {builtin: mock}
```

```yaml
scheduler: {type: asha, max_t: 0}
```

<!-- snippet: run -->

```console
$ echo ran > ran.txt
output lines are not run
```

```sh
exit 1
```
"""


def test_finds_blocks_with_their_lines_and_markers(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    found = snippets.find_snippets(str(page))
    assert [(s.line, s.lang) for s in found] == [
        (4, "python"),
        (8, "yaml"),
        (13, "yaml"),
        (19, "console"),
        (24, "sh"),
    ]
    assert found[0].skip == "an outline"
    assert "run" in found[3].flags and found[4].flags == set()
    assert found[1].text == "name: ok\ntrainable: {builtin: mock}\n"


def run(tunectl, *pages):
    return subprocess.run(
        [sys.executable, os.path.join(SOURCE_DIR, "scripts", "docs_tools", "snippets.py")]
        + ["--build", os.path.dirname(os.path.dirname(tunectl))]
        + [str(p) for p in pages],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_failing_fragment_fails_naming_file_and_line(tunectl, tmp_path):
    if os.path.basename(os.path.dirname(tunectl)) != "bin":
        pytest.skip("needs tunectl in a build folder's bin/")
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    done = run(tunectl, page)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and "page.md:13: tunectl validate exited 2" in failed[0], done.stdout
    assert "scheduler.max_t" in done.stdout
    assert (
        "python 0 run (1 skipped), yaml 2 validated 0 run (0 skipped), "
        "shell 1 run (0 skipped, 1 unmarked not run); 1 failed" in done.stdout
    ), done.stdout


def test_a_failing_python_block_fails_naming_file_and_line(tunectl, tmp_path):
    if os.path.basename(os.path.dirname(tunectl)) != "bin":
        pytest.skip("needs tunectl in a build folder's bin/")
    page = tmp_path / "other.md"
    page.write_text("text\n\n```python\nimport tunebus\nraise SystemExit(tunebus.__name__)\n```\n")
    done = run(tunectl, page)
    assert done.returncode == 1
    assert "other.md:3: python exited 1" in done.stdout, done.stdout
