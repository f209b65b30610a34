"""TileLang's eager ``@tilelang.jit`` form, rewritten into a TVMScript prim_func.

    @tilelang.jit
    def add(A, B, block_M, dtype):
        M, N = T.const("M, N")          # sizes, from the tensors' shapes at call time
        A: T.Tensor((M, N), dtype)      # tensor parameters annotated in the body
        B: T.Tensor((M, N), dtype)
        C = T.empty((M, N), dtype)      # an output
        with T.Kernel(...) as (bx, by):
            ...
        return C

:func:`analyse` reads the function's top-level statements once; :func:`build` turns it into
an ordinary ``T.prim_func`` for one binding of its compile-time values: tensor parameters
annotated in the body become ``T.handle`` parameters matched against their annotation
(``A = match(A_handle, T.Tensor(...))``), each ``T.empty`` adds an output parameter after them,
``T.const`` / ``T.dynamic`` statements and scalar annotations disappear (their values are
bound as names), ``return x`` becomes a call that records the tensors it gives (a
``T.empty`` made in a macro the function calls adds its own output parameter when it is
evaluated, see :class:`_Outputs`; the kernel records the returned outputs' indices as
``tilelang_out_idx``).  ``T.StridedTensor[shape, strides, dtype]`` annotations make ordinary
tensors of ``shape`` (the host copies a strided view to and from a contiguous array); their
strides bind ``T.const`` sizes or are checked against the arguments (:func:`check_strides`).
Other parameters (block sizes, dtypes, flags) are
compile-time values; scalar parameters annotated with a dtype (``x: T.float32 = 1``), runtime
scalars in TileLang, are compile-time values here too (one kernel per value).  The rewritten
nodes keep the user's line numbers, so parse errors point at the user's source.
"""

from __future__ import annotations

import ast
import copy
import inspect
from dataclasses import dataclass, field

from tvm.script.ir_builder import tirx as _IB
from tvm.script.parser.core import diagnostics
from tvm.tirx import Buffer

from .. import attrs
from .. import language as T
from ..errors import TTCompileError, TTUnsupportedError

_HANDLE = "__tt_handle"
_MATCH = "__tt_match"
_OUTPUT = "__tt_output"
_PRIM_FUNC = "__tt_prim_func"
_RETURN = "__tt_return"


@dataclass
class EagerFunction:
    """What the eager form's top-level statements declare."""

    fn: object
    source: diagnostics.Source
    tree: ast.Module
    params: list[str]
    tensor_params: list[str] = field(default_factory=list)  # signature order
    body_tensor_params: set = field(default_factory=set)     # annotated in the body
    sizes: dict = field(default_factory=dict)                # python name -> T.const name
    size_kinds: dict = field(default_factory=dict)           # T.const name -> "const"/"dynamic"
    matcher: dict = field(default_factory=dict)              # T.const name -> (param, dim)
    stride_matcher: dict = field(default_factory=dict)       # T.const name -> (param, dim)
    strides: dict = field(default_factory=dict)              # param -> T.StridedTensor's
    # strides (an ast node) and the annotation's line
    outputs: list[str] = field(default_factory=list)         # T.empty targets, in order
    returns: list[str] | None = field(default_factory=list)  # None: known when built
    # (``return copy_impl(A)`` of a T.empty made in a macro)
    has_return: bool = False
    scope: dict = field(default_factory=dict)  # T.defining_scope, taken when decorated


def _error(source, node, message, cls=TTCompileError):
    line = source.start_line + getattr(node, "lineno", 1) - 1
    return cls(f"{source.source_name}:{line}: {message}")


def _env(fn, scope: dict) -> dict:
    """The names ``fn``'s source reads (``scope``: :func:`T.defining_scope`, found when the
    function was decorated)."""
    return T.function_names(fn, scope)


def _lookup(node, env):
    """The object a ``Name`` / ``a.b.c`` expression denotes in the function's scope, or None
    (nothing is called or evaluated beyond attribute lookups)."""
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _lookup(node.value, env)
        try:
            return getattr(base, node.attr) if base is not None else None
        except Exception:  # a refused T.* name raises on attribute access
            return None
    return None


def _callee(node, env):
    return _lookup(node.func, env) if isinstance(node, ast.Call) else None


