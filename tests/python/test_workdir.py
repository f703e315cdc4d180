"""tunebus._workdir: the driver's working_dir archive follows libs/workdir's rules (the cases of
tests/unit/working_dir_test.cpp), so a Tuner ships what `tunectl run` would."""

import io
import os
import tarfile

import pytest

from tunebus import _workdir
from tunebus._errors import TuneError


def _write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _names(root, results_dir=""):
    matcher = _workdir.excludes_for(str(root), results_dir)
    return [path for path, _, _ in _workdir.list_files(str(root), matcher)]


def test_gitignore_rules():
    m = _workdir.ExcludeMatcher()
    for pattern in (
        "*.ckpt",
        "data/",
        "/build",
        "docs/**/draft?.md",
        "logs/*.txt",
        "!logs/keep.txt",
    ):
        m.add(pattern)
    assert m.excluded("model.ckpt", False) and m.excluded("a/b/model.ckpt", False)
    assert not m.excluded("model.ckpt.json", False)
    assert m.excluded("data", True) and m.excluded("sub/data", True)
    assert not m.excluded("data", False)  # a file named data is not a folder
    assert m.excluded("build", True) and m.excluded("build", False)
    assert not m.excluded("src/build", True)  # anchored at the root
    assert m.excluded("docs/draft1.md", False) and m.excluded("docs/a/b/draft2.md", False)
    assert not m.excluded("docs/a/final.md", False)
    assert m.excluded("logs/run.txt", False) and not m.excluded("logs/keep.txt", False)
    assert not m.excluded("x/logs/run.txt", False)  # a middle slash anchors too
    assert not m.excluded("train.py", False)


def test_ignore_file_names_the_bad_line():
    m = _workdir.ExcludeMatcher()
    m.add_ignore_file("# big files\n\n*.bin   \nlogs/\n", ".tunebusignore")
    assert len(m.rules) == 2
    assert m.excluded("w/weights.bin", False) and m.excluded("logs", True)
    with pytest.raises(TuneError) as e:
        _workdir.ExcludeMatcher().add_ignore_file("ok\n# c\n!\n", "/w/.tunebusignore")
    assert e.value.code == "invalid_argument"
    assert e.value.message == (
        "/w/.tunebusignore:3: '!' names nothing; a pattern needs a name or a glob"
    )


def test_always_excluded_ignore_file_and_results_folder(tmp_path):
    for rel, text in (
        ("train.py", "print(1)\n"),
        ("pkg/util.py", "x = 1\n"),
        (".git/HEAD", "r"),
        ("pkg/__pycache__/util.cpython-311.pyc", "b"),
        ("results/exp/p.json", "{}"),
        ("big.bin", "0123456789"),
        (".tunebusignore", "# weights\n*.bin\n"),
    ):
        _write(tmp_path, rel, text)
    assert _names(tmp_path, str(tmp_path / "results")) == [
        ".tunebusignore",
        "pkg",
        "pkg/util.py",
        "train.py",
    ]


def test_links_ship_their_targets_and_a_loop_is_an_error(tmp_path):
    user, staging = tmp_path / "user", tmp_path / "staging"
    _write(user, "train.py", "print('hi')\n")
    _write(user, "lib/m.py", "m = 1\n")
    _write(staging, "_tunebus/run_trainable.py", "run\n")
    os.symlink(user / "train.py", staging / "train.py")
    os.symlink(user / "lib", staging / "lib")
    assert _names(staging) == [
        "_tunebus",
        "_tunebus/run_trainable.py",
        "lib",
        "lib/m.py",
        "train.py",
    ]
    archive = _workdir.pack(str(staging), "")
    with tarfile.open(fileobj=io.BytesIO(archive.data)) as tar:
        member = tar.getmember("train.py")
        assert member.isfile() and member.mtime == 0 and member.uid == 0
        assert tar.extractfile(member).read() == b"print('hi')\n"  # content, not a link
    os.symlink(staging, user / "lib" / "loop")
    with pytest.raises(TuneError) as e:
        _names(staging)
    assert e.value.message == (
        "symbolic link loop: lib/loop leads back to %s, a folder that contains it" % staging
    )


def test_same_folder_same_digest_and_a_changed_file_another(tmp_path):
    for folder in ("a", "b"):
        for rel, text in (
            ("train.py", "import tunebus\n"),
            ("pkg/z.py", "z\n"),
            ("pkg/a-b.py", "ab\n"),
        ):
            _write(tmp_path / folder, rel, text)
    a = _workdir.pack(str(tmp_path / "a"), "")
    b = _workdir.pack(str(tmp_path / "b"), "")
    assert a.data == b.data and a.digest == b.digest and a.files == 3
    _write(tmp_path / "b", "pkg/z.py", "Z\n")
    assert _workdir.pack(str(tmp_path / "b"), "").digest != a.digest


def test_over_the_cap_names_the_largest_files(tmp_path):
    _write(tmp_path, "train.py", "x" * 3000)
    with pytest.raises(TuneError) as e:
        _workdir.pack(str(tmp_path), "", max_size_bytes=1000)
    assert e.value.code == "invalid_argument"
    assert e.value.message.startswith(
        "%s holds 2.9 KiB to ship, over the cap of 1000 B; the largest files: train.py (2.9 KiB)"
        % tmp_path
    )
