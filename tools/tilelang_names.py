"""List the names ``tilelang.language`` exports (its ``__all__``) from a TileLang source
distribution, without importing TileLang (which needs CUDA, torch and its own TVM build).

    python tools/tilelang_names.py /tmp/tl/tilelang-0.1.14 > testing/data/tilelang_language_names.txt

Each module's top-level statements are executed one at a time in a fresh namespace; imports
of TileLang's own modules (and of the TVM it vendors under 3rdparty/tvm/python) are resolved
to those files recursively, standard-library imports are real imports, and any statement
that fails (an import of torch, a decorator needing the compiled library) is skipped.  That is
enough to evaluate the ``__all__`` expressions, which only concatenate name lists.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from pathlib import Path


class _Resolver:
    def __init__(self, root: Path):
        self.roots = [root, root / "3rdparty" / "tvm" / "python"]
        self.cache: dict[str, types.SimpleNamespace | None] = {}

    def file_of(self, modname: str) -> Path | None:
        parts = modname.split(".")
        for r in self.roots:
            base = r.joinpath(*parts)
            for cand in (base / "__init__.py", base.with_suffix(".py")):
                if cand.is_file():
                    return cand
        return None

    def module(self, modname: str):
        if modname in self.cache:
            return self.cache[modname]
        top = modname.split(".")[0]
        if top in sys.stdlib_module_names:
            mod = importlib.import_module(modname)
            self.cache[modname] = mod
            return mod
        path = self.file_of(modname)
        if path is None:
            self.cache[modname] = None
            return None
        ns = types.SimpleNamespace()
        self.cache[modname] = ns  # cycles see a partial module, as Python's import does
        is_pkg = path.name == "__init__.py"
        package = modname if is_pkg else modname.rpartition(".")[0]
        env = {"__name__": modname, "__file__": str(path)}
        for stmt in ast.parse(path.read_text()).body:
            self._run(stmt, env, package)
        for k, v in env.items():
            setattr(ns, k, v)
        return ns

    def _absolute(self, node: ast.ImportFrom, package: str) -> str:
        if not node.level:
            return node.module or ""
        base = package.split(".")
        if node.level > 1:
            base = base[: len(base) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))

    def _run(self, stmt, env, package):
        if isinstance(stmt, ast.ImportFrom):
            src = self._absolute(stmt, package)
            mod = self.module(src)
            for alias in stmt.names:
                if alias.name == "*":
                    if mod is not None:
                        for n in getattr(mod, "__all__", ()):
                            if hasattr(mod, n):
                                env[n] = getattr(mod, n)
                    continue
                value = getattr(mod, alias.name, None) if mod is not None else None
                if value is None:
                    sub = self.module(f"{src}.{alias.name}")
                    value = sub
                if value is not None:
                    env[alias.asname or alias.name] = value
            return
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                mod = self.module(alias.name)
                if mod is not None and alias.asname:
                    env[alias.asname] = mod
            return
        try:
            exec(compile(ast.Module([stmt], []), env.get("__file__", "<m>"), "exec"), env)
        except Exception:
            pass


def language_names(root: Path) -> list[str]:
    ns = _Resolver(Path(root)).module("tilelang.language")
    return list(dict.fromkeys(ns.__all__))


if __name__ == "__main__":
    for name in language_names(Path(sys.argv[1])):
        print(name)
