"""TileLang's ``T.Ref`` macro parameters: ``x: T.Ref`` refers to an element or a
``T.alloc_var`` variable, and assignments to ``x`` in the macro store into it.

:func:`ref_stores` rewrites the macro's source (``x = v`` -> ``__tt_ref_store(x, v)``) before
TVMScript parses it; :func:`ref_store` is that call, made while the macro is expanded."""

from __future__ import annotations

import ast

import tvm
from tvm.script.ir_builder import tirx as _IB
from tvm.tirx import is_buffer_var

from . import language_compat
from .errors import TTCompileError


class Ref:
    """TileLang's ``x: T.Ref`` annotation of a ``@T.macro`` parameter: the argument is an
    element (``A[i]``, ``x[idx]``) or a ``T.alloc_var`` variable, and ``x = v`` / ``x += v``
    in the macro store into it (rather than rebinding the name)."""


_REF_STORE = "__tt_ref_store"


def ref_store(target, value):
    """``x = value`` of a ``T.Ref`` macro parameter bound to ``target``."""
    load = getattr(target, "scalar", target)
    if isinstance(load, tvm.ir.TensorLoad):
        _IB.buffer_store(load.source, value, list(load.indices))
        return None
    if is_buffer_var(load) and len(load.shape) == 1 and int(load.shape[0]) == 1:
        _IB.buffer_store(load, value, [0])
        return None
    what = f"the buffer {load.name} of shape {list(load.shape)}" if is_buffer_var(load) else \
        f"{type(target).__name__} {target}"
    raise language_compat.note_error(TTCompileError(
        f"a T.Ref macro parameter refers to {what}; pass an element (A[i]) or a T.alloc_var "
        "variable, which `x = v` in the macro stores into"))


def ref_stores(tree, refs):
    """``x = v`` / ``x op= v`` of a ``T.Ref`` parameter ``x`` in a macro's body (not in
    functions nested in it) -> ``__tt_ref_store(x, v)`` (``x op v``)."""
    if not refs:
        return tree
    fdef = tree.body[0]

    class Stores(ast.NodeTransformer):
        def visit_FunctionDef(self, node):
            return node if node is not fdef else self.generic_visit(node)

        def store(self, node, name, value):
            call = ast.Call(func=ast.Name(id=_REF_STORE, ctx=ast.Load()),
                            args=[ast.Name(id=name, ctx=ast.Load()), value], keywords=[])
            return ast.copy_location(ast.Expr(value=ast.copy_location(call, node)), node)

        def visit_Assign(self, node):
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and \
                    node.targets[0].id in refs:
                return self.store(node, node.targets[0].id, node.value)
            return node

        def visit_AugAssign(self, node):
            if isinstance(node.target, ast.Name) and node.target.id in refs:
                value = ast.copy_location(ast.BinOp(
                    left=ast.Name(id=node.target.id, ctx=ast.Load()), op=node.op,
                    right=node.value), node)
                return self.store(node, node.target.id, value)
            return node

    return ast.fix_missing_locations(Stores().visit(tree))
