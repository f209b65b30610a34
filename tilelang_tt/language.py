"""TileLang-compatible kernel language: ``import tilelang_tt.language as T``.

Kernels written for TileLang compile with only the import changed.  Parsing is TVM's own
TVMScript parser; the TileLang tile ops are lowered at parse time onto TVM 0.27's native tile
primitives (``TilePrimitiveCall`` nodes ``tirx.tile.copy`` / ``gemm`` / ``fill`` / ``sum`` /
``max``), so the frontend IR prints and parses as ordinary TVMScript:

==========================  ===============================================================
TileLang                    frontend TIR
==========================  ===============================================================
``T.Kernel(gx, gy)``        ``launch_thread("blockIdx.x", gx)``, ``("blockIdx.y", gy)``
``T.alloc_shared``          ``alloc_buffer(scope="shared")``
``T.alloc_fragment``        ``alloc_buffer(scope="local.fragment")``
``T.copy(src, dst)``        ``tile.copy(dst_region, src_region)`` (TileLang operand order
                            swapped; an element operand takes its extent from the other side)
``T.gemm(A, B, C, ...)``    ``tile.gemm(C, A, B, C, transpose_A, transpose_B, 1, beta)`` with
                            ``beta = 0`` when ``clear_accum`` else ``1`` (C += A @ B)
``T.clear`` / ``T.fill``    ``tile.fill(dst, value)``
``T.Pipelined(n, k)``       serial loop annotated ``{"num_stages": k}``
``T.Parallel(...)``         a loop nest of kind ``parallel``
``T.reduce_sum/max``        ``tile.sum`` / ``tile.max``
``T.transpose(src, dst)``   ``tt.tile.expr(dst, tt.expr.load_t(0), src)`` (dst[j, i] = src[i, j])
==========================  ===============================================================

Dtypes are TileLang's (``T.float32 == "float32"``, callable as casts; tilelang_tt/dtypes.py).
TileLang names without a Tensix lowering are no-ops or refusals (tilelang_tt/language_compat.py);
anything else in TVMScript (``T.exp``, ``T.max``, ``T.if_then_else`` ...) is forwarded unchanged.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import threading
import typing

import tvm
import tvm_ffi
from tvm import tirx
from tvm.ir import TensorRegion
from tvm.script import tirx as _T
from tvm.script.ir_builder import tirx as _IB
from tvm.tirx import is_buffer_var

from . import attrs, language_compat, language_reducer, ops
from .dtypes import (DTYPES, REFUSED_DTYPES, AnyDType, dtype, dtype_name, get_tvm_dtype,  # noqa: F401,E501
                     is_f8f6f4_family, is_float4, is_float4_e2m1_unpacked, is_float4_e2m1fn,
                     validate_gemm_ab_dtypes)
from .errors import (TTArgumentError, TTAssertionError, TTCompileError, TTDtypeError,
                     TTLayoutError, TTUnsupportedError)
from .language_compat import GemmWarpPolicy, LayoutHint  # noqa: F401
from .language_reducer import (alloc_reducer, finalize_reducer, reducer_init,  # noqa: F401
                               reducer_update)
from .language_ref import _REF_STORE, Ref, ref_store, ref_stores  # noqa: F401
from .language_logical import all_of, any_of  # noqa: F401
from .language_reshape import reshape, view  # noqa: F401
from .language_atomic import (atomic_add, atomic_load, atomic_max, atomic_min,  # noqa: F401
                              atomic_store)

ceildiv = _T.ceildiv
cdiv = _T.ceildiv
Any = typing.Any
PrimExpr = tvm.ir.Expr
# TileLang's tilelang.language is a package: its submodules (tilelang.language.fp8, .dtypes,
# .common ...) are served by _tilelang_modules
__path__: list = []
PrimFunc = tirx.PrimFunc
SizeVar = tvm.ir.Var
StringImm = tvm.ir.StringImm
grid = _T.grid
Layout = LayoutHint
Fragment = LayoutHint
PartialFragment = LayoutHint

_STATE = threading.local()
_PARSE_LOCK = threading.RLock()


def _parallel_vars() -> set:
    if not hasattr(_STATE, "parallel_vars"):
        _STATE.parallel_vars = []
    return _STATE.parallel_vars


def _pending_prints() -> list:
    """``(block buffer, print id)`` of each ``T.print(buffer)`` parsed and not yet claimed by a
    ``T.copy(buffer, tensor)`` (language_debug.py)."""
    if not hasattr(_STATE, "pending_prints"):
        _STATE.pending_prints = []
    return _STATE.pending_prints


def _persistent_loops() -> list:
    """``(first loop var, [wave_size, index, group_size])`` of each ``T.Persistent`` parsed."""
    if not hasattr(_STATE, "persistent_loops"):
        _STATE.persistent_loops = []
    return _STATE.persistent_loops


# --------------------------------------------------------------------------------------------
# the names a kernel's source reads
# --------------------------------------------------------------------------------------------
def defining_scope(fn, tree=None) -> dict:
    """The values, in the scope whose code runs ``fn``'s ``def`` (a factory's arguments and
    locals), of the names ``fn``'s source reads that ``fn`` neither binds (parameters, locals)
    nor has as closure cells.  Those are the names only its signature (or decorator) reads
    (``A: T.Tensor((M, N), dtype)``): Python evaluates a signature where the ``def`` runs, so
    they are no free variables of ``fn`` (a body's annotations make theirs closure cells);
    TVMScript evaluates the annotations again from what it is given, and without these a
    module-level ``dtype`` would take the place of the factory's argument of that name
    (Python's rule: the defining scope's names shadow the globals).

    The scope is found on the call stack, so call this while that code runs (when a decorator
    is applied to ``fn``): ``{}`` when it is not there, and for a function defined at module
    level (its scope is its globals).  ``tree``: the AST of ``fn``'s source, if at hand."""
    import ast
    import sys

    code = fn.__code__
    frame = sys._getframe(1)
    try:
        while frame is not None and not any(c is code for c in frame.f_code.co_consts):
            frame = frame.f_back
        if frame is None or frame.f_locals is fn.__globals__:
            return {}
        scope = dict(frame.f_locals)
    finally:
        del frame
    if tree is None:
        tree = ast.parse(_diagnostics().Source(fn).source)
    own = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return {name: scope[name] for name in read - own if name in scope}


def function_names(fn, scope: dict) -> dict:
    """What a kernel's source may read, resolved as Python resolves it: ``fn``'s globals, then
    ``scope`` (:func:`defining_scope`), then its closure cells."""
    from tvm.script.parser._core import utils

    return {**fn.__globals__, **scope, **utils.get_func_nonlocals(fn)}


# --------------------------------------------------------------------------------------------
# prim_func
# --------------------------------------------------------------------------------------------
def prim_func(func=None, *, private: bool = False, check_well_formed: bool = True):
    """Parse a TileLang-style kernel into a ``tvm.tirx.PrimFunc`` (``@T.prim_func``).  Names
    resolve as in Python (:func:`function_names`): a factory's ``dtype`` argument read in the
    signature shadows a module-level ``dtype``."""

    def decorate(fn):
        import ast

        if not inspect.isfunction(fn):
            raise TypeError(f"@T.prim_func expects a function, got {fn!r}")
        _refuse_strided_signature(fn)
        if _is_eager_form(fn):
            from .jit import eager

            return eager.build_prim_func(fn)
        tree = ast.parse(_diagnostics().Source(fn).source)
        names = function_names(fn, defining_scope(fn, tree))
        return _parse_kernel(fn, names, tree, check_well_formed)

    if func is None:
        return decorate
    return decorate(func)


def macro(*args, hygienic: bool = True):
    """TileLang's ``@T.macro``: TVMScript's macro, whose body is expanded where it is called;
    as in TileLang, a macro whose body ends with ``return value`` is an expression of that value
    (``idx[i] = transform(frag[i])``), which TVM 0.27's macros do not give (they return None)."""
    from tvm.script.parser._core import scan_macro
    from tvm.tirx.script.parser.entry import TIRMacro

    class Macro(TIRMacro):
        def parse_macro(self, parser):
            from tvm.script.parser.core import doc
            from tvm.tirx.script.builder import block_name_suffix_context

            body = list(self.get_macro_def().body)
            ret = body.pop() if body and isinstance(body[-1], doc.Return) else None
            suffix = f"_{self.call_count}" if self.call_count > 0 else ""
            self.call_count += 1
            with block_name_suffix_context(suffix):
                parser.visit_body(body)
                if ret is not None and ret.value is not None:
                    return parser.eval_expr(ret.value)
            return None

    def decorate(func):
        import ast

        source, _ = scan_macro(func, {})
        signature = inspect.signature(func)
        params = set(signature.parameters)
        refs = {n for n, p in signature.parameters.items()
                if p.annotation is Ref or (isinstance(p.annotation, str) and
                                           p.annotation.split(".")[-1] == "Ref")}
        # the body reads as a kernel's does (Python values stay Python values, `assert` on
        # them is checked now ...): the same rewrite, the macro's parameters kept as they are
        # (a T.alloc_var variable passed in is stored into); `x = v` of a T.Ref parameter
        # stores v where x refers
        parsed = ast.parse(source.source)
        scope = defining_scope(func, parsed)
        tree = _bind_python_values(ref_stores(parsed, refs), keep=params)
        source = _rewritten_source(tree, func)(func)

        def closure_vars():
            """The macro's names when it is expanded (:func:`function_names`: its globals
            and closure cells then, so it may call itself or a function defined after it, as
            in Python), less the names its parameters take (a global `A` next to a parameter
            `A`: TVMScript would see it defined twice)."""
            captured = function_names(func, scope)
            return {**{k: v for k, v in captured.items() if k not in params},
                    **_rewrite_helpers()}

        obj = Macro(source, closure_vars(), func, hygienic)

        def wrapper(*a, **k):
            obj.closure_vars = closure_vars()
            return obj(*a, **k)

        return wrapper

    if len(args) == 0:
        return decorate
    if len(args) == 1 and inspect.isfunction(args[0]):
        return decorate(args[0])
    raise TTArgumentError("invalid use of T.macro: write @T.macro or @T.macro()")


macro.dispatch_token = "tir.macro"


def _is_eager_form(fn) -> bool:
    """TileLang's eager form: a parameter without an annotation in the signature (tensors
    annotated in the body, ``A: T.Tensor[(M, N), dtype]``) or outputs returned (``return C``
    of ``C = T.empty(...)``) at the top level of the body."""
    import ast

    from tvm.script.parser.core import diagnostics

    params = inspect.signature(fn).parameters.values()
    if any(p.annotation is inspect.Parameter.empty for p in params):
        return True
    try:
        fdef = ast.parse(diagnostics.Source(fn).source).body[0]
    except (OSError, TypeError):  # no source: TVMScript's parser reports it
        return False
    return any(isinstance(st, ast.Return) and st.value is not None for st in fdef.body)


def prim_func_from_tree(fn, extra_vars: dict, tree, check_well_formed: bool = True):
    """Parse ``tree`` (a rewritten AST of ``fn``'s source, see tilelang_tt.jit) as a kernel."""
    return _parse_kernel(fn, extra_vars, tree, check_well_formed)


_BIND = "__tt_bind"
_READ = "__tt_read"
_REGION_STORE = "__tt_region_store"
_ASSERT = "__tt_assert"
# Python's builtin types, as annotations of kernel-body assignments (`dtype: str = ...`)
_PY_TYPES = ("str", "int", "float", "bool", "list", "tuple", "dict")


def region_store(dst, value):
    """``A[0, 4:8] = v`` (a store to a sliced target, as TileLang writes vector stores):
    ``T.copy(v, A[0, 4:8])`` when ``v`` is a buffer or a region, else ``T.fill`` with ``v``."""
    if is_buffer_var(value) or isinstance(value, TensorRegion):
        return copy(value, dst)
    return fill(dst, value)


def read_variable(value):
    """A T.alloc_var variable read in an expression: its element load."""
    return getattr(value, "scalar", value)


def python_value(value, unpacked=False):
    """TileLang keeps Python values assigned in a kernel (``dtype = T.float``, ``scale =
    1.44 / d``, ``n = T.ceildiv(N, 64)``) as Python values; TVMScript would store them in a
    scalar variable.  Assignments go through this function (see :func:`_bind_python_values`).
    ``unpacked``: the value is unpacked into several names (``M, N = A.shape``): each element
    that is a constant or a size variable stays that value (an int, the shape's own variable),
    as TileLang's ``M, N = A.shape`` gives the tensor's sizes."""
    from tvm.script.ir_builder import ir as _I

    if unpacked and isinstance(value, (tuple, list, tvm.ir.Array)):
        return tuple(_I.meta_var(v) if isinstance(v, tirx.Var) else python_value(v)
                     for v in value)

    if isinstance(value, tirx.IntImm) and str(value.ty) == "int32":
        return _I.meta_var(int(value.value))
    if isinstance(value, (bool, int, float, str)) or (
            isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str))
                                             for v in value)):
        return _I.meta_var(value)
    return value


