"""A callback run once a module has been imported, without importing it.

fmhajit.attention is a C function, which torch.compile cannot trace: Dynamo
must be told to trace its Python def instead (fmhajit/_torch.py), and telling
it imports Dynamo, which importing fmhajit must not do (it takes seconds).
torch.compile imports Dynamo before it traces, so fmhajit waits for that
import, whichever of torch and fmhajit was imported first.
"""

import sys


class _AfterImport:
    """A meta path finder that lets the other finders find `name`, then has
    its loader run `callback` once the module has executed; it removes itself
    on the first search for `name`."""

    def __init__(self, name, callback):
        self.name, self.callback = name, callback

    def find_spec(self, name, path, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec

        def exec_module(module, run=loader.exec_module, then=self.callback):
            run(module)
            then()

        loader.exec_module = exec_module
        return spec


def call_after_import(name, callback):
    """Runs `callback` once module `name` is imported: now if it is."""
    if name in sys.modules:
        callback()
    else:
        sys.meta_path.insert(0, _AfterImport(name, callback))