def _is_tensor_annotation(node, env) -> bool:
    head = node.func if isinstance(node, ast.Call) else \
        node.value if isinstance(node, ast.Subscript) else node
    return isinstance(_lookup(head, env), T._TensorProxy)


def _shape_node(annot):
    """The shape expression of ``T.Tensor(shape, ...)`` / ``T.Tensor[shape, ...]``."""
    if isinstance(annot, ast.Call):
        for kw in annot.keywords:
            if kw.arg == "shape":
                return kw.value
        return annot.args[0] if annot.args else None
    if isinstance(annot, ast.Subscript):
        sl = annot.slice
        if isinstance(sl, ast.Tuple) and sl.elts and isinstance(sl.elts[0], (ast.Tuple, ast.List)):
            return sl.elts[0]
        if isinstance(sl, ast.Tuple) and len(sl.elts) == 2 and \
                not isinstance(sl.elts[1], (ast.Tuple, ast.List)):
            return sl.elts[0]
        return sl
    return None


def _strides_node(annot, env):
    """The strides expression of ``T.StridedTensor(shape, strides, dtype)`` /
    ``T.StridedTensor[shape, strides, dtype]``, or None for other annotations."""
    head = annot.func if isinstance(annot, ast.Call) else \
        annot.value if isinstance(annot, ast.Subscript) else annot
    if not isinstance(_lookup(head, env), T._StridedTensorProxy):
        return None
    if isinstance(annot, ast.Call):
        for kw in annot.keywords:
            if kw.arg == "strides":
                return kw.value
        return annot.args[1] if len(annot.args) > 1 else None
    if isinstance(annot, ast.Subscript) and isinstance(annot.slice, ast.Tuple) and \
            len(annot.slice.elts) > 1:
        return annot.slice.elts[1]
    return None


def _names(target) -> list[str] | None:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name)
                                                         for e in target.elts):
        return [e.id for e in target.elts]
    return None


def has_inner_prim_func(fn) -> bool:
    """The factory form: the function defines a ``@T.prim_func`` and returns it."""
    tree = ast.parse(diagnostics.Source(fn).source)
    env = _env(fn, T.defining_scope(fn, tree))
    for node in ast.walk(tree.body[0]):
        if isinstance(node, ast.FunctionDef) and node is not tree.body[0]:
            for dec in node.decorator_list:
                head = dec.func if isinstance(dec, ast.Call) else dec
                if getattr(_lookup(head, env), "dispatch_token", None) == "tirx" or \
                        (isinstance(head, ast.Attribute) and head.attr == "prim_func"):
                    return True
    return False


def is_eager(fn) -> bool:
    """Whether ``fn``'s body uses the eager form (sizes, annotations, outputs or a launch)."""
    try:
        info = analyse(fn)
    except TTCompileError:
        return True
    if info.tensor_params or info.sizes or info.outputs:
        return True
    env = _env(fn, info.scope)
    for stmt in info.tree.body[0].body:
        if isinstance(stmt, ast.With) and any(
                _callee(item.context_expr, env) is T.Kernel for item in stmt.items):
            return True
    return False