def python_assert(cond, msg=None):
    """``assert cond, msg`` in a kernel, as TileLang's builder treats it: a condition on
    Python values (``assert num_stages == 0``) is checked now (TTAssertionError when it fails);
    a condition on kernel values (block indices, loop variables, dynamic sizes) would be a
    device-side check, which is refused."""
    if isinstance(cond, tirx.IntImm):
        cond = bool(cond.value)
    if isinstance(cond, tvm.ir.Expr):
        raise language_compat.note_error(TTUnsupportedError(
            f"assert {cond}: an assertion on kernel values (block indices, loop variables, "
            "dynamic sizes) would be checked on the device, which is not supported; check the "
            "sizes in Python before launching the kernel, or remove the assert"))
    if not cond:
        text = "Assertion failed" if msg is None else str(msg)
        raise language_compat.note_error(TTAssertionError(f"assert in the kernel: {text}"))
    return None


def _bind_python_values(tree, keep=()):
    """Wrap the value of every assignment in the kernel (not in nested functions) in
    ``__tt_bind(...)``; the nodes keep their source locations.  ``keep``: names whose
    assignments stay as TVMScript reads them (a macro's parameters: a T.alloc_var variable
    passed in is stored into)."""
    import ast
    import copy

    tree = copy.deepcopy(tree)
    fdef = tree.body[0]

    class KernelBody(ast.NodeTransformer):
        """Rewrites the kernel's own body, not the functions nested in it."""

        def visit_FunctionDef(self, node):
            return node if node is not fdef else self.generic_visit(node)

    class SplitChains(ast.NodeTransformer):
        """``a = b = v`` (TileLang accepts it; TVMScript does not): ``a = v`` then ``b = v``
        (v is an expression without side effects)."""

        def visit_Assign(self, node):
            if len(node.targets) == 1:
                return node
            return [ast.copy_location(ast.Assign(targets=[t], value=copy.deepcopy(node.value)),
                                      node) for t in node.targets]

    class OneBlockIndex(ast.NodeTransformer):
        """``with T.Kernel(n) as (bx,):`` (TileLang unpacks a 1-D launch as a one-tuple): the
        single block index is ``bx``."""

        def visit_With(self, node):
            self.generic_visit(node)
            for item in node.items:
                call = item.context_expr
                target = item.optional_vars
                if isinstance(call, ast.Call) and isinstance(target, (ast.Tuple, ast.List)) \
                        and len(target.elts) == 1 and len(call.args) == 1 and \
                        not isinstance(call.args[0], (ast.Tuple, ast.List, ast.Starred)) and \
                        ((isinstance(call.func, ast.Attribute) and call.func.attr == "Kernel")
                         or (isinstance(call.func, ast.Name) and call.func.id == "Kernel")):
                    item.optional_vars = target.elts[0]
            return node

    class RegionStores(ast.NodeTransformer):
        """``A[0, 4:8] = v`` (a slice in the stored subscript) -> ``__tt_region_store(A[0,
        4:8], v)`` (TVMScript stores only elements)."""

        def visit_Assign(self, node):
            target = node.targets[0] if len(node.targets) == 1 else None
            if isinstance(target, ast.Subscript) and any(
                    isinstance(n, ast.Slice) for n in ast.walk(target.slice)):
                load = copy.deepcopy(target)
                for n in ast.walk(load):
                    if hasattr(n, "ctx"):
                        n.ctx = ast.Load()
                call = ast.Call(func=ast.Name(id=_REGION_STORE, ctx=ast.Load()),
                                args=[load, node.value], keywords=[])
                return ast.copy_location(ast.Expr(value=ast.copy_location(call, node)), node)
            return node

    class Asserts(KernelBody):
        """``assert c, m`` -> ``__tt_assert(c, m)`` (TVMScript makes every assert a T.Assert,
        which takes no Python bool)."""

        def visit_Assert(self, node):
            args = [node.test] + ([node.msg] if node.msg is not None else [])
            call = ast.Call(func=ast.Name(id=_ASSERT, ctx=ast.Load()), args=args, keywords=[])
            return ast.copy_location(ast.Expr(value=ast.copy_location(call, node)), node)

    class Generators(KernelBody):
        """``sum(f(s) for s in sizes)`` -> ``sum([f(s) for s in sizes])``: TVMScript evaluates a
        list comprehension as Python but walks into a generator expression, whose loop
        variable it then does not know."""

        def visit_GeneratorExp(self, node):
            self.generic_visit(node)
            return ast.copy_location(ast.ListComp(elt=node.elt, generators=node.generators), node)

    class PythonAnnotations(KernelBody):
        """``dtype: str = T.bfloat16`` (a Python type annotation, as TileLang's eager-form
        bodies write): the plain assignment; TVMScript would declare a typed scalar."""

        def visit_AnnAssign(self, node):
            ann = node.annotation
            if isinstance(ann, ast.Subscript):  # list[int], tuple[int, ...]
                ann = ann.value
            if node.value is not None and isinstance(node.target, ast.Name) and \
                    isinstance(ann, ast.Name) and ann.id in _PY_TYPES:
                return ast.copy_location(ast.Assign(targets=[node.target], value=node.value),
                                         node)
            return node

    class TupleStores(KernelBody):
        """``a, b = b, a`` / ``A[0], A[1] = A[1], A[0]`` (a tuple of values stored into T.alloc_var
        variables or elements; TileLang assigns them as Python does, TVMScript redefines
        the names): every value is bound first (``__tt_tuple_<line>_<k> = b``), then stored
        (``a = __tt_tuple_<line>_0``). Unpacking into plain names (``M, N = A.shape``) stays."""

        def __init__(self, declared):
            self.declared = declared

        def visit_Assign(self, node):
            target = node.targets[0] if len(node.targets) == 1 else None
            if not (isinstance(target, (ast.Tuple, ast.List)) and
                    isinstance(node.value, (ast.Tuple, ast.List)) and
                    len(target.elts) == len(node.value.elts) and
                    not any(isinstance(e, ast.Starred) for e in target.elts + node.value.elts) and
                    any(isinstance(e, ast.Subscript) or
                        (isinstance(e, ast.Name) and e.id in self.declared)
                        for e in target.elts)):
                return node
            temps = [f"__tt_tuple_{node.lineno}_{node.col_offset}_{k}"
                     for k in range(len(target.elts))]
            out = [ast.copy_location(ast.Assign(targets=[ast.Name(id=t, ctx=ast.Store())],
                                                value=v), node)
                   for t, v in zip(temps, node.value.elts)]
            out += [ast.copy_location(ast.Assign(targets=[e], value=ast.Name(id=t,
                                                                             ctx=ast.Load())),
                                      node) for e, t in zip(target.elts, temps)]
            return out

    def declared_variables(fdef):
        names = set()
        for n in ast.walk(fdef):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and \
                    isinstance(n.targets[0], ast.Name) and isinstance(n.value, ast.Call):
                func = n.value.func
                if (isinstance(func, ast.Attribute) and func.attr == "alloc_var") or \
                        (isinstance(func, ast.Name) and func.id == "alloc_var"):
                    names.add(n.targets[0].id)
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and \
                    n.value is not None:
                names.add(n.target.id)
        return names

    tree = ast.fix_missing_locations(PythonAnnotations().visit(Generators().visit(tree)))
    tree = ast.fix_missing_locations(TupleStores(declared_variables(tree.body[0])).visit(tree))
    tree = ast.fix_missing_locations(Asserts().visit(
        RegionStores().visit(OneBlockIndex().visit(SplitChains().visit(tree)))))
    fdef = tree.body[0]
    variables = set()  # names bound to T.alloc_var(...) or declared `x: T.int32 = v`: a later
    # `x = v` stores into x

    def is_alloc_var(value):
        func = value.func if isinstance(value, ast.Call) else None
        return (isinstance(func, ast.Attribute) and func.attr == "alloc_var") or \
            (isinstance(func, ast.Name) and func.id == "alloc_var")

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                  ast.ClassDef)):
                continue
            if isinstance(child, ast.AnnAssign) and child.value is not None and \
                    isinstance(child.target, ast.Name):
                # `a: T.int32 = 1` declares a scalar as T.alloc_var does: a later `a = v`
                # stores into it (Python-typed annotations were made plain assignments above)
                variables.add(child.target.id)
            if isinstance(child, ast.Assign) and len(child.targets) == 1 and \
                    isinstance(child.targets[0], ast.Name):
                if is_alloc_var(child.value):
                    variables.add(child.targets[0].id)
                elif child.targets[0].id in variables:
                    visit(child)  # a store into the variable: TVMScript converts the value
                    continue
            if isinstance(child, ast.Assign) and not isinstance(child.targets[0], ast.Subscript) \
                    and not (isinstance(child.targets[0], ast.Name) and
                             child.targets[0].id in keep):
                # a name's binding (a store `A[i] = v` takes v as TVMScript converts it)
                unpacked = isinstance(child.targets[0], (ast.Tuple, ast.List))
                call = ast.Call(func=ast.Name(id=_BIND, ctx=ast.Load()),
                                args=[child.value] + ([ast.Constant(True)] if unpacked else []),
                                keywords=[])
                child.value = ast.copy_location(call, child.value)
                ast.fix_missing_locations(child)
            visit(child)

    visit(fdef)

    class ReadVariables(KernelBody):
        """A read of a T.alloc_var variable is its element load (``__tt_read(x)``), an
        expression every T.* function takes (TVMScript's scalar wrapper is not one)."""

        def visit_Lambda(self, node):
            return node

        def visit_Name(self, node):
            if node.id in variables and isinstance(node.ctx, ast.Load):
                call = ast.Call(func=ast.Name(id=_READ, ctx=ast.Load()), args=[node],
                                keywords=[])
                return ast.copy_location(call, node)
            return node

    if variables:
        tree = ast.fix_missing_locations(ReadVariables().visit(tree))
    return tree


