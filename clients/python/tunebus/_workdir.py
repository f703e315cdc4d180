"""The Tuner's staging folder as the working_dir archive the suite ships to every worker.

The same archive `tunectl run` packs for an experiment file without a `working_dir` (the file's
folder, shipped; libs/workdir/working_dir_archive.hpp, docs/reference/experiment-file.md): symbolic
links
followed, `.git/` and `__pycache__/` left out, the results folder left out when it lies inside,
then the patterns of the root's `.tunebusignore` (gitignore rules,
libs/workdir/exclude_matcher.hpp);
at most 100 MiB of file content; packed by the system `tar` with the same flags (GNU format, names
sorted bytewise, mtimes, owners and groups zero), so the same folder gives the same SHA-256 digest
from either client and a resubmission uploads nothing.
"""

import fnmatch
import hashlib
import os
import stat
import subprocess
import tempfile

from tunebus._errors import TuneError

MAX_SIZE_BYTES = 100 << 20  # Ray's working_dir cap, the experiment file's default max_size_mb
IGNORE_FILE = ".tunebusignore"


class WorkingDirArchive:
    """A packed working_dir: `data` (bytes, the tar archive), `digest` (its SHA-256, 64 lowercase
    hex digits), `files` (how many), `content_bytes` (their sizes summed)."""

    def __init__(self, data, files, content_bytes):
        self.data = data
        self.digest = hashlib.sha256(data).hexdigest()
        self.files = files
        self.content_bytes = content_bytes


class ExcludeMatcher:
    """gitignore-like patterns, as libs/workdir/exclude_matcher.hpp: `*`, `?` and `[a-z]` within
    one component, `**` for zero or more components, a `/` at the start or in the middle anchors
    at the root, a trailing `/` matches folders only, a leading `!` re-includes (the last matching
    pattern wins)."""

    def __init__(self):
        self.rules = []  # (components, negated, dir_only)

    def add(self, pattern):
        """Adds `pattern`; ValueError (the reason alone) for one that names nothing or has a `.`
        or `..` component."""
        p, negated, dir_only = pattern, False, False
        if p.startswith("!"):
            negated, p = True, p[1:]
        if p.endswith("/"):
            dir_only, p = True, p.rstrip("/")
        anchored = "/" in p
        components = [c for c in p.lstrip("/").split("/") if c]
        if not components:
            raise ValueError("'%s' names nothing; a pattern needs a name or a glob" % pattern)
        for c in components:
            if c in (".", ".."):
                raise ValueError(
                    "'%s' has a '%s' component; patterns are relative to the working_dir"
                    % (pattern, c)
                )
        if not anchored:
            components.insert(0, "**")
        self.rules.append((components, negated, dir_only))

    def add_ignore_file(self, text, source):
        """Adds each pattern line of a `.tunebusignore` (blank and `#` lines skipped, trailing
        blanks trimmed). TuneError invalid_argument "<source>:<line>: <why>"."""
        for number, line in enumerate(text.split("\n"), 1):
            line = line.rstrip(" \r\t")
            if not line or line.startswith("#"):
                continue
            try:
                self.add(line)
            except ValueError as e:
                raise TuneError("invalid_argument", "%s:%d: %s" % (source, number, e)) from None

    def excluded(self, path, is_dir):
        """Whether `path` (relative, `/`-separated) is left out; `is_dir`: it names a folder."""
        components = [c for c in path.split("/") if c]
        excluded = False
        for pattern, negated, dir_only in self.rules:
            if dir_only and not is_dir:
                continue
            if negated != excluded:
                continue  # only a rule that would change the answer
            if _match(pattern, 0, components, 0):
                excluded = not negated
        return excluded


def _match(pattern, qi, path, pi):
    if qi == len(pattern):
        return pi == len(path)
    if pattern[qi] == "**":
        return any(_match(pattern, qi + 1, path, skip) for skip in range(pi, len(path) + 1))
    if pi == len(path) or not fnmatch.fnmatchcase(path[pi], pattern[qi]):
        return False
    return _match(pattern, qi + 1, path, pi + 1)


