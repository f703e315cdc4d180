"""Lists the public names of the Python API reference (docs/reference/python-api.md) that have
no docstring of their own, and exits 1 when there is one: every name in `__all__` of tunebus,
tunebus.tune and tunebus.train, and every public method and property of their classes.

Usage: python3 check_docstrings.py   (the source tree's clients/python first on sys.path)
"""

import importlib
import inspect
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODULES = ["tunebus", "tunebus.tune", "tunebus.train"]


def own_doc(obj):
    doc = obj.__doc__ if not isinstance(obj, property) else (obj.fget.__doc__ if obj.fget else None)
    return bool(doc and doc.strip())


def members(cls):
    """The public methods and properties `cls` defines itself (not inherited from a base
    outside the package)."""
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            yield name, value


def missing():
    found = []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        if not own_doc(module):
            found.append(module_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not (inspect.isclass(obj) or callable(obj)):
                continue  # submodules are checked as modules; constants carry no docstring
            where = "%s.%s" % (module_name, name)
            if not own_doc(obj):
                found.append(where)
            if inspect.isclass(obj):
                for member, value in members(obj):
                    if not own_doc(value):
                        found.append("%s.%s" % (where, member))
    return sorted(set(found))


def main():
    sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
    names = missing()
    for name in names:
        print("no docstring: " + name)
    print("check-docstrings: %d public names without a docstring" % len(names))
    sys.exit(1 if names else 0)


if __name__ == "__main__":
    main()