def _rewrite_helpers() -> dict:
    """The functions the code :func:`_bind_python_values` writes calls."""
    return {_BIND: python_value, _READ: read_variable, _REGION_STORE: region_store,
            _ASSERT: python_assert, _REF_STORE: ref_store}


def _parse_kernel(fn, extra_vars, tree, check_well_formed):
    import ast

    from tvm.script.parser.core import diagnostics

    if tree is None:
        tree = ast.parse(diagnostics.Source(fn).source)
    tree = _bind_python_values(tree)
    extra_vars = {**extra_vars, **_rewrite_helpers()}
    _parallel_vars().clear()
    _persistent_loops().clear()
    _pending_prints().clear()
    _alias_specs().clear()
    _func_annotations().clear()
    language_reducer.reset()
    language_compat.take_noted_error()
    parsing = _STATE.__dict__.get("parsing", False)
    _STATE.parsing = True
    try:
        parsed = parse_function(fn, extra_vars, check_well_formed=check_well_formed, tree=tree)
    except tvm.error.DiagnosticError as err:
        # keep the class of a TT error raised by a T.* call inside the kernel
        noted = language_compat.take_noted_error()
        cls = type(noted) if isinstance(noted, TTCompileError) else TTCompileError
        text = str(err)
        cause = _parse_cause(err)
        if cause is not None and re.search(r"error: *\n", text):  # TVMScript printed no text
            text = re.sub(r"error: *\n", f"error: {type(cause).__name__} (without a "
                          "message)\n", text, count=1)
        cls, text = _tvm_parse_error_text(cls, text)
        raise cls(f"cannot parse kernel {fn.__name__!r}:\n{text}") from None
    finally:
        _STATE.parsing = parsing
        marked = list(_parallel_vars())
        _parallel_vars().clear()
        persistent = list(_persistent_loops())
        _persistent_loops().clear()
        specs = list(_alias_specs())
        _alias_specs().clear()
        annotations = dict(_func_annotations())
        _func_annotations().clear()
    language_reducer.check_finalized()
    parsed = language_reducer.finish(parsed)
    language_reducer.reset()
    parsed = _mark_parallel_loops(parsed, marked)
    parsed = _mark_persistent_loops(parsed, persistent)
    if specs:
        parsed = parsed.with_attr(attrs.L1_ALIAS_REQUEST, specs)
    for key, value in annotations.items():
        parsed = parsed.with_attr(key, value)
    return parsed


# TVM's own checks that TileLang programs can reach while a kernel is parsed: its text (a C++
# check's condition) replaced by what the construct is and what to write instead
_TVM_PARSE_ERRORS = (
    (re.compile(r"error: Check failed: .*Buffer slices with a non-unit step are not supported"),
     TTUnsupportedError,
     "error: a buffer slice with a step other than 1 (`A[0:10:2]`) is not supported: a region "
     "of a tensor or block buffer is a contiguous box of elements (moved as 32x32 tiles); "
     "slice with step 1"),
)


def _tvm_parse_error_text(cls, text):
    """The class and text of a parse error whose message is one of TVM's known checks
    (``_TVM_PARSE_ERRORS``), the source line (`-->`) kept; others unchanged."""
    for pattern, new_cls, message in _TVM_PARSE_ERRORS:
        if pattern.search(text):
            return new_cls, pattern.sub(lambda _m: message, text, count=1)
    return cls, text


def _parse_cause(err):
    """The exception a TVMScript DiagnosticError reports (the innermost one it was raised
    while handling), or None."""
    cause, seen = err.__context__, 0
    while isinstance(cause, tvm.error.DiagnosticError) and seen < 16:
        cause, seen = cause.__context__, seen + 1
    return cause


# the TVMScript parser dispatches on the decorator's token
prim_func.dispatch_token = "tirx"


def parse_function(fn, extra_vars: dict, *, check_well_formed: bool = True, tree=None):
    """TVMScript-parse ``fn``; ``tree`` replaces its source's AST (tilelang_tt.jit rewrites the
    eager form) while spans keep pointing at the user's file and lines.

    ``check_well_formed``: TVMScript's well-formedness checks of a PrimFunc (s_tir's and tirx's
    verifiers, reported as TVMScript reports them); run here rather than by TVMScript's parse,
    whose check first asks whether the result is a relax function, which imports tvm.relax
    (kept lazy by tilelang_tt's import of TVM, see _tvm_import.py)."""
    from tvm.script.parser._core import parse

    if tree is None:
        func = parse(fn, extra_vars, check_well_formed=False)
    else:
        from tvm.script.parser.core import entry

        source_cls = _rewritten_source(tree, fn)
        with _PARSE_LOCK:  # entry.parse builds its Source from the module-level name
            entry.Source = source_cls
            try:
                func = parse(fn, extra_vars, check_well_formed=False)
            finally:
                entry.Source = _diagnostics().Source
    if check_well_formed:
        _check_well_formed(func, fn, tree)
    return func


def _diagnostics():
    from tvm.script.parser.core import diagnostics

    return diagnostics


def _rewritten_source(tree, fn=None):
    """TVMScript's Source class with ``tree`` as the AST of ``fn`` (of every program when
    ``fn`` is None); other programs (a ``T.macro`` defined while the kernel is parsed, whose
    Source TVMScript builds through the same name) keep their own AST."""
    from tvm.script.parser.core import doc

    doc_tree = doc.to_doc(tree)

    class _Rewritten(_diagnostics().Source):
        def __init__(self, program):
            super().__init__(program)
            self._rewritten = fn is None or program is fn

        def as_ast(self):
            return doc_tree if self._rewritten else super().as_ast()

    return _Rewritten


def _check_well_formed(func, fn, tree) -> None:
    """What TVMScript's parse checks of a parsed PrimFunc, and its report of a failure."""
    check = func if isinstance(func, tvm.IRModule) else tvm.IRModule.from_expr(func)
    try:
        # tvm.s_tir.analysis.verify_well_formed, called without importing tvm.s_tir (its package
        # imports the meta-scheduler: 0.15 s)
        tvm_ffi.get_global_func("s_tir.analysis.VerifyWellFormed")(check, True)
        for f in check.functions.values():
            if isinstance(f, tirx.PrimFunc) and not f.attrs.get("s_tir", False):
                tvm.tirx.analysis.verify_tirx_well_formed(f)
    except Exception as err:  # noqa: BLE001  (as TVMScript: any failure of the verifiers)
        from tvm.script.parser.core.entry import WELL_FORMED_ERROR_MESSAGE
        from tvm.script.parser.core.parser import Parser

        source = (_diagnostics().Source if tree is None else _rewritten_source(tree))(fn)
        Parser(source, {}).report_error(
            source.as_ast(), err=f"{WELL_FORMED_ERROR_MESSAGE}\n\nTraceback: {err!s}")


def _mark_parallel_loops(func: tirx.PrimFunc, loop_vars: list) -> tirx.PrimFunc:
    """Turn the loops whose variables ``T.Parallel`` created into ``ForKind.PARALLEL``."""
    if not loop_vars:
        return func

    def is_marked(var):
        return any(var.same_as(v) for v in loop_vars)

    def rewrite(loop: tirx.For):
        if loop.kind == tirx.ForKind.SERIAL and is_marked(loop.loop_var):
            return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.PARALLEL,
                            loop.body, loop.thread_binding, loop.annotations, loop.step,
                            loop.span)
        return loop

    body = tvm_ffi.structural_map(func.body, [(tirx.For, rewrite)], order="post")
    return func.with_body(body)


def _mark_persistent_loops(func: tirx.PrimFunc, loops: list) -> tirx.PrimFunc:
    """Annotate the outer loop of each ``T.Persistent`` nest with ``tt.persistent_tiles``."""
    if not loops:
        return func

    def rewrite(loop: tirx.For):
        info = next((i for v, i in loops if loop.loop_var.same_as(v)), None)
        if info is None:
            return loop
        annotations = dict(loop.annotations or {})
        annotations[attrs.LOOP_PERSISTENT_TILES] = info
        return tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, loop.body,
                        loop.thread_binding, annotations, loop.step, loop.span)

    body = tvm_ffi.structural_map(func.body, [(tirx.For, rewrite)], order="post")
    return func.with_body(body)


# --------------------------------------------------------------------------------------------
# kernel launch, allocation, loops
# --------------------------------------------------------------------------------------------
class Kernel:
    """``with T.Kernel(gx, gy[, gz], threads=...) as (bx, by[, bz]):`` - one program per block."""

    _TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")

    def __init__(self, *extents, threads=None, prelude=None, is_cpu=False):
        if len(extents) > 3:
            raise TTCompileError(f"T.Kernel takes 1 to 3 grid extents, got {len(extents)}")
        extents = extents or (1,)  # `T.Kernel(threads=...)`: one block, as in TileLang
        if prelude is not None:
            raise language_compat.note_error(TTUnsupportedError(
                "T.Kernel(prelude=...) injects C source into a CUDA kernel; Tensix kernels are "
                "generated whole"))
        self.extents = extents
        # TileLang's thread extents (x, y, z; 128 threads when not given): Tensix has no SIMT
        # threads, only T.get_thread_binding's `if`s that select tile operations read them
        self.threads = _thread_extents(threads)
        self._stack = None
        self.bindings = []

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        self.bindings = [self._stack.enter_context(_IB.launch_thread(tag, ext))
                         for tag, ext in zip(self._TAGS, self.extents)]
        _kernel_frames().append(self)
        vs = self.bindings
        return tuple(vs) if len(vs) > 1 else vs[0]

    def __exit__(self, *exc):
        _kernel_frames().pop()
        return self._stack.__exit__(*exc)