def excludes_for(root, results_dir):
    """The matcher `root` is listed with: `.git/`, `__pycache__/`, the results folder when it is
    inside `root`, then the root's `.tunebusignore`."""
    matcher = ExcludeMatcher()
    matcher.add(".git/")
    matcher.add("__pycache__/")
    rel = os.path.relpath(os.path.abspath(results_dir), os.path.abspath(root))
    if results_dir and rel != "." and rel.split(os.sep)[0] != "..":
        matcher.add("/%s/" % rel.replace(os.sep, "/"))
    ignore = os.path.join(root, IGNORE_FILE)
    if os.path.isfile(ignore):
        with open(ignore, errors="replace") as f:
            matcher.add_ignore_file(f.read(), ignore)
    return matcher


def list_files(root, matcher):
    """[(relative path, is_dir, size in bytes)] under `root`, links followed, sorted bytewise.
    TuneError invalid_argument for a link to nothing or a link loop."""
    entries = []

    def walk(folder, rel, ancestors):
        for name in sorted(os.listdir(folder)):
            full = os.path.join(folder, name)
            child = rel + "/" + name if rel else name
            try:
                st = os.stat(full)
            except OSError as e:
                if os.path.islink(full) and matcher.excluded(child, False):
                    continue
                if not os.path.lexists(full):
                    continue  # vanished meanwhile
                raise TuneError(
                    "invalid_argument",
                    "symbolic link %s -> %s points to nothing (%s)"
                    % (child, os.readlink(full), e.strerror),
                ) from None
            is_dir = stat.S_ISDIR(st.st_mode)
            if not is_dir and not stat.S_ISREG(st.st_mode):
                continue  # sockets, FIFOs, devices
            if matcher.excluded(child, is_dir):
                continue
            if is_dir:
                identity = (st.st_dev, st.st_ino)
                if identity in ancestors:
                    raise TuneError(
                        "invalid_argument",
                        "symbolic link loop: %s leads back to %s, a folder that contains it"
                        % (child, os.path.realpath(full)),
                    )
                entries.append((child, True, 0))
                walk(full, child, ancestors + [identity])
            else:
                entries.append((child, False, st.st_size))

    top = os.stat(root)
    walk(root, "", [(top.st_dev, top.st_ino)])
    entries.sort(key=lambda e: e[0].encode("utf-8", "surrogateescape"))
    return entries


def _human(n):
    if n < 1024:
        return "%d B" % n
    if n < 1 << 20:
        return "%.1f KiB" % (n / 1024)
    if n < 1 << 30:
        return "%.1f MiB" % (n / (1 << 20))
    return "%.2f GiB" % (n / (1 << 30))


def pack(root, results_dir, max_size_bytes=MAX_SIZE_BYTES):
    """The WorkingDirArchive of folder `root` (see the module doc). TuneError invalid_argument
    naming `root` for a bad ignore pattern, a broken link, or more than `max_size_bytes` of
    content (with the 5 largest files); internal when tar fails."""
    entries = list_files(root, excludes_for(root, results_dir))
    files = [e for e in entries if not e[1]]
    total = sum(size for _, _, size in files)
    if total > max_size_bytes:
        largest = sorted(files, key=lambda e: (-e[2], e[0]))[:5]
        raise TuneError(
            "invalid_argument",
            "%s holds %s to ship, over the cap of %s; the largest files: %s; exclude them (%s)"
            % (
                root,
                _human(total),
                _human(max_size_bytes),
                ", ".join("%s (%s)" % (p, _human(s)) for p, _, s in largest),
                IGNORE_FILE,
            ),
        )
    with tempfile.NamedTemporaryFile(prefix="tunebus-working-dir-") as names:
        names.write(b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p, _, _ in entries))
        names.flush()
        tar = subprocess.run(
            ["tar", "-c", "-f", "-", "--format=gnu", "--no-recursion", "--dereference",
             "--mtime=@0", "--owner=0", "--group=0", "--numeric-owner", "--null",
             "--verbatim-files-from", "-C", root, "-T", names.name],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
    if tar.returncode != 0:
        raise TuneError(
            "internal",
            "packing %s: tar exited with code %d: %s"
            % (root, tar.returncode, tar.stderr.decode("utf-8", "replace").strip()),
        )
    return WorkingDirArchive(tar.stdout, len(files), total)


__all__ = ["WorkingDirArchive", "ExcludeMatcher", "pack"]