def analyse(fn) -> EagerFunction:
    """Read ``fn``'s top-level statements; call it when ``fn`` is decorated (the names its
    signature reads from the scope defining it are taken then, see T.defining_scope)."""
    source = diagnostics.Source(fn)
    tree = ast.parse(source.source)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise TTCompileError(f"@tilelang.jit expects a function, got {type(fn).__name__}")
    scope = T.defining_scope(fn, tree)
    env = _env(fn, scope)
    sig = inspect.signature(fn)
    info = EagerFunction(fn=fn, source=source, tree=tree, params=list(sig.parameters),
                         scope=scope)

    from ..language_compat import Refused

    def refuse(annot, node):
        head = annot.func if isinstance(annot, ast.Call) else \
            annot.value if isinstance(annot, ast.Subscript) else annot
        found = _lookup(head, env)
        if isinstance(found, Refused):
            raise _error(source, node, str(found._error()), TTUnsupportedError)

    for arg in fdef.args.args + fdef.args.kwonlyargs:
        if arg.annotation is not None:
            refuse(arg.annotation, arg)
    for stmt in fdef.body:
        if isinstance(stmt, ast.AnnAssign):
            refuse(stmt.annotation, stmt)

    signature_tensors = set()
    for arg in fdef.args.args + fdef.args.kwonlyargs:
        if arg.annotation is not None and _is_tensor_annotation(arg.annotation, env):
            signature_tensors.add(arg.arg)

    annotations = {}
    for stmt in fdef.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            fn_obj = _callee(stmt.value, env)
            if fn_obj in (T.const, T.dynamic):
                args = stmt.value.args
                if not args or not isinstance(args[0], ast.Constant) or \
                        not isinstance(args[0].value, str):
                    raise _error(source, stmt, "T.const / T.dynamic take the size names as a "
                                 'string literal, e.g. M, N = T.const("M, N")')
                declared = T._split_names(args[0].value)
                targets = _names(stmt.targets[0])
                if targets is None or len(targets) != len(declared):
                    raise _error(source, stmt, f"assign T.{fn_obj.__name__}("
                                 f"{args[0].value!r}) to {len(declared)} names")
                for py, name in zip(targets, declared):
                    info.sizes[py] = name
                    info.size_kinds[name] = fn_obj.__name__
                continue
            if fn_obj is T.empty and _names(stmt.targets[0]) and \
                    len(_names(stmt.targets[0])) == 1:
                info.outputs.append(_names(stmt.targets[0])[0])
                continue
        if isinstance(stmt, ast.AnnAssign) and stmt.value is None and \
                isinstance(stmt.target, ast.Name) and stmt.target.id in info.params and \
                _is_tensor_annotation(stmt.annotation, env):
            info.body_tensor_params.add(stmt.target.id)
            annotations[stmt.target.id] = stmt.annotation
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            names = _names(stmt.value)
            info.has_return = True
            if names is not None and any(n in info.params for n in names):
                raise _error(source, stmt, "a @tilelang.jit function returns only tensors "
                             "declared with T.empty (`C = T.empty(shape, dtype)`), not its "
                             "parameters")
            # names of T.empty outputs, or an expression whose tensors the build checks
            info.returns = names if names is not None and \
                all(n in info.outputs for n in names) else None

    info.tensor_params = [p for p in info.params
                          if p in signature_tensors or p in info.body_tensor_params]
    for out in info.outputs if info.returns is not None else ():
        if out not in info.returns:
            raise _error(source, fdef, f"output {out} = T.empty(...) is not returned; "
                         f"`return {', '.join(info.outputs)}`")

    # which tensor dimension gives each size: its first direct use in an annotation
    size_names = {py: name for py, name in info.sizes.items()}
    for param in info.tensor_params:
        annot = annotations.get(param)
        if annot is None:
            annot = next(a.annotation for a in fdef.args.args + fdef.args.kwonlyargs
                         if a.arg == param)
        shape = _shape_node(annot)
        dims = shape.elts if isinstance(shape, (ast.Tuple, ast.List)) else [shape]
        for d, dim in enumerate(dims):
            if isinstance(dim, ast.Name) and dim.id in size_names:
                info.matcher.setdefault(size_names[dim.id], (param, d))
        strides = _strides_node(annot, env)
        if strides is not None:
            info.strides[param] = (strides, source.start_line + annot.lineno - 1)
            elts = strides.elts if isinstance(strides, (ast.Tuple, ast.List)) else [strides]
            for d, st in enumerate(elts):
                if isinstance(st, ast.Name) and st.id in size_names:
                    info.stride_matcher.setdefault(size_names[st.id], (param, d))
    return info


def _evaluated_matcher(info: EagerFunction, compile_values: dict) -> dict:
    """T.const name -> (param, dim) for annotations whose shape is a Python expression the
    source does not spell out (``A_shape = (K, M) if trans_A else (M, K)``, then
    ``A: T.Tensor(A_shape, ...)``): the top-level assignments before the kernel launch are
    evaluated with these compile-time values and one variable per size, and the annotation's
    shape is read off.  A statement that fails to evaluate is skipped (its names stay unknown)."""
    from tvm import tirx

    markers = {py: tirx.Var(name, "int32") for py, name in info.sizes.items()}
    by_var = {id(v): info.sizes[py] for py, v in markers.items()}
    env = _env(info.fn, info.scope)
    env.update(compile_values)
    env.update(markers)
    found = {}
    for stmt in info.tree.body[0].body:
        if isinstance(stmt, ast.With):
            break
        try:
            if isinstance(stmt, ast.Assign) and \
                    _callee(stmt.value, env) not in (T.const, T.dynamic, T.empty):
                exec(compile(ast.fix_missing_locations(ast.Module([stmt], [])), "<eager>",
                             "exec"), env)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is None and \
                    isinstance(stmt.target, ast.Name) and stmt.target.id in info.tensor_params:
                node = _shape_node(stmt.annotation)
                shape = eval(compile(ast.Expression(node), "<eager>", "eval"), env)
                shape = shape if isinstance(shape, (tuple, list)) else [shape]
                for d, dim in enumerate(shape):
                    if id(dim) in by_var:
                        found.setdefault(by_var[id(dim)], (stmt.target.id, d))
        except Exception:  # noqa: BLE001  (user code evaluated out of context)
            continue
    return found