def _thread_extents(threads) -> tuple:
    """``threads=`` of T.Kernel as three extents, TileLang's way (None: 128 threads)."""
    if threads is None:
        threads = 128
    if isinstance(threads, (list, tuple, tvm.ir.Array)):
        threads = list(threads)
    else:
        threads = [threads]
    if not 1 <= len(threads) <= 3:
        raise language_compat.note_error(TTArgumentError(
            f"T.Kernel(threads={threads}): 1 to 3 thread extents"))
    return tuple(threads) + (1,) * (3 - len(threads))


def _kernel_frames() -> list:
    if not hasattr(_STATE, "kernels"):
        _STATE.kernels = []
    return _STATE.kernels


def _current_kernel(what: str) -> Kernel:
    if not _kernel_frames():
        raise TTCompileError(f"T.{what} is only meaningful inside `with T.Kernel(...)`")
    return _kernel_frames()[-1]


def get_block_binding(dim: int = 0):
    """The block index variable of grid dimension ``dim`` of the enclosing ``T.Kernel``."""
    frame = _current_kernel("get_block_binding")
    return frame.bindings[dim] if dim < len(frame.bindings) else tirx.IntImm("int32", 0)


def get_block_bindings():
    return [get_block_binding(d) for d in range(3)]


def get_block_extent(dim: int = 0):
    frame = _current_kernel("get_block_extent")
    return frame.extents[dim] if dim < len(frame.extents) else 1


def get_block_extents():
    return [get_block_extent(d) for d in range(3)]


def get_thread_binding(dim: int = 0):
    """TileLang's thread index of dimension ``dim`` (0: x, 1: y, 2: z) of the enclosing
    ``T.Kernel``: ``tt.thread_index(dim, extent)``, ``extent`` its ``threads=`` extent.  A block
    is one program on Tensix, so the only use compiled is an ``if`` of thread indices and
    constants around tile operations (``if tx < 128: T.copy(...)``): ResolveThreadConditionsTT
    keeps an arm some thread takes and drops one none takes; any other use is refused there."""
    frame = _current_kernel("get_thread_binding")
    dim = int(dim)
    if dim not in (0, 1, 2):
        raise language_compat.note_error(TTArgumentError(
            f"T.get_thread_binding({dim}): the dimension is 0, 1 or 2"))
    extent = frame.threads[dim]
    if not isinstance(extent, int) and not isinstance(extent, tirx.IntImm):
        raise language_compat.note_error(TTUnsupportedError(
            f"T.get_thread_binding({dim}): the thread extent {extent} is not a constant"))
    return ops.call("tt.thread_index", tirx.IntImm("int32", dim),
                    tirx.IntImm("int32", int(extent)))


def get_thread_extent(dim: int = 0):
    """The ``threads=`` extent of dimension ``dim`` of the enclosing ``T.Kernel``."""
    return _current_kernel("get_thread_extent").threads[int(dim)]


def get_thread_extents():
    return [get_thread_extent(d) for d in range(3)]


def _linear_thread():
    """The block-linear thread index ``tx + ty * X + tz * X * Y`` (CUDA's), over the thread
    dims of more than one thread."""
    frame = _current_kernel("get_thread_binding")
    linear, stride = tirx.IntImm("int32", 0), 1
    for d in range(3):
        extent = int(frame.threads[d])
        if extent > 1:
            linear = linear + get_thread_binding(d) * stride
        stride *= extent
    return linear


def _warp(warp_size) -> int:
    return 32 if warp_size is None else warp_size  # CUDA's (TileLang takes 64 on HIP)


def get_lane_idx(warp_size=None):
    """TileLang's lane of the calling thread: the block-linear thread index modulo the warp
    size (32 unless given).  Per-thread scalar code runs once per thread ("Scalar code per
    thread"); in a launch with tile operations it is a thread index like any other (A0.000)."""
    return tirx.floormod(_linear_thread(), _warp(warp_size))


def get_warp_idx_sync(warp_size=None):
    """The warp of the calling thread: the block-linear thread index over the warp size."""
    return tirx.floordiv(_linear_thread(), _warp(warp_size))


def get_warp_idx(warp_size=None):
    return get_warp_idx_sync(warp_size)


def get_warp_group_idx(warp_size=None, warps_per_group=None):
    """The warp group of the calling thread (4 warps a group unless given)."""
    per_group = _warp(warp_size) * (4 if warps_per_group is None else warps_per_group)
    return tirx.floordiv(_linear_thread(), per_group)


def shuffle_elect(thread_extent):
    """True for one thread of each group of ``thread_extent`` threads (its first), for thread
    0 alone with 0 (the whole block), as TileLang's elected lane."""
    linear, zero = _linear_thread(), tirx.IntImm("int32", 0)
    if isinstance(thread_extent, int) and thread_extent == 0:
        return tirx.EQ(linear, zero)
    return tirx.EQ(tirx.floormod(linear, thread_extent), zero)


def get_thread_bindings():
    """The three thread indices of the enclosing ``T.Kernel`` (``T.get_thread_binding``)."""
    return [get_thread_binding(d) for d in range(3)]


def _shape(shape):
    return (shape,) if not isinstance(shape, (tuple, list, tvm.ir.Array)) else shape


def alloc_shared(shape, dtype="float16", scope="shared"):
    """A block-local tile buffer in L1 (lowered to a circular buffer)."""
    if scope.startswith("shared"):
        scope = "shared"
    return _IB.alloc_buffer(_shape(shape), dtype_name(dtype), scope=scope)


def alloc_fragment(shape, dtype="float32", scope="local.fragment"):
    """A block-local accumulator (lives in the DST register file on Tensix)."""
    return _IB.alloc_buffer(_shape(shape), dtype_name(dtype), scope=scope)


def alloc_global(shape, dtype="float32"):
    """TileLang's ``T.alloc_global``: a tensor in device DRAM the host allocates (tiled and
    interleaved like the parameters), not an argument of the kernel: every ``T.Kernel``
    launch of the function sees it, a later launch what an earlier one wrote
    (``tilelang_tt.launches`` makes it a parameter of the launches that touch it)."""
    return _IB.alloc_buffer(_shape(shape), dtype_name(dtype), scope="global")


def alloc_local(shape, dtype="float32", scope="local"):
    return _IB.alloc_buffer(_shape(shape), dtype_name(dtype), scope=scope)


_FLOAT_MAX = {"float32": 3.4028234663852886e38, "float16": 65504.0,
              "bfloat16": 3.3895313892515355e38}


def alloc_var(dtype="int32", *args, scope="local.var", init=None):
    """TileLang ``T.alloc_var(dtype[, init][, scope])``: a one-element scalar buffer."""
    if len(args) == 1 and isinstance(args[0], str):
        scope = args[0]
    elif len(args) == 1:
        init = args[0]
    elif len(args) == 2:
        init, scope = args
    # TVMScript's scalar: `x = v` / `x += v` store into it; a read of x is its element load
    # (read_variable, inserted by _bind_python_values)
    scalar = _IB.local_scalar(dtype_name(dtype))
    if init is not None:
        if isinstance(init, (bool, int, float)):  # a literal of the variable's dtype
            name = dtype_name(dtype)
            limit = _FLOAT_MAX.get(name)
            if limit is not None and isinstance(init, float) and abs(init) > limit and \
                    abs(init) != float("inf"):
                raise language_compat.note_error(TTArgumentError(
                    f"T.alloc_var({name}, init={init!r}): the initializer exceeds maximum of "
                    f"{name} ({limit:.6g}); use a wider dtype or a smaller value"))
            init = tirx.const(init, name)
        _IB.buffer_store(scalar.scalar.source, init, [0])
    return scalar


allocate = _IB.alloc_buffer


class _TensorProxy:
    """``T.Tensor(shape, dtype)`` / ``T.Tensor[shape, dtype]`` (TileLang's spellings) -> a
    buffer; ``scope`` picks ``T.SharedBuffer`` / ``T.FragmentBuffer`` / ``T.LocalBuffer``."""

    def __init__(self, scope="global"):
        self.scope = scope

    def __call__(self, shape, dtype="float32", data=None, strides=None, elem_offset=None,
                 scope=None, **kwargs):
        from tvm.script.ir_builder import IRBuilder

        if data is not None and strides is None and elem_offset is None \
                and IRBuilder.is_in_scope():
            # TileLang's re-view inside a kernel, `T.Tensor(shape, dtype, A.data)`: T.view of A
            # (its size checked here; ResolveViewsTT decides its meaning)
            if isinstance(data, tvm.ir.Call) and str(data.op.name) == "tirx.buffer_data":
                from .language_reshape import view

                return view(data.args[0], _shape(shape), dtype)
            return _IB.decl_buffer(_shape(shape), dtype_name(dtype), data=data,
                                   scope=scope or self.scope)
        return _T.Buffer(_shape(shape), dtype_name(dtype), data=data, strides=strides,
                         elem_offset=elem_offset, scope=scope or self.scope)

    def __getitem__(self, keys):
        if not isinstance(keys, tuple) or all(not isinstance(k, (tuple, list, str)) for k in keys):
            keys = (keys,)
        return self(*keys)

    # ``A: T.Tensor | None`` in signatures
    def __or__(self, other):
        return self

    __ror__ = __or__


class _StridedTensorProxy(_TensorProxy):
    """``T.StridedTensor[shape, strides, dtype]`` / ``T.StridedTensor(shape, strides, dtype)``:
    a tensor parameter of an eager ``@tilelang.jit`` function that the caller passes as a
    strided view (``A[:, 0, :, 0]`` of a torch tensor).  Tenstorrent tensors are interleaved
    DRAM buffers of 32x32 tiles, so the kernel sees a tensor of ``shape`` like any other: the
    host copies the view into a contiguous array before the run and an output back into the
    view after it.  The strides are checked against the arguments (tilelang_tt.jit.eager);
    sizes named in them (``T.const``) take the argument's strides, in elements.  In any other
    kernel (a ``@T.prim_func`` signature, whose caller's strides nothing checks) it is refused
    when the kernel is parsed; Python's own evaluation of a signature annotation when the
    function is defined gives the tensor of ``shape``."""

    REFUSAL = ("T.StridedTensor: a strided tensor parameter is supported in an eager "
               "@tilelang.jit function (the host copies the view to and from a contiguous "
               "array: Tenstorrent tensors are interleaved DRAM buffers of 32x32 tiles); in a "
               "@T.prim_func annotate it T.Tensor(shape, dtype) and pass a contiguous array")

    def __call__(self, shape, strides=None, dtype="float32", **kwargs):
        allowed = _STATE.__dict__.get("strided_ok", False)
        if _STATE.__dict__.get("parsing", False) and not allowed:
            raise language_compat.note_error(TTUnsupportedError(self.REFUSAL))
        buf = super().__call__(shape, dtype, **kwargs)
        if not allowed:  # a signature annotation Python evaluates: @T.prim_func refuses it
            _STRIDED_ANNOTATIONS[id(buf)] = buf
        return buf


