"""Several ``T.Kernel`` launches in one kernel, and ``T.alloc_global`` tensors: the split that
comes before the pipeline (``tilelang_tt.compile`` calls it; every launch then runs the whole
pipeline as a kernel of its own).

Requires: a frontend PrimFunc (``tilelang_tt.language``), its scalar parameters and symbolic
sizes already specialised (``runtime/dynamic.py``).

Guarantees (``split_launches``): ``None`` when the function's body is one launch nest and it
allocates no global tensor (the single-launch path, unchanged); else one :class:`Launch` per
top-level launch nest (sibling ``thread_extent`` nests of the body, in program order), each a
PrimFunc whose body is that nest and whose parameters are the tensors it touches - the
function's own tensor parameters in their order, then the ``T.alloc_global`` tensors it touches
(the same buffer variables: a global is a tensor parameter of every launch that touches it); a
tensor parameter no launch touches is a parameter of the first launch (the host still takes its
file).  Name-keyed attributes (layout requests, safe values) keep the launch's tensors only,
``T.annotate_l1_alias`` specs those stated inside the launch.
Statements between launches other than ``T.alloc_global``, a ``T.alloc_global`` inside a launch
and a global named like another tensor are ``TTUnsupportedError`` naming the line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import tvm
from tvm import tirx

from ... import attrs
from ...errors import TTUnsupportedError
from ..common import collect


@dataclass
class Launch:
    """One launch: its PrimFunc, and which of its parameters are globals (by name)."""
    name: str
    func: tirx.PrimFunc
    globals: list = field(default_factory=list)


def _is_launch(stmt) -> bool:
    return isinstance(stmt, tirx.AttrStmt) and str(stmt.attr_key) == "thread_extent"


def _is_global_alloc(stmt) -> bool:
    return isinstance(stmt, tirx.AllocBuffer) and str(stmt.buffer.scope()) == "global"


def _statements(body) -> list:
    return list(body.seq) if isinstance(body, tirx.SeqStmt) else [body]


def split_launches(func: tirx.PrimFunc, name: str) -> list[Launch] | None:
    """The launches of ``func`` (module docstring), or ``None`` for one launch and no global."""
    stmts = _statements(func.body)
    globals_ = [s.buffer for s in stmts if _is_global_alloc(s)]
    launches = [s for s in stmts if _is_launch(s)]
    for s in stmts:
        for inner in collect(s, tirx.AllocBuffer):
            if _is_global_alloc(inner) and not any(inner.same_as(t) for t in stmts):
                raise TTUnsupportedError(
                    f"T.alloc_global({inner.buffer.name}) inside a T.Kernel: a "
                    "global tensor is allocated by the host for the whole function",
                    span=inner.span, hint="allocate it at the top of the function, before the "
                    "first `with T.Kernel(...)`")
    if len(launches) <= 1 and not globals_:
        return None
    if not launches:
        raise TTUnsupportedError(f"kernel {name} allocates T.alloc_global tensors but launches "
                                 "no `with T.Kernel(...)`")
    for s in stmts:
        if not (_is_launch(s) or _is_global_alloc(s)):
            raise TTUnsupportedError(
                f"kernel {name}: a statement outside its `with T.Kernel(...)` launches, "
                f"`{str(s).strip().splitlines()[0]}`; a kernel of several launches "
                "holds only launches and T.alloc_global tensors at its top level",
                span=getattr(s, "span", None),
                hint="move the statement into the launch that needs it")
    params = [p for p in func.params if tirx.is_buffer_var(p)]
    names = [str(p.name) for p in params]
    for g in globals_:
        if str(g.name) in names:
            raise TTUnsupportedError(
                f"kernel {name}: T.alloc_global tensor {g.name} has the name of another "
                "tensor of the kernel; the host program names every tensor's buffer",
                hint=f"give the global tensor another name than {g.name}")
        names.append(str(g.name))
    buffers = params + globals_
    touched = [_touched(s, buffers) for s in launches]  # indices into buffers
    anywhere = set().union(*touched)
    out = []
    for i, (stmt, used) in enumerate(zip(launches, touched)):
        own = [p for k, p in enumerate(params) if k in used or (i == 0 and k not in anywhere)]
        glob = [g for k, g in enumerate(globals_, start=len(params)) if k in used]
        sub = f"{name}_launch{i}"
        f = _with_attrs(tirx.PrimFunc(own + glob, stmt, func.ret_type, None, func.span),
                        func, own + glob, stmt.span).with_attr("global_symbol", sub)
        out.append(Launch(sub, f, [str(g.name) for g in glob]))
    return out


def _touched(stmt, buffers) -> set:
    """Indices of the buffers of ``buffers`` that ``stmt`` uses (as variables anywhere in it)."""
    used = collect(stmt, tvm.ir.Var)
    return {k for k, b in enumerate(buffers) if any(b.same_as(v) for v in used)}


def _with_attrs(launch, func, buffers, span):
    """``launch`` with ``func``'s attributes: the name-keyed ones kept for ``buffers``, the
    L1 alias specs for those stated in its lines (``span``)."""
    keep = {str(b.name) for b in buffers}
    for key, value in (func.attrs.items() if func.attrs is not None else []):
        key = str(key)
        if key in (attrs.LAYOUT_REQUEST, attrs.SAFE_VALUES):
            value = {str(k): v for k, v in value.items() if str(k) in keep}
        elif key == attrs.L1_ALIAS_REQUEST:
            value = [spec for spec in value if _within(spec, span)]
        launch = launch.with_attr(key, value)
    return launch


def _within(spec, span) -> bool:
    """The alias spec was stated inside the launch of ``span`` (a spec without a line: in
    every launch, where its buffer names are looked up)."""
    if span is None or "line" not in spec:
        return True
    line = int(spec["line"])
    return int(span.line) <= line <= int(getattr(span, "end_line", span.line) or span.line)