def size_values(info: EagerFunction, tensors: dict, given: dict,
                compile_values: dict | None = None) -> dict:
    """T.const name -> int, from keyword values or the tensors' shapes."""
    values = {}
    matcher = dict(info.matcher)
    if any(n not in matcher and n not in given and n not in info.stride_matcher
           for n in info.sizes.values()):
        for name, where in _evaluated_matcher(info, compile_values or {}).items():
            matcher.setdefault(name, where)
    for name in dict.fromkeys(info.sizes.values()):
        if name in given:
            values[name] = int(given[name])
        elif name in matcher and matcher[name][0] in tensors:
            param, dim = matcher[name]
            shape = tensor_shape(tensors[param])
            if dim >= len(shape):
                raise TTCompileError(f"tensor {param} has rank {len(shape)}; its annotation "
                                     f"gives {name} as dimension {dim}")
            values[name] = int(shape[dim])
        elif name in info.stride_matcher and info.stride_matcher[name][0] in tensors:
            param, dim = info.stride_matcher[name]
            strides = tensor_strides(tensors[param])
            if dim >= len(strides):
                raise TTCompileError(f"tensor {param} has rank {len(strides)}; its annotation "
                                     f"gives {name} as stride {dim}")
            values[name] = int(strides[dim])
        else:
            hint = (f" or the tensor {matcher[name][0]}" if name in matcher else
                    f"; {name} is not a dimension of any annotated tensor")
            raise TTCompileError(f"{info.fn.__name__}: no value for size {name}: pass "
                                 f"{name}=...{hint}")
    return values