_STRIDED_ANNOTATIONS: dict = {}  # id -> buffer made by T.StridedTensor outside a build


def _refuse_strided_signature(fn) -> None:
    """A ``@T.prim_func`` whose signature annotates a parameter ``T.StridedTensor``."""
    for name, ann in getattr(fn, "__annotations__", {}).items():
        if _STRIDED_ANNOTATIONS.get(id(ann)) is ann:
            where = f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"
            raise TTUnsupportedError(f"{where}: @T.prim_func {fn.__name__}, parameter {name}: "
                                     f"{_StridedTensorProxy.REFUSAL}")

    def __getitem__(self, keys):
        if not isinstance(keys, tuple):
            keys = (keys,)
        return self(*keys)


@contextlib.contextmanager
def strided_tensors_allowed():
    """Within: ``T.StridedTensor`` annotations make tensors (an eager @tilelang.jit build)."""
    prev = _STATE.__dict__.get("strided_ok", False)
    _STATE.strided_ok = True
    try:
        yield
    finally:
        _STATE.strided_ok = prev


Tensor = _TensorProxy()
StridedTensor = _StridedTensorProxy()
Buffer = Tensor
SharedBuffer = _TensorProxy("shared")
FragmentBuffer = _TensorProxy("local.fragment")
LocalBuffer = _TensorProxy("local")


def Pipelined(start, stop=None, num_stages=0, order=None, stage=None, sync=None, group=None,
              annotations=None):
    """Software-pipelined serial loop; ``num_stages`` becomes the circular-buffer depth
    (``order`` / ``stage`` / ``sync`` / ``group`` are CUDA pipeline schedules, ignored)."""
    annotations = {attrs.LOOP_NUM_STAGES: int(num_stages)} if num_stages else None
    if stop is None:
        return _IB.serial(0, start, annotations=annotations)
    return _IB.serial(start, stop, annotations=annotations)


def Persistent(domain, wave_size, index, group_size=8):
    """TileLang's persistent tile loop: ``with T.Kernel(sm_num) as block_id: for bx, by in
    T.Persistent([MB, NB], sm_num, block_id):`` visits every tile of ``domain`` once over the
    blocks (block ``block_id`` takes tiles ``block_id``, ``block_id + sm_num``, ...).

    Built as a serial nest over ``domain`` (one loop per dim, the loop variables the tile
    coordinates) whose outer loop carries ``tt.persistent_tiles = [wave_size, index,
    group_size, rank]``; A0.00 (LaunchPersistentTilesTT) makes the nest the kernel's launch over
    ``domain``, or refuses it.  ``group_size`` (TileLang's grouped tile order) only orders
    the tiles: the work partitioner orders blocks here."""
    if isinstance(domain, (int, tvm.ir.Expr)):
        domain = [domain]
    domain = list(domain)
    if not domain:
        raise language_compat.note_error(TTCompileError("T.Persistent needs a non-empty domain"))

    def expr(v):  # a constant stays a Python int (it prints and parses back as one)
        return int(v) if isinstance(v, (int, bool, tirx.IntImm)) else v

    frame = _IB.grid(*domain)
    vars_ = list(frame.vars) if isinstance(frame.vars, (list, tuple, tvm.ir.Array)) \
        else [frame.vars]
    _persistent_loops().append(
        (vars_[0], [expr(wave_size), expr(index), expr(1 if group_size is None else group_size),
                    expr(len(vars_))]))
    return frame


def Parallel(*extents, coalesced_width=None, loop_layout=None, prefer_async=None,
             annotations=None):
    """Element-parallel loop nest; recognised by the compiler as a tile operation (the CUDA
    hints ``coalesced_width``, ``loop_layout``, ``prefer_async`` are ignored)."""
    frame = _IB.grid(*extents)
    _parallel_vars().extend(list(frame.vars))
    return frame


def serial(start, stop=None, step=None, *, annotations=None):
    """``T.serial(n)`` / ``T.serial(start, stop[, step])``; ``T.Serial`` is the same loop."""
    return _IB.serial(start, stop, step=step, annotations=annotations)


Serial = serial


def unroll(start, stop=None, step=None, *, explicit=False, unroll_factor=None, annotations=None):
    return _IB.unroll(start, stop, step=step, annotations=annotations)


Unroll = unroll


def vectorized(start, stop=None, *, annotations=None):
    return _IB.vectorized(start, stop, annotations=annotations)


Vectorized = vectorized


def use_swizzle(panel_size=None, order="row", enable=True):
    """Accepted for TileLang compatibility: block order is decided by the work partitioner."""
    return None


def annotate_layout(layout_map=None):
    """Accepted for TileLang compatibility (fragment layouts do not apply to Tensix)."""
    return None


# --------------------------------------------------------------------------------------------
# L1 aliasing: T.annotate_l1_alias(T.shared(a, T.distinct(b, c)), size=...)
# --------------------------------------------------------------------------------------------
class AliasGroup:
    """A reuse group of an L1 alias spec: ``T.shared(...)`` (the members may occupy the same
    L1, one after the other: their lifetimes must not overlap) or ``T.distinct(...)`` (the
    members keep L1 of their own).  Members are block buffers (``T.alloc_shared`` /
    ``T.alloc_fragment``) or groups of the other kind."""

    def __init__(self, kind: str, members):
        self.kind = kind
        self.members = list(members)

    def __repr__(self):
        return f"T.{self.kind}({', '.join(map(repr, self.members))})"


def _alias_error(message: str) -> Exception:
    from .errors import TTAliasError

    return language_compat.note_error(TTAliasError(message))


def shared(*members) -> AliasGroup:
    """A ``shared`` reuse group of ``T.annotate_l1_alias``: its members share L1."""
    return AliasGroup("shared", members)


def distinct(*members) -> AliasGroup:
    """A ``distinct`` reuse group of ``T.annotate_l1_alias``: its members do not share L1
    with each other (each may share with the other members of an enclosing ``shared``)."""
    return AliasGroup("distinct", members)


def _alias_tree(group, parent, seen: dict, path: str) -> dict:
    if not isinstance(group, AliasGroup):
        raise _alias_error(f"T.annotate_l1_alias takes a T.shared(...) or T.distinct(...) group, "
                           f"got {group!r}")
    if parent is not None and group.kind == parent:
        raise _alias_error(
            f"bad nesting of L1 reuse groups: a {group.kind} group inside a {parent} group "
            f"({path}); groups alternate kinds (T.shared inside T.distinct and vice versa) - "
            f"list its members in the enclosing group instead")
    if len(group.members) < 2:
        raise _alias_error(f"the {group.kind} group {path} has {len(group.members)} member(s); "
                           "a reuse group relates two or more buffers or groups")
    members = []
    for k, m in enumerate(group.members):
        if isinstance(m, AliasGroup):
            members.append(_alias_tree(m, group.kind, seen, f"{path}.{m.kind}#{k}"))
            continue
        if not isinstance(m, tirx.Buffer):
            raise _alias_error(f"member {k} of the {group.kind} group {path} is {m!r}; members "
                               "are block buffers (T.alloc_shared / T.alloc_fragment) or groups")
        name = str(m.name)
        if str(m.scope()) not in ("shared", "local.fragment", "global"):
            raise _alias_error(
                f"buffer {name} (scope {m.scope()}) cannot be aliased in L1; members are block "
                "buffers (T.alloc_shared / T.alloc_fragment)")
        if name in seen:
            raise _alias_error(f"buffer {name} appears twice in L1 alias specs ({seen[name]} and "
                               f"{path}); a buffer belongs to one place of one spec")
        seen[name] = path
        members.append(name)
    return {"kind": group.kind, "members": members}


def _statement_location():
    """(file, line) of the kernel statement the TVMScript parser is evaluating, if any."""
    frame = inspect.currentframe()
    while frame is not None:
        if frame.f_code.co_name == "visit_expr_stmt" and "node" in frame.f_locals:
            try:
                span = frame.f_locals["self"].diag.source.to_span(frame.f_locals["node"])
                return str(span.source_name.name), int(span.line)
            except Exception:
                return None
        frame = frame.f_back
    return None


def annotate_l1_alias(group, size=None, name=None):
    """State how block buffers share L1 (a storage alias spec).

    ``group`` is a tree of reuse groups: ``T.shared(a, b, ...)`` lets its members occupy the
    same L1 one after the other, ``T.distinct(...)`` keeps them apart; kinds alternate down
    the tree.  ``size`` (bytes) bounds the L1 the spec may take (unsized: what its members
    need); ``name`` names it in messages and in ``tt.plan.json``.  The compiler checks the
    spec (nesting here; memory kinds, sizes and lifetimes when it lowers the kernel) and the
    host configures one circular-buffer region per set of buffers sharing L1."""
    specs = _alias_specs()
    label = str(name) if name is not None else f"alias{len(specs)}"
    if any(sp["name"] == label for sp in specs):
        raise _alias_error(f"two L1 alias specs are named {label!r}")
    if size is not None:
        if isinstance(size, tirx.IntImm):
            size = int(size.value)
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise _alias_error(f"L1 alias spec {label}: size must be a positive number of bytes, "
                               f"got {size!r}")
    seen = {}
    for sp in specs:
        _collect_names(sp["group"], sp["name"], seen)
    tree = _alias_tree(group, None, seen, f"{label}:{getattr(group, 'kind', '?')}")
    spec = {"name": label, "size": int(size or 0), "group": tree}
    where = _statement_location()
    if where is not None:
        spec["file"], spec["line"] = where
    specs.append(spec)
    return None


def _func_annotations() -> dict:
    if not hasattr(_STATE, "func_annotations"):
        _STATE.func_annotations = {}
    return _STATE.func_annotations


def annotate_pass_configs(configs):
    """``T.annotate_pass_configs({key: value})`` in a kernel: pass configs recorded on the
    kernel (``tilelang_pass_configs``); ``tilelang_tt.compile`` applies them under its own
    ``pass_configs=`` (TileLang's GPU keys are accepted and have no effect, as there)."""
    if not hasattr(configs, "items"):
        raise language_compat.note_error(TTCompileError(
            f"T.annotate_pass_configs takes a dict of pass configs, got {configs!r}"))
    recorded = _func_annotations().setdefault(attrs.PASS_CONFIGS_ATTR, {})
    recorded.update({str(k): v for k, v in configs.items()})


