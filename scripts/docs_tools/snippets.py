"""Runs the snippets of README.md and docs/**/*.md, so a snippet that no longer works fails CI
naming its file and line (docs/how-to/write-docs.md).

* ```python blocks run with this interpreter (/usr/bin/python3) in a scratch folder, the source
  tree's package on PYTHONPATH and TUNEBUS_ADDRESS naming one `tunectl up` suite this runner
  starts and shares (the embedded suite a script would start, started once);
* ```yaml blocks with `name` and `trainable` are experiment files: `tunectl validate` checks
  them with the real parser, and `tunectl run` runs them on the shared suite when marked `run`.
  YAML of some of their fields (`scheduler: {...}`) is validated over the page's previous
  experiment file (else a minimal one: a mock trainable, metric score, mode max); other YAML
  must be marked `skip`;
* shell blocks (```console, ```sh, ```bash, ```shell) run only when marked `run`, with bash -e in
  a scratch folder whose `build` names the build folder, build/bin first on PATH (```console:
  the `$ ` lines only).

A marker is an HTML comment on the line before the fence (blank lines between are allowed):
    <!-- snippet: skip why it cannot run -->   not run; counted and printed with its reason
    <!-- snippet: run -->                      run a shell block or an experiment file
    <!-- snippet: continue -->                 a python block that goes on from the page's
                                               previous python block (run together); a shell
                                               block that runs in the previous one's folder
    <!-- snippet: run dir=examples/digits -->  run in a scratch copy of that folder of the tree
    <!-- snippet: run copy=examples/bash -->   that folder copied to the same path in the
                                               scratch folder (comma-separated list)
    <!-- snippet: run cwd=examples/digits -->  a python or shell block that runs in that folder
                                               under the page's previous shell block's folder
    <!-- snippet: run exit=1 -->               a shell block that must exit with that status
Words combine: `<!-- snippet: run dir=examples/mock timeout=120 -->`.
A shell block runs in its own process group: what it starts in the background (`&`) keeps running
for the blocks that continue it, and is stopped (SIGTERM, SIGKILL 5 s later) when the page's
chain of shell blocks ends, a block fails or times out, or the runner ends.

Usage: python3 snippets.py [--build BUILD] [--show] [FILE.md ...]   (default: README.md and
docs/**/*.md; --show prints each snippet's output, to copy into its page)
Prints one line per failure (FILE:LINE: why, then the output's tail) and the counts; exits 1 when
a snippet failed.
"""

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})\s*([^\s`{]*)\s*(.*)$")
MARKER = re.compile(r"^\s*<!--\s*snippet:\s*(.*?)\s*-->\s*$")
SHELLS = ("console", "sh", "bash", "shell")
# A folder of the tree as a fresh clone has it: without the results of a local run.
COPY = dict(symlinks=True, ignore=shutil.ignore_patterns("results", "__pycache__"))
MINIMAL = {"name": "fragment", "trainable": {"builtin": "mock"}, "metric": "score", "mode": "max"}


class Snippet:
    def __init__(self, path, line, lang, text, marker):
        self.path = path  # relative to the tree's root
        self.line = line  # 1-based line of the opening fence
        self.lang = lang
        self.text = text
        words = marker.split() if marker is not None else []
        self.skip = " ".join(words[1:]) if words[:1] == ["skip"] else None
        self.options = {w.split("=", 1)[0]: w.split("=", 1)[1] for w in words if "=" in w}
        self.flags = {w for w in words if "=" not in w}
        self.bad_marker = marker is not None and not words

    def where(self):
        return "%s:%d" % (self.path, self.line)


def find_snippets(path):
    """Every fenced block of a Markdown file, with the marker before it."""
    rel = os.path.relpath(path, ROOT)
    with open(path) as f:
        lines = f.read().split("\n")
    snippets, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = len(m.group(1)), m.group(2), m.group(3).lower()
        start, body = i, []
        i += 1
        while i < len(lines):
            close = re.match(r"^ {0,3}(%s+)\s*$" % re.escape(fence[0]), lines[i])
            if close and len(close.group(1)) >= len(fence):
                break
            line = lines[i]
            body.append(
                line[indent:] if line[:indent].isspace() else line.lstrip() if indent else line
            )
            i += 1
        i += 1
        marker, j = None, start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0 and MARKER.match(lines[j]):
            marker = MARKER.match(lines[j]).group(1)
        snippets.append(Snippet(rel, start + 1, lang, "\n".join(body) + "\n", marker))
    return snippets


class Runner:
    def __init__(self, build, show=False):
        self.show = show  # print each snippet's output (to copy it into its page)
        self.bin = os.path.join(os.path.abspath(build), "bin")
        self.tunectl = os.path.join(self.bin, "tunectl")
        self.scratch = tempfile.mkdtemp(prefix="docs-snippets-")
        self.suite = None
        self.fields = None
        self.failures = []
        self.counts = {k: 0 for k in ("python", "python_skip", "yaml", "yaml_run", "yaml_skip")}
        self.counts.update(shell=0, shell_skip=0, shell_unmarked=0)
        self.previous_python = {}  # page -> the code its last python block ran
        self.previous_experiment = {}  # page -> its last experiment file (a fragment's base)
        self.previous_shell = {}  # page -> the folder its last shell block ran in
        self.groups = []  # process groups of the current chain of shell blocks

    def shared_suite(self):
        if self.suite is None:
            import suites

            self.suite = suites.UpSuite(self.tunectl, os.path.join(self.scratch, "suite"))
        return self.suite

    def experiment_fields(self):
        """The experiment file's top-level field names, from the parser's table."""
        if self.fields is None:
            out = subprocess.run(
                [self.tunectl, "experiment-fields"], capture_output=True, text=True, check=True
            ).stdout
            top = [s for s in json.loads(out)["sections"] if not s["name"]][0]
            self.fields = {f["name"] for f in top["fields"]}
        return self.fields

    def folder(self, snippet, link_build=False):
        """A fresh scratch folder: a copy of the `dir=` folder of the tree when given, with the
        `copy=` folders of the tree at their relative paths, and (`link_build`) `build` naming
        the build folder, so that `build/bin/tunectl` works as the docs write it."""
        name = re.sub(r"[^A-Za-z0-9]+", "-", snippet.where())
        path = os.path.join(self.scratch, name)
        if "dir" in snippet.options:
            shutil.copytree(os.path.join(ROOT, snippet.options["dir"]), path, **COPY)
        else:
            os.makedirs(path)
        for rel in filter(None, snippet.options.get("copy", "").split(",")):
            shutil.copytree(os.path.join(ROOT, rel), os.path.join(path, rel), **COPY)
        if link_build and not os.path.lexists(os.path.join(path, "build")):
            os.symlink(os.path.dirname(self.bin), os.path.join(path, "build"))
        return path

    def env(self):
        env = dict(os.environ)
        env.update(
            PATH=self.bin + os.pathsep + env.get("PATH", ""),
            PYTHONPATH=os.path.join(ROOT, "clients", "python"),
            TUNEBUS_TUNECTL=self.tunectl,
            TUNEBUS_SOURCE_DIR=ROOT,
            MPLBACKEND="Agg",
        )
        return env

    def fail(self, snippet, why, output=""):
        tail = "\n".join(output.rstrip().split("\n")[-25:])
        self.failures.append("%s: %s\n%s" % (snippet.where(), why, tail))

    def call(self, snippet, argv, cwd, env, what):
        """Runs argv in its own process group with its output in a file (a process it leaves in
        the background holds no pipe open); returns the output, or None when it timed out or
        exited with another status than `exit=` (default 0)."""
        timeout = int(snippet.options.get("timeout", 300))
        expected = int(snippet.options.get("exit", 0))
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self.groups.append(proc.pid)
            try:
                status = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                status = None
                self.stop_groups()
            out.seek(0)
            text = out.read().decode(errors="replace")
        if self.show:
            print("==> %s (%s, exit %s)\n%s" % (snippet.where(), what, status, text), flush=True)
        if status is None:
            self.fail(snippet, "%s did not finish in %d s" % (what, timeout), text)
            self.stop_groups()
            return None
        if status != expected:
            self.fail(snippet, "%s exited %d, not %d" % (what, status, expected), text)
            self.stop_groups()
            return None
        return text

    def stop_groups(self):
        """Stops every process the chain's blocks left running: SIGTERM to each block's process
        group, SIGKILL to those still there 5 s later."""
        groups, self.groups = self.groups, []
        for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            alive = []
            for pgid in groups:
                try:
                    os.killpg(pgid, sig)
                    alive.append(pgid)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait_s
            while alive and time.monotonic() < deadline:
                time.sleep(0.1)
                alive = [g for g in alive if _group_alive(g)]
            groups = alive

    def under_previous_shell(self, s):
        """The `cwd=` folder under the page's previous shell block's folder."""
        if s.path not in self.previous_shell:
            self.fail(s, "cwd=%s but no shell block ran before it on this page" % s.options["cwd"])
            return None
        return os.path.join(self.previous_shell[s.path], s.options["cwd"])

    def python(self, s):
        code = s.text
        if "continue" in s.flags:
            code = self.previous_python.get(s.path, "") + code
        self.previous_python[s.path] = code
        if s.skip is not None:
            self.counts["python_skip"] += 1
            return
        cwd = self.under_previous_shell(s) if "cwd" in s.options else self.folder(s)
        if cwd is None:
            return
        with open(os.path.join(cwd, "snippet.py"), "w") as f:
            f.write(code)
        env = self.env()
        env["TUNEBUS_ADDRESS"] = self.shared_suite().control
        self.counts["python"] += 1
        self.call(s, [sys.executable, "snippet.py"], cwd, env, "python")

    def yaml_block(self, s):
        if s.skip is not None:
            self.counts["yaml_skip"] += 1
            return
        try:
            doc = yaml.safe_load(s.text)
        except yaml.YAMLError as e:
            self.fail(s, "not YAML: %s" % e)
            return
        is_experiment = isinstance(doc, dict) and "name" in doc and "trainable" in doc
        fields = self.experiment_fields()
        is_fragment = isinstance(doc, dict) and doc and all(k in fields for k in doc)
        if not is_experiment and not is_fragment:
            self.fail(
                s,
                "YAML that is neither an experiment file (name, trainable) nor some of its "
                "fields (%s): mark it <!-- snippet: skip why -->" % ", ".join(map(str, doc or {})),
            )
            return
        if is_experiment:
            self.previous_experiment[s.path] = doc
        cwd = self.folder(s)
        path = os.path.join(cwd, "snippet.yaml")
        with open(path, "w") as f:
            if is_experiment:
                f.write(s.text)
            else:
                base = dict(MINIMAL, **self.previous_experiment.get(s.path, {}))
                yaml.safe_dump(dict(base, **doc), f, sort_keys=False)
        self.counts["yaml"] += 1
        out = self.call(s, [self.tunectl, "validate", path], cwd, self.env(), "tunectl validate")
        if out is None or "run" not in s.flags:
            return
        self.counts["yaml_run"] += 1
        suite = self.shared_suite()
        argv = [self.tunectl, "--connect", suite.control, "run", path]
        self.call(s, argv, cwd, self.env(), "tunectl run")

    def shell(self, s):
        if s.skip is not None:
            self.counts["shell_skip"] += 1
            return
        if "run" not in s.flags:
            self.counts["shell_unmarked"] += 1
            return
        text = s.text
        if s.lang == "console":
            text = "\n".join(line[2:] for line in text.split("\n") if line.startswith("$ "))
        if "cwd" in s.options:
            cwd = self.under_previous_shell(s)
            if cwd is None:
                return
        elif "continue" in s.flags and s.path in self.previous_shell:
            cwd = self.previous_shell[s.path]
        else:
            self.stop_groups()
            cwd = self.folder(s, link_build=True)
            self.previous_shell[s.path] = cwd
        self.counts["shell"] += 1
        self.call(s, ["bash", "-euo", "pipefail", "-c", text], cwd, self.env(), "the commands")

    def run(self, s):
        if s.bad_marker:
            self.fail(s, "empty snippet marker")
        elif s.lang == "python":
            self.python(s)
        elif s.lang in ("yaml", "yml"):
            self.yaml_block(s)
        elif s.lang in SHELLS:
            self.shell(s)
        elif s.flags or s.skip is not None:
            self.fail(s, "a snippet marker on a ```%s block, which this runner never runs" % s.lang)

    def close(self):
        self.stop_groups()
        if self.suite is not None:
            self.suite.close()
        if not self.failures:
            shutil.rmtree(self.scratch, ignore_errors=True)


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def default_files():
    files = [os.path.join(ROOT, "README.md")]
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)):
        if "/_build/" not in path and "/_generated/" not in path:
            files.append(path)
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--show", action="store_true", help="print each snippet's output")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    runner = Runner(args.build, show=args.show)
    if not os.access(runner.tunectl, os.X_OK):
        sys.exit("docs-snippets: no %s (build it: bash scripts/setup)" % runner.tunectl)
    start = time.monotonic()
    try:
        for path in [os.path.abspath(p) for p in args.files] or default_files():
            for snippet in find_snippets(path):
                runner.run(snippet)
            runner.stop_groups()
    finally:
        runner.close()
    c = runner.counts
    for failure in runner.failures:
        print("FAILED " + failure + "\n")
    print(
        "docs-snippets: python %d run (%d skipped), yaml %d validated %d run (%d skipped), "
        "shell %d run (%d skipped, %d unmarked not run); %d failed, %.0f s"
        % (
            c["python"],
            c["python_skip"],
            c["yaml"],
            c["yaml_run"],
            c["yaml_skip"],
            c["shell"],
            c["shell_skip"],
            c["shell_unmarked"],
            len(runner.failures),
            time.monotonic() - start,
        )
    )
    if runner.failures:
        print("docs-snippets: scratch folders kept in " + runner.scratch)
    sys.exit(1 if runner.failures else 0)


if __name__ == "__main__":
    main()