def tensor_strides(value) -> tuple:
    """A tensor argument's strides in elements (a torch tensor's ``stride()``, a numpy array's
    byte strides over its item size; a placeholder ``T.Tensor(shape)`` is contiguous)."""
    stride = getattr(value, "stride", None)
    if callable(stride):  # torch
        return tuple(int(s) for s in stride())
    if hasattr(value, "strides") and hasattr(value, "itemsize") and \
            not isinstance(value, Buffer):
        return tuple(int(s) // int(value.itemsize) for s in value.strides)
    shape = tensor_shape(value)
    out, step = [], 1
    for extent in reversed(shape):
        out.append(step)
        step *= int(extent)
    return tuple(reversed(out))


def check_strides(info: EagerFunction, tensors: dict, compile_values: dict, sizes: dict):
    """Each ``T.StridedTensor`` argument has the strides its annotation gives (a dimension
    of extent 1 has any stride), else a TTCallArgumentError naming the tensor and line."""
    from ..runtime.tensors import TTCallArgumentError

    if not info.strides:
        return
    env = _env(info.fn, info.scope)
    env.update(compile_values)
    env.update({py: sizes[name] for py, name in info.sizes.items() if name in sizes})
    for param, (node, line) in info.strides.items():
        if param not in tensors:
            continue
        try:
            expected = eval(compile(ast.Expression(node), "<strides>", "eval"), env)
        except Exception as err:  # noqa: BLE001  (the user's expression)
            raise TTCompileError(f"{info.source.source_name}:{line}: the strides of "
                                 f"T.StridedTensor {param} do not evaluate: {err}") from None
        expected = [int(e) for e in (expected if isinstance(expected, (tuple, list))
                                     else [expected])]
        actual = tensor_strides(tensors[param])
        shape = tensor_shape(tensors[param])
        if len(expected) != len(actual) or any(
                e != a for e, a, n in zip(expected, actual, shape) if int(n) != 1):
            raise TTCallArgumentError(
                f"{info.source.source_name}:{line}: tensor {param}: T.StridedTensor strides "
                f"{tuple(expected)} (in elements), but the argument has strides "
                f"{tuple(actual)}; pass a view with those strides or annotate them as sizes "
                "(T.const) to take the argument's")


def tensor_shape(value) -> tuple:
    if isinstance(value, Buffer):  # a T.Tensor(shape, dtype) placeholder
        return tuple(int(s) for s in value.shape)
    return tuple(value.shape)


def _match(handle, buffer):
    return _IB.match_buffer(handle, list(buffer.shape), str(buffer.dtype))


class _Outputs:
    """The outputs of one build: each ``T.empty`` (a top-level ``C = T.empty(...)``, whose
    handle parameter the rewrite declares, or one in a macro the function calls, which adds
    its parameter when TVMScript evaluates it) and what the function returns."""

    def __init__(self, info: EagerFunction):
        self.info = info
        self.made = []        # (handle var, buffer), in the order they were made
        self.returned = None  # the buffers `return` gives, in order

    def output(self, handle, *shape, dtype="float32"):
        shape, dtype = T.empty_args(*shape, dtype=dtype)
        buf = _IB.match_buffer(handle, list(shape), str(dtype))
        self.made.append((handle, buf))
        return buf

    def empty(self, shape, dtype):
        """``T.empty(...)`` evaluated while the function is parsed (in a macro)."""
        handle = T.handle()
        try:
            _IB.arg(f"out{len(self.made)}", handle)
        except Exception:  # noqa: BLE001  (TVM's "must be called at the top of a PrimFunc")
            raise TTCompileError(
                f"T.empty{tuple(shape)!r} in {self.info.fn.__name__}: an output is a kernel "
                "parameter, so T.empty must run before the T.Kernel launch (at the top of the "
                "function or of a macro called there)") from None
        return self.output(handle, *shape, dtype=dtype)

    def give(self, value, line):
        """``return value`` of the function: a T.empty output or a tuple of them."""
        values = list(value) if isinstance(value, (tuple, list)) else [value]
        made = [b for _, b in self.made]
        for v in values:
            if not any(v.same_as(b) for b in made if isinstance(v, Buffer)):
                what = f"tensor {v.name}" if isinstance(v, Buffer) else type(v).__name__
                raise TTCompileError(
                    f"{self.info.source.source_name}:{line}: {self.info.fn.__name__} returns "
                    f"{what}; a @tilelang.jit function returns only tensors declared with "
                    "T.empty (`C = T.empty(shape, dtype)`, in the function or a macro it "
                    "calls)")
        self.returned = values

    def out_idx(self, func) -> list[int]:
        """Parameter indices of the returned outputs, counted from the end (``[-1]`` for one
        output, as TileLang records them); every output must be returned."""
        if self.returned is None:
            self.returned = []
        for _, buf in self.made:
            if not any(buf.same_as(r) for r in self.returned):
                raise TTCompileError(
                    f"{self.info.source.source_name}:{self.info.source.start_line}: output "
                    f"{buf.name} = T.empty(...) of {self.info.fn.__name__} is not returned; "
                    "return every output the function declares")
        params = list(func.params)
        idx = []
        for r in self.returned:
            buf = next(b for _, b in self.made if b.same_as(r))
            param = next(i for i, p in enumerate(params) if p.same_as(buf))
            idx.append(param - len(params))
        return idx


def build(info: EagerFunction, compile_values: dict, sizes: dict):
    """The ``T.prim_func`` of one binding of the compile-time values and sizes."""
    fdef = copy.deepcopy(info.tree.body[0])
    env = _env(info.fn, info.scope)

    def handle_arg(name, like):
        arg = ast.arg(arg=name, annotation=ast.Name(id=_HANDLE, ctx=ast.Load()))
        return ast.copy_location(arg, like)

    args = []
    for a in fdef.args.args + fdef.args.kwonlyargs:
        if a.arg not in info.tensor_params:
            continue
        if a.arg in info.body_tensor_params:
            args.append(handle_arg(f"{a.arg}__tt_in", a))
        else:
            args.append(a)
    body = []
    for stmt in fdef.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            callee = _callee(stmt.value, env)
            if callee in (T.const, T.dynamic):
                continue
            if callee is T.empty:
                out = _names(stmt.targets[0])[0]
                args.append(handle_arg(f"{out}__tt_out", stmt))
                call = ast.Call(func=ast.Name(id=_OUTPUT, ctx=ast.Load()),
                                args=[ast.Name(id=f"{out}__tt_out", ctx=ast.Load()),
                                      *stmt.value.args],
                                keywords=stmt.value.keywords)
                stmt.value = ast.copy_location(call, stmt.value)
                body.append(stmt)
                continue
        if isinstance(stmt, ast.AnnAssign) and stmt.value is None and \
                isinstance(stmt.target, ast.Name) and stmt.target.id in info.params:
            name = stmt.target.id
            if name in info.body_tensor_params:
                call = ast.Call(func=ast.Name(id=_MATCH, ctx=ast.Load()),
                                args=[ast.Name(id=f"{name}__tt_in", ctx=ast.Load()),
                                      stmt.annotation], keywords=[])
                new = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())],
                                 value=ast.copy_location(call, stmt))
                body.append(ast.copy_location(new, stmt))
            continue  # a scalar parameter's annotation: its value is bound
        if isinstance(stmt, ast.Return):
            if stmt.value is not None:
                call = ast.Call(func=ast.Name(id=_RETURN, ctx=ast.Load()),
                                args=[stmt.value, ast.Constant(info.source.start_line +
                                                               stmt.lineno - 1)],
                                keywords=[])
                body.append(ast.copy_location(ast.Expr(value=ast.copy_location(call, stmt)),
                                              stmt))
            continue
        body.append(stmt)
    if not body:
        body = [ast.copy_location(ast.Pass(), fdef)]
    fdef.body = body
    fdef.args = ast.arguments(posonlyargs=[], args=args, vararg=None, kwonlyargs=[],
                              kw_defaults=[], kwarg=None, defaults=[])
    fdef.returns = None
    fdef.decorator_list = [ast.copy_location(ast.Name(id=_PRIM_FUNC, ctx=ast.Load()), fdef)]
    tree = ast.Module(body=[fdef], type_ignores=[])
    ast.fix_missing_locations(tree)

    extra = _env(info.fn, info.scope)
    extra.update(compile_values)
    extra.update({py: sizes[name] for py, name in info.sizes.items()})
    outputs = _Outputs(info)
    extra.update({_HANDLE: T.handle, _MATCH: _match, _OUTPUT: outputs.output,
                  _RETURN: outputs.give, _PRIM_FUNC: T.prim_func})
    with T.binding_sizes(sizes), T.strided_tensors_allowed(), T.making_outputs(outputs.empty):
        func = T.prim_func_from_tree(info.fn, extra, tree)
    idx = outputs.out_idx(func)
    return func.with_attr(attrs.OUT_IDX, idx) if idx else func