def annotate_safe_value(safe_value_map):
    """``T.annotate_safe_value({A: value})``: the value TileLang reads for an element of tensor
    ``A`` past its end (0 without it).  Recorded on the kernel (``tt.safe_values``, by tensor
    name); a tensor the device stores padded (A0.3.1) holds zeros there, so A0.3.1 refuses a
    value other than 0 for it, and the request means nothing for a tensor that is not padded."""
    if not hasattr(safe_value_map, "items"):
        raise language_compat.note_error(TTCompileError(
            f"T.annotate_safe_value takes a dict {{tensor: value}}, got {safe_value_map!r}"))
    recorded = _func_annotations().setdefault(attrs.SAFE_VALUES, {})
    for buf, value in safe_value_map.items():
        if isinstance(value, (tirx.IntImm, tirx.FloatImm)):
            value = value.value
        try:
            value = float(value)
        except (TypeError, ValueError):
            value = str(value)  # an expression: not provably 0
        recorded[str(buf.name)] = value


def annotate_compile_flags(flags):
    """``T.annotate_compile_flags([...])``: device compiler flags recorded on the kernel
    (``tilelang_compile_flags``) as in TileLang; the CUDA toolchain's flags have no meaning for
    the TT-Metalium kernels and are not used."""
    flags = [flags] if isinstance(flags, str) else [str(f) for f in flags]
    _func_annotations().setdefault(attrs.COMPILE_FLAGS_ATTR, []).extend(flags)


def _collect_names(tree, where, out):
    for m in tree["members"]:
        if isinstance(m, dict):
            _collect_names(m, where, out)
        else:
            out[m] = where


def _alias_specs() -> list:
    if not hasattr(_STATE, "l1_alias"):
        _STATE.l1_alias = []
    return _STATE.l1_alias


# --------------------------------------------------------------------------------------------
# symbolic sizes: T.const (eager jit), T.dynamic / T.symbolic
# --------------------------------------------------------------------------------------------
def _split_names(name: str) -> list:
    return [n for n in re.split(r"[\s,]+", name.strip()) if n]


def eager_bindings() -> dict | None:
    """Size values of the ``@tilelang.jit`` function being compiled (set by tilelang_tt.jit)."""
    return getattr(_STATE, "eager", None)


@contextlib.contextmanager
def binding_sizes(values: dict):
    prev = eager_bindings()
    _STATE.eager = dict(values)
    try:
        yield
    finally:
        _STATE.eager = prev


def _sizes(name, what, dtype):
    names = _split_names(name)
    bound = eager_bindings()
    if bound is None:
        if what == "const":
            raise TTCompileError(
                f"T.const({name!r}) declares sizes of a @tilelang.jit function (eager form); "
                "in a @T.prim_func use Python values or T.dynamic")
        vals = [tirx.Var(n, dtype_name(dtype)) for n in names]
    else:
        missing = [n for n in names if n not in bound]
        if missing:
            raise TTCompileError(f"T.{what}: no value for {', '.join(missing)}")
        vals = [bound[n] for n in names]
    return tuple(vals) if len(vals) > 1 else vals[0]


def const(name: str, dtype="int32"):
    """``M, N = T.const("M, N")``: sizes of a ``@tilelang.jit`` function, taken from the
    shapes of its tensor arguments (or ``f.compile(M=...)``)."""
    return _sizes(name, "const", dtype)


def dynamic(name: str, dtype="int32"):
    """``T.dynamic("M, N")``: symbolic sizes.  In a ``@tilelang.jit`` function they are
    specialised like ``T.const`` (one compiled kernel per shape); in a ``@T.prim_func`` they
    stay symbolic, which the compiler rejects until dynamic shapes are supported."""
    return _sizes(name, "dynamic", dtype)


symbolic = dynamic


@contextlib.contextmanager
def making_outputs(make):
    """Within (an eager @tilelang.jit build): ``T.empty(...)`` is ``make(shape, dtype)``."""
    prev = _STATE.__dict__.get("make_output")
    _STATE.make_output = make
    try:
        yield
    finally:
        _STATE.make_output = prev


def empty(*shape, dtype="float32"):
    """``C = T.empty(shape, dtype)``: an output of a ``@tilelang.jit`` function (eager form),
    declared in its body or in a macro it calls (and returned)."""
    make = _STATE.__dict__.get("make_output")
    if make is not None:
        shape, dtype = empty_args(*shape, dtype=dtype)
        return make(shape, dtype)
    raise TTCompileError(
        "T.empty declares an output of a @tilelang.jit function: write `C = T.empty(shape, "
        "dtype)` as a statement of the function body and `return C`")


def empty_args(*shape, dtype="float32"):
    """(shape, dtype) of a ``T.empty(...)`` call, in each of TileLang's spellings."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0]), dtype
    if len(shape) == 2 and isinstance(shape[0], (tuple, list)) and isinstance(shape[1], str):
        return tuple(shape[0]), shape[1]
    return tuple(shape), dtype


def index_to_coordinates(index, shape):
    """Row-major coordinates of a flat ``index`` in ``shape``."""
    coords = []
    for extent in reversed(list(shape)):
        coords.append(tirx.floormod(index, extent))
        index = tirx.floordiv(index, extent)
    return list(reversed(coords))


_CAST_ROUNDING = ("", "rn", "rz", "rp", "rm", "rs")  # TileLang's PTX rounding modifiers


def cast(value, dtype, round: str = "", sat: bool = True, rbits=None, span=None):  # noqa: A002
    """``T.cast(x, dtype)``; ``dtype`` as TileLang takes it (a string, ``T.float32``, a torch
    dtype).  TileLang's PTX conversion modifiers are checked as TileLang checks them
    (TTArgumentError, a ValueError); only the default (``round=""``, ``sat=True``) converts
    here: a rounding mode or ``sat=False`` is refused."""
    if round not in _CAST_ROUNDING:
        raise language_compat.note_error(TTArgumentError(
            f"T.cast: Invalid round {round!r}; must be one of {sorted(_CAST_ROUNDING)}"))
    if not isinstance(sat, bool):
        raise language_compat.note_error(TTArgumentError(
            f"T.cast: Invalid sat {sat!r}; must be a bool (True for satfinite, False for no "
            "saturation)"))
    if round == "rs" and rbits is None:
        raise language_compat.note_error(TTArgumentError(
            "T.cast: rbits is required with round='rs' (stochastic rounding)"))
    if round != "rs" and rbits is not None:
        raise language_compat.note_error(TTArgumentError(
            f"T.cast: rbits is only valid with round='rs' (stochastic rounding), not {round!r}"))
    if round or not sat:
        raise language_compat.note_error(TTUnsupportedError(
            f"T.cast(round={round!r}, sat={sat}): PTX rounding and saturation modifiers of a "
            "conversion have no Tensix counterpart here; drop them (T.cast(x, dtype) converts "
            "as the device's typecast does)"))
    return _T.cast(value, dtype_name(dtype), span=span)


def round(x, rounding_mode="ties-to-even", span=None):  # noqa: A001 - TileLang's name
    """``T.round(x[, rounding_mode])`` with TileLang's modes: ``"ties-to-even"`` (the default,
    TVM's ``round``) or ``"ties-away-from-zero"`` (refused: no Tensix lowering); any other
    mode is TileLang's ValueError (TTArgumentError).  A span passed in the mode's place (TVM's
    ``round(x, span)``) is taken as the span."""
    if rounding_mode is None:
        rounding_mode = "ties-to-even"
    elif not isinstance(rounding_mode, str):
        span, rounding_mode = rounding_mode, "ties-to-even"
    if rounding_mode == "ties-to-even":
        return _T.round(x, span=span)
    if rounding_mode == "ties-away-from-zero":
        raise language_compat.note_error(TTUnsupportedError(
            "T.round(x, 'ties-away-from-zero'): rounding half away from zero has no Tensix "
            "lowering here; use the default mode (ties to even)"))
    raise language_compat.note_error(TTArgumentError(
        f"Unsupported T.round rounding_mode {rounding_mode!r}; expected 'ties-to-even' or "
        "'ties-away-from-zero'."))


def reinterpret(value, dtype, span=None):
    """``T.reinterpret(x, dtype)`` (TileLang's order; TVMScript's ``(dtype, x)`` also taken):
    the bits of ``x`` as ``dtype``."""
    if isinstance(value, (str, tvm_ffi.dtype)) and not isinstance(dtype, (str, tvm_ffi.dtype)):
        value, dtype = dtype, value
    return _T.reinterpret(dtype_name(dtype), value, span=span)


class _Let:
    """``T.let(var, value)`` (TileLang): bind ``var`` (made by ``T.int32()`` ...) to
    ``value`` for the rest of the block; ``T.let[...]`` is TVMScript's annotation."""

    def __call__(self, var, value=None, *args, **kwargs):
        if value is None or not isinstance(var, tvm.ir.Var):
            raise language_compat.note_error(TTCompileError(
                "T.let takes the variable and its value: `x = T.int32()` then "
                "`T.let(x, expr)`"))
        return _IB.bind(value, var=var)

    def __getitem__(self, key):
        return _T.let[key]


let = _Let()


def align_up(x, y):
    return cdiv(x, y) * y


def clamp(dst, min_val, max_val):
    """``T.clamp(x, lo, hi)`` = ``T.min(T.max(x, lo), hi)``, as in TileLang."""
    return _T.min(_T.max(dst, min_val), max_val)


def _float_binary(name, x, y):
    """``name(x, y)`` of two float values (a constant takes the other operand's dtype)."""
    types = [str(getattr(v, "ty", "")) for v in (x, y)]
    dt = next((t for t in types if t.startswith(("float", "bfloat"))), "float32")
    x, y = [tirx.const(float(v), dt) if isinstance(v, (int, float)) else v for v in (x, y)]
    return tirx.op.call_intrin(dt, name, x, y)


def pow(x, y, span=None):  # noqa: A001
    """``T.pow(x, y)``: x ** y (the vector engine's power_tile for a constant y, else
    power_binary_tile)."""
    return _float_binary("tirx.pow", x, y)


def fmod(x, y, span=None):
    """``T.fmod(x, c)``: x - trunc(x / c) * c, the sign of x (fmod_tile; c a constant)."""
    return _float_binary("tirx.fmod", x, y)


# CUDA fast-math spellings compute the same functions here
def fast_rcp(x):
    return 1.0 / x


_IEEE_ROUNDING = ("rn", "rz", "ru", "rd")


def _ieee(name, fn, rounding=True):
    """TileLang's ``T.ieee_add(x, y, rounding_mode="rn")`` ...: the operation with its IEEE
    rounding mode (positional or keyword, as in TileLang).  A mode outside TileLang's four is
    a TTArgumentError (a ValueError, as TileLang raises); round-to-nearest-even computes the
    operation here, the directed modes are refused."""
    nargs = fn.__code__.co_argcount

    def op(*args, rounding_mode="rn"):
        if rounding and len(args) == nargs + 1:
            *args, rounding_mode = args
        if len(args) != nargs:
            want = f"{nargs} operand{'s' if nargs > 1 else ''}" + \
                (" and an optional rounding mode" if rounding else "")
            raise language_compat.note_error(TTArgumentError(
                f"T.{name} takes {want}; got {len(args)} arguments"))
        if rounding:
            if not isinstance(rounding_mode, str) or rounding_mode not in _IEEE_ROUNDING:
                raise language_compat.note_error(TTArgumentError(
                    f"Invalid rounding mode '{rounding_mode}' for T.{name}. Must be one of: "
                    f"{set(_IEEE_ROUNDING)}"))
            if rounding_mode != "rn":
                raise language_compat.note_error(TTUnsupportedError(
                    f"T.{name}(rounding_mode={rounding_mode!r}): only round-to-nearest-even "
                    "('rn') is available on Tensix; drop the rounding mode"))
        return fn(*args)
    op.__name__ = name
    return op


ieee_add = _ieee("ieee_add", lambda a, b: a + b)
ieee_sub = _ieee("ieee_sub", lambda a, b: a - b)
ieee_mul = _ieee("ieee_mul", lambda a, b: a * b)
ieee_fdiv = _ieee("ieee_fdiv", lambda a, b: a / b)
ieee_fmaf = _ieee("ieee_fmaf", lambda a, b, c: a * b + c)
ieee_frcp = _ieee("ieee_frcp", lambda a: 1.0 / a)
ieee_fsqrt = _ieee("ieee_fsqrt", lambda a: _T.sqrt(a))
ieee_frsqrt = _ieee("ieee_frsqrt", lambda a: _T.rsqrt(a), rounding=False)

_FAST_MATH = {"__exp": "exp", "__exp10": "exp10", "__log": "log", "__log2": "log2",
              "__log10": "log10", "__sin": "sin", "__cos": "cos", "__tan": "tan"}


def _fast_math(name):
    """CUDA's fast-math spelling ``T.__exp`` ...: the same function as ``T.exp`` here, taking
    floating-point values only (as in TileLang)."""
    precise = getattr(_T, _FAST_MATH[name])

    def op(x):
        ty = getattr(x, "ty", None)
        value_dtype = str(ty) if ty is not None else \
            "float32" if isinstance(x, float) else "int32" if isinstance(x, int) else ""
        if value_dtype and not value_dtype.startswith(("float", "bfloat")) or \
                value_dtype.startswith("float8") or value_dtype.startswith("float4"):
            raise language_compat.note_error(TTDtypeError(
                f"T.{name} only supports floating-point inputs, but got {value_dtype}; "
                f"convert the operand first (T.{name}(T.cast(x, T.float32)))"))
        return precise(x)

    op.__name__ = name
    op.__qualname__ = name
    return op


# --------------------------------------------------------------------------------------------
# tile ops
# --------------------------------------------------------------------------------------------
def _insert(op_node):
    from tvm.tirx.script.builder import _ffi_api as _builder_ffi

    return _builder_ffi.TilePrimitiveCall(op_node)


def _operator(name):
    import tvm.tirx.operator as tirx_op

    return getattr(tirx_op, name)


def _extents(x):
    """Shape of a buffer or region operand, or None for an element access."""
    if is_buffer_var(x):
        return list(x.ty.shape)
    if isinstance(x, TensorRegion):
        return [r.extent for r in x.region]
    return None


def _full_region(buf):
    return buf[tuple(slice(None) for _ in buf.ty.shape)]


def _as_region(x, other_extents, op_name):
    """TileLang operand -> TensorRegion; an element access takes the other side's extents."""
    if is_buffer_var(x):
        return _full_region(x)
    if isinstance(x, TensorRegion):
        return x
    if isinstance(x, tvm.ir.TensorLoad):
        if other_extents is None:
            if op_name != "copy":
                raise TTCompileError(
                    f"T.{op_name}: operand {x.source.name}[...] is a single element (a "
                    "T.alloc_var variable is one); T." + op_name + " takes buffers or regions: "
                    "use a T.alloc_fragment buffer")
            raise TTCompileError(
                f"T.{op_name}: both operands are single elements; one side must be a buffer or a "
                "region so the copy's extent is known")
        indices = list(x.indices)
        if len(other_extents) > len(indices):
            raise TTLayoutError(
                f"T.{op_name}: element operand {x.source.name}[...] has rank {len(indices)} but "
                f"the other operand has rank {len(other_extents)}")
        ext = [1] * (len(indices) - len(other_extents)) + list(other_extents)
        return x.source[tuple(slice(i, i + e) for i, e in zip(indices, ext))]
    raise TTCompileError(f"T.{op_name}: unsupported operand {x!r}; pass a buffer, a region "
                         "(A[a:b, c:d]) or an element (A[i, j])")


def copy(src, dst, coalesced_width=None, disable_tma=False, eviction_policy=None,
         prefer_instruction=None, annotations=None, loop_layout=None):
    """TileLang ``T.copy(src, dst)``: either side may be a buffer, a region or an element
    (the CUDA data-path hints are ignored)."""
    s_ext, d_ext = _extents(src), _extents(dst)
    if isinstance(src, tvm.ir.TensorLoad) and isinstance(dst, tvm.ir.TensorLoad):
        # element to element: the assignment `dst[...] = src[...]` (converted to dst's dtype)
        value = src
        if str(src.ty) != str(dst.ty):
            value = _T.cast(src, str(dst.ty))
        _IB.buffer_store(dst.source, value, list(dst.indices))
        return None
    dst_r = _as_region(dst, s_ext, "copy")
    src_r = _as_region(src, d_ext, "copy")
    from .passes.common import buffer_scope

    config = {}
    if buffer_scope(dst_r.source) == "global":  # a store of a block: it claims the prints of it
        pending = _pending_prints()
        ids = [i for b, i in pending if b.same_as(src_r.source)]
        if ids:
            config[attrs.PRINT_IDS] = ids
            pending[:] = [(b, i) for b, i in pending if not b.same_as(src_r.source)]
    return _insert(_operator("Copy")(dst_r, src_r, workspace={}, config=config, dispatch=None,
                                     scope=None))


def gemm(A, B, C, transpose_A=False, transpose_B=False, policy=None, clear_accum=False,
         k_pack=1, wg_wait=0, mbar=None, annotations=None):
    """TileLang ``T.gemm``: ``C += A @ B`` (``C = A @ B`` with ``clear_accum``).  TileLang's
    argument checks are kept (TTArgumentError, a ValueError): ``k_pack`` an int 1 or 2 (it
    changes nothing here), M, N and K constants."""
    if not (isinstance(k_pack, int) and not isinstance(k_pack, bool) and k_pack in (1, 2)):
        raise language_compat.note_error(TTArgumentError(
            f"T.gemm k_pack must be an int equal to 1 or 2, got {k_pack!r}"))
    regions = [_as_region(x, None, "gemm") for x in (A, B, C)]
    a_r, b_r, c_r = regions
    a_ext = [r.extent for r in a_r.region]
    c_ext = [r.extent for r in c_r.region]
    if len(a_ext) >= 2 and len(c_ext) >= 2:
        dims = (("M", c_ext[-2]), ("N", c_ext[-1]),
                ("K", a_ext[-2] if bool(transpose_A) else a_ext[-1]))
        for name, dim in dims:
            if not isinstance(dim, tirx.IntImm):
                raise language_compat.note_error(TTArgumentError(
                    f"T.gemm requires static tile dimensions, but {name} is symbolic: {dim}; "
                    "give the blocks constant shapes (a symbolic tensor size is fine)"))
    if isinstance(clear_accum, tirx.IntImm):
        clear_accum = bool(clear_accum.value)
    if not isinstance(clear_accum, (bool, int)):
        raise TTUnsupportedError(
            f"T.gemm(clear_accum={clear_accum}) must be a constant True/False; to start a K loop "
            "from zero, call T.clear on the accumulator before the loop")
    beta = tirx.FloatImm("float32", 0.0 if clear_accum else 1.0)
    alpha = tirx.FloatImm("float32", 1.0)
    return _insert(_operator("Gemm")(c_r, a_r, b_r, c_r, bool(transpose_A), bool(transpose_B),
                                     alpha, beta, workspace={}, config={}, dispatch=None,
                                     scope=None))


def transpose(src, dst, annotations=None):
    """TileLang ``T.transpose(src, dst)``: ``dst[j, i] = src[i, j]`` of a 2-D block (``src``
    ``[M, N]``, ``dst`` ``[N, M]``; buffers or regions, leading extent-1 dims allowed), as the
    elementwise expression ``tt.tile.expr(dst, tt.expr.load_t(0), src)``."""
    src_r = _as_region(src, None, "transpose")
    dst_r = _as_region(dst, None, "transpose")

    def block(region):
        shape = [r.extent for r in region.region]
        while len(shape) > 2 and isinstance(shape[0], tirx.IntImm) and int(shape[0]) == 1:
            shape = shape[1:]
        return shape

    s, d = block(src_r), block(dst_r)
    if len(s) != 2 or len(d) != 2:
        raise language_compat.note_error(TTUnsupportedError(
            f"T.transpose({src_r.source.name}, {dst_r.source.name}): only 2-D blocks are "
            f"transposed (extents {[str(x) for x in s]} -> {[str(x) for x in d]})"))
    const = all(isinstance(x, tirx.IntImm) for x in s + d)
    if const and [int(x) for x in s] != [int(x) for x in d[::-1]]:
        raise language_compat.note_error(TTLayoutError(
            f"T.transpose: {dst_r.source.name} must have the extents of {src_r.source.name} "
            f"swapped ({int(s[1])}, {int(s[0])}); it has ({int(d[0])}, {int(d[1])})"))
    transposed = ops.call("tt.expr.load_t", tirx.IntImm("int32", 0))
    return _insert(tirx.TilePrimitiveCall(dst_r, transposed, src_r, op=ops.op("tt.tile.expr")))


def im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad, eviction_policy=None,
           annotations=None):
    """TileLang ``T.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)``: the
    ``[block_M, block_K]`` block ``col`` of the implicit-GEMM matrix of a 2-D convolution over
    the NHWC tensor ``img``: row ``m = nhw_step * block_M + i`` is the output pixel
    ``(n, oh, ow)`` (``ow`` fastest), column ``k = c_step * block_K + j`` the tap
    ``(kh, kw, c)`` (``c`` fastest), the element ``img[n, oh * stride + kh * dilation - pad,
    ow * stride + kw * dilation - pad, c]`` or 0 outside the image.  Emitted as
    ``tt.tile.im2col(col, img, nhw_step, c_step, kernel, stride, dilation, pad)``; the reader
    kernel builds the block (C2: ``tt.im2col_to_cb``).  ``eviction_policy`` is a CUDA cache
    hint (ignored)."""
    img_r = _as_region(img, None, "im2col")
    col_r = _as_region(col, None, "im2col")
    consts = {}
    for name, v in (("kernel", kernel), ("stride", stride), ("dilation", dilation),
                    ("pad", pad)):
        if isinstance(v, tirx.IntImm):
            v = int(v.value)
        if not isinstance(v, int) or isinstance(v, bool) or v < (0 if name == "pad" else 1):
            raise language_compat.note_error(TTArgumentError(
                f"T.im2col({img_r.source.name}, {col_r.source.name}): {name} must be a constant "
                f"integer ({'>= 0' if name == 'pad' else '>= 1'}), got {v!r}"))
        consts[name] = tirx.IntImm("int32", v)

    def index(v):
        return tirx.IntImm("int32", v) if isinstance(v, int) else v

    return _insert(tirx.TilePrimitiveCall(
        col_r, img_r, index(nhw_step), index(c_step), consts["kernel"], consts["stride"],
        consts["dilation"], consts["pad"], op=ops.op("tt.tile.im2col")))