def build_prim_func(fn):
    """``@T.prim_func`` on a function in the eager form with fixed shapes (``def k(A):
    A: T.Tensor[(128, 128), T.float32]; B = T.empty(...); ...; return B``): the kernel, with
    its outputs' parameter indices recorded as ``tilelang_out_idx``."""
    info = analyse(fn)
    where = f"{info.source.source_name}:{info.source.start_line}"
    if info.sizes:
        kinds = sorted(set(info.size_kinds.values()))
        raise TTUnsupportedError(
            f"{where}: @T.prim_func {fn.__name__}: sizes declared with "
            f"T.{'/T.'.join(kinds)} ({', '.join(info.sizes)}) need values at compile time; "
            "decorate the function with @tilelang.jit instead (sizes come from the arrays "
            "passed or from f.compile(M=..., ...))")
    if info.strides:
        param, (_, line) = next(iter(info.strides.items()))
        raise TTUnsupportedError(
            f"{info.source.source_name}:{line}: @T.prim_func {fn.__name__}: T.StridedTensor "
            f"{param}: a strided tensor parameter is supported in a @tilelang.jit function, "
            "which checks the argument's strides and copies the view to and from a "
            "contiguous array; decorate the function with @tilelang.jit")
    scalars = [p for p in info.params if p not in info.tensor_params]
    if scalars:
        raise TTCompileError(
            f"{where}: @T.prim_func {fn.__name__}: parameter {', '.join(scalars)} is not "
            "annotated as a tensor; a kernel in the eager form (T.empty outputs, `return`) "
            "takes tensors annotated in the signature or the body (`A: T.Tensor[(M, N), "
            "dtype]`); for compile-time values decorate it with @tilelang.jit")
    return build(info, {}, {})