c2d_im2col = im2col


def _scan_args(src, dst, dim, op_name):
    """TileLang's scan operands: (src region, dst region, dim) with ``dst`` defaulting to
    ``src`` (in place) and a negative ``dim`` counted from the end."""
    src_r = _as_region(src, None, op_name)
    dst_r = src_r if dst is None else _as_region(dst, None, op_name)
    shape = [r.extent for r in src_r.region]
    d = int(dim)
    if not -len(shape) <= d < len(shape):
        raise language_compat.note_error(TTCompileError(
            f"T.{op_name}: dim {d} is out of bounds for {src_r.source.name} of rank {len(shape)}"))
    d %= len(shape)
    dst_shape = [r.extent for r in dst_r.region]
    if len(dst_shape) != len(shape) or not all(
            tvm_ffi.structural_equal(a, b) for a, b in zip(dst_shape, shape)):
        raise language_compat.note_error(TTLayoutError(
            f"T.{op_name}: dst {dst_r.source.name} has extents {[str(x) for x in dst_shape]} "
            f"but src {src_r.source.name} has {[str(x) for x in shape]}; they must match"))
    return src_r, dst_r, d


def _cumsum(src, dst=None, dim=0, reverse=False, annotations=None):
    """TileLang ``T.cumsum(src, dst=None, dim=0, reverse=False)``: ``dst`` (``src`` when
    omitted: in place) = the inclusive running sum of ``src`` along ``dim``, as
    ``tt.tile.cumsum(dst, src, dim, reverse)`` (the vector engine's ``cumsum_tile``; with
    ``reverse`` the block is turned upside down by ``reshuffle_rows_tile`` before and after)."""
    src_r, dst_r, d = _scan_args(src, dst, dim, "cumsum")
    return _insert(tirx.TilePrimitiveCall(dst_r, src_r, tirx.IntImm("int32", d),
                                          tirx.IntImm("int32", int(bool(reverse))),
                                          op=ops.op("tt.tile.cumsum")))


def _cummax(src, dst=None, dim=0, reverse=False, annotations=None):
    """TileLang ``T.cummax``: refused - TT-Metalium 0.81.1 has no running-maximum kernel."""
    _scan_args(src, dst, dim, "cummax")
    raise language_compat.note_error(TTUnsupportedError(
        "T.cummax is not supported by the Tenstorrent backend: TT-Metalium 0.81.1 has no "
        "running-maximum operation (its only scan, cumsum_tile, sums; the SFPU's max works "
        "elementwise on whole tiles and cannot carry a maximum down a column)"))


class _ScanOp:
    """``T.cumsum`` / ``T.cummax`` as a value a kernel may bind to a name (TileLang's scan tests
    write ``scan = T.cumsum if op == "cumsum" else T.cummax``; TVMScript binds meta-class
    objects as they are, so each access gives a fresh one)."""

    _is_meta_class = True

    def __init__(self, name, fn):
        self.__name__ = name
        self.__doc__ = fn.__doc__
        self._fn = fn

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __repr__(self):
        return f"T.{self.__name__}"


_SCANS = {"cumsum": _cumsum, "cummax": _cummax}


def fill(buffer, value, annotations=None, _reducer_call=False):
    """``T.fill(dst, value)``; a single element (a ``T.alloc_var`` variable, ``A[i, j]``) is
    stored as ``dst = value`` is, as TileLang fills a one-element region."""
    if not _reducer_call:
        language_reducer.check_plain_op(buffer, "T.fill" if value is not _CLEAR else "T.clear")
    if value is _CLEAR:
        value = 0
    if isinstance(buffer, tvm.ir.TensorLoad):
        name = str(buffer.ty)
        if isinstance(value, (bool, int, float)):
            value = tirx.const(value, name)
        elif str(value.ty) != name:
            value = _T.cast(value, name)
        _IB.buffer_store(buffer.source, value, list(buffer.indices))
        return None
    region = _as_region(buffer, None, "fill")
    return _insert(_operator("Fill")(region, value, workspace={}, config={}, dispatch=None,
                                     scope=None))


_CLEAR = object()  # T.clear's value (named in fill's messages)


def clear(buffer, annotations=None):
    return fill(buffer, _CLEAR)


def _whole_variable(x):
    """A ``T.alloc_var`` variable (or the element of any one-element buffer) as the region
    of its whole buffer: TileLang takes a variable as a reduction's one-element destination;
    other operands are returned as they are."""
    x = getattr(x, "scalar", x)  # TVMScript's scalar wrapper
    if isinstance(x, tvm.ir.TensorLoad):
        shape = [int(d) if isinstance(d, tirx.IntImm) else None for d in x.source.ty.shape]
        if shape and all(d == 1 for d in shape):
            return _full_region(x.source)
    return x


def _reduce(kind, src, dst, dim, clear_dst):
    src_r = _as_region(src, None, f"reduce_{kind}")
    dst_r = _as_region(_whole_variable(dst), None, f"reduce_{kind}")
    op = _operator({"sum": "Sum", "max": "Max", "min": "Min", "abssum": "Sum",
                    "absmax": "Max"}[kind])
    # |x| reductions carry a marker the compiler expands (abs first, then sum / max)
    config = {attrs.REDUCE_ABS: True} if kind.startswith("abs") else {}
    return _insert(op(dst_r, src_r, (int(dim),), not clear_dst, workspace={}, config=config,
                      dispatch=None, scope=None))


def _batch(batch):
    # TileLang's `batch` groups a warp's AllReduce calls to share barriers: a scheduling
    # hint with no effect on the result. The reduction fold is the same for any batch.
    if int(batch) < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")


def _nan_propagate(name, nan_propagate):
    # TileLang's nan_propagate=True promises a NaN row gives NaN. The matrix engine's max / min
    # reduction does not promise that (it compares NaN by its bits, and a 16-bit pack turns NaN
    # into infinity, docs/MOCK.md "Numerics"), so the kernel is refused rather than run.
    if isinstance(nan_propagate, tirx.IntImm):
        nan_propagate = bool(nan_propagate.value)
    if nan_propagate is not False and nan_propagate is not None and nan_propagate != 0:
        raise language_compat.note_error(TTUnsupportedError(
            f"{name}(nan_propagate=True): the Tensix matrix engine's max / min reduction does "
            "not propagate NaN (it orders NaN by its bits, and a 16-bit pack turns NaN into "
            "infinity); drop nan_propagate, or test the input for NaN in Python"))


def reduce(src, dst, reduce_type, dim, clear, batch=1, nan_propagate=False, annotations=None):
    """TileLang's generic ``T.reduce(src, dst, "sum" | "max" | "min" | "abssum" | "absmax",
    dim, clear)``."""
    kind = str(reduce_type)
    if kind not in ("sum", "max", "min", "abssum", "absmax"):
        raise language_compat.note_error(TTUnsupportedError(
            f"T.reduce(reduce_type={kind!r}) is not supported (sum, max, min, abssum, absmax)"))
    _batch(batch)
    if kind in ("max", "min", "absmax"):
        _nan_propagate(f"T.reduce({kind!r})", nan_propagate)
    return _reduce(kind, src, dst, dim, clear)


def reduce_sum(src, dst, dim=-1, clear=True, batch=1, annotations=None):
    _batch(batch)
    return _reduce("sum", src, dst, dim, clear)


def reduce_max(src, dst, dim=-1, clear=True, batch=1, nan_propagate=False, annotations=None):
    _batch(batch)
    _nan_propagate("T.reduce_max", nan_propagate)
    return _reduce("max", src, dst, dim, clear)


def reduce_min(src, dst, dim=-1, clear=True, batch=1, nan_propagate=False, annotations=None):
    _batch(batch)
    _nan_propagate("T.reduce_min", nan_propagate)
    return _reduce("min", src, dst, dim, clear)


def reduce_abssum(src, dst, dim=-1, clear=True, batch=1, annotations=None):
    _batch(batch)
    return _reduce("abssum", src, dst, dim, clear)


def reduce_absmax(src, dst, dim=-1, clear=True, batch=1, nan_propagate=False, annotations=None):
    _batch(batch)
    _nan_propagate("T.reduce_absmax", nan_propagate)
    return _reduce("absmax", src, dst, dim, clear)


def _jit_func():
    from .jit import JITImpl

    return JITImpl


def __ldg(x):  # noqa: N807 - TileLang's name; a read-only-cache load is a plain read here
    return x


def assume(cond):
    """``T.assume(cond)``: a fact the kernel's author states.  Kept with its text as written
    (the sizes in it are specialised per call later), so A0.000.1 can name it when it is
    false for the sizes of a call."""
    return ops.call("tt.assume", cond, tirx.StringImm(str(cond)))


def infinity(dtype, span=None):
    """``T.infinity(dtype)``: positive infinity of a float dtype, bfloat16 included (TVM's own
    knows float16 / float32 / float64 only); other dtypes as TVM decides."""
    name = dtype_name(dtype)
    if name in ("bfloat16", "float16", "float32", "float64"):
        return tirx.const(float("inf"), name)
    return _T.infinity(name)


def __getattr__(name):
    """TileLang dtypes, fast-math spellings, no-ops and refusals; everything else is
    TVMScript's own (``T.exp``, ``T.max``, ``T.if_then_else``, ...)."""
    if name in DTYPES:
        return DTYPES[name]
    if name in REFUSED_DTYPES:
        return language_compat.Refused(name, REFUSED_DTYPES[name])
    if name in _FAST_MATH:
        return _fast_math(name)
    if name == "__ldg":
        return globals()["__ldg"]
    if name in _SCANS:
        return _ScanOp(name, _SCANS[name])
    if name == "JITFunc":
        return _jit_func()
    if name in ("print", "device_assert"):
        from . import language_debug

        return getattr(language_debug, name)
    found = language_compat.resolve(name)
    if found is not None:
        return found
    try:
        return getattr(_T, name)
    except AttributeError:
        raise AttributeError(f"tilelang_tt.language has no attribute {name!r}") from None

