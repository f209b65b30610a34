"""TileLang's reducers (``T.alloc_reducer``, ``T.reducer_init``, ``T.reducer_update``,
``T.finalize_reducer``) as frontend TIR.

On a GPU a reducer is a per-thread partial that a final all-reduce combines.  A Tensix core
runs its block as one program, so a reducer is a block buffer (a fragment) folded across the
``T.Parallel`` dimension it is updated over and across the serial / pipelined loop around it:
a tile reduction into loop-carried state.  The frontend writes:

- ``T.alloc_reducer(shape, dtype, op, replication)``: a ``local.fragment`` allocation whose
  annotation ``tt.reducer`` (``attrs.REDUCER``) holds ``{"op": op, "v1": legacy form}``
  (``replication`` is a CUDA thread-replication hint: accepted, no meaning here);
- ``T.reducer_init(r[, init])``: ``T.fill(r, init)`` (default: the op's identity, 0 /
  -inf / +inf); on one program the logical starting value is combined exactly once;
- ``T.reducer_update(r[I], v)``: the store ``r[I] = r[I] op v`` marked with an ``AttrStmt``
  ``tt.reducer_update`` (``attrs.REDUCER_UPDATE``, node: the op), which the pass
  ``frontend/reducers.py`` turns into a tile reduction;
- ``T.finalize_reducer(r)``: nothing (the values are already combined);
  ``T.finalize_reducer(r, dst)``: ``T.copy(r, dst)``.  ``batch`` sizes a CUDA all-reduce and
  is accepted as a no-op.

A reducer allocated without ``replication`` that no v2 call (``T.reducer_init``,
``T.reducer_update``, ``T.finalize_reducer(r, dst)``) touches is a legacy one, as in TileLang:
``T.clear`` / ``+=`` / in-place finalize / direct reads; :func:`finish` writes the final
``"v1"`` into the annotation after parsing.  ``T.clear`` / ``T.fill`` of a reducer the v2 calls
use is refused.  ``batch`` is checked as TileLang does (>= 1, at most the output elements,
dividing them).

The epoch rules TileLang checks when it parses (one init before any update, an update inside
``T.Parallel``, finalize once, a v2 reducer finalized into a destination, a starting value of
the reducer's dtype) are checked here in program order, each naming the call; the rules about
plain reads and stores of a v2 reducer are the pass's (they need the IR).
"""

from __future__ import annotations

import threading

from tvm import tirx
from tvm.ir import TensorLoad
from tvm.script import tirx as _T
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as _IB
from tvm.tirx import is_buffer_var

from . import attrs, language_compat
from .errors import TTArgumentError, TTAssertionError, TTCompileError, TTDtypeError, \
    TTUnsupportedError

OPS = ("sum", "max", "min")
_BITWISE = ("bitand", "bitor", "bitxor")
_STATE = threading.local()


def _epochs() -> list:
    """[(buffer, state dict)] of the reducers of the kernel being parsed, in order."""
    if not hasattr(_STATE, "epochs"):
        _STATE.epochs = []
    return _STATE.epochs


def reset() -> None:
    """Forget the reducers of the previous kernel (called when a kernel's parse starts)."""
    _epochs().clear()


def _err(cls, message):
    return language_compat.note_error(cls(message))


def _state(buf):
    for b, st in _epochs():
        if b.same_as(buf):
            st["name"] = b.name or "reducer"  # the parser names the buffer after the call
            return st
    return None


def _illegal_plain(st, call):
    return _err(TTCompileError,
                f"{call}({st['name']}): illegal store to reducer {st['name']}: a reducer used "
                f"with T.reducer_init / T.reducer_update is only written by them "
                f"(T.reducer_init({st['name']}[, value]), T.reducer_update({st['name']}[...], "
                "v)); T.clear / T.fill and `+=` belong to the legacy form, "
                "alloc_reducer(replication=...)")


def check_plain_op(buf, call: str) -> None:
    """A tile op writing a reducer (``T.clear(acc)``, ``T.fill(acc, v)``): the legacy (v1)
    form, refused once the reducer is used with the v2 calls (TileLang's rule: a reducer
    allocated without ``replication`` that no v2 call touches is a legacy reducer)."""
    st = _state(buf) if is_buffer_var(buf) else None
    if st is None or st["v1"]:
        return
    if st["v2"]:
        raise _illegal_plain(st, call)
    st["plain"] = st.get("plain") or call


def _use_v2(st, call) -> None:
    """Mark ``st`` used with a v2 call; a legacy write before it is refused."""
    if st["v1"]:
        return
    if st.get("plain"):
        raise _illegal_plain(st, st["plain"])
    st["v2"] = True


def check_finalized() -> None:
    """At the end of a kernel's parse: every v2 reducer was finalized."""
    for b, st in _epochs():
        st["name"] = b.name or "reducer"
        if not st["v1"] and st["init"] and not st["final"]:
            raise TTCompileError(
                f"reducer {st['name']} is never finalized: write T.finalize_reducer("
                f"{st['name']}, result) with a fragment `result` of its shape and dtype and "
                "read the result from it")


def finish(func):
    """``func`` (just parsed) with each reducer's ``tt.reducer`` annotation final: ``"v1"``
    when ``replication`` was given or no v2 call (init, update, finalize into a result) used
    it (TileLang's legacy shim)."""
    if not _epochs():
        return func
    from .passes.common import tt_map

    def fix(alloc):
        ann = alloc.annotations.get(attrs.REDUCER) if alloc.annotations else None
        st = _state(alloc.buffer) if ann is not None else None
        if st is None:
            return alloc
        annotations = dict(alloc.annotations)
        annotations[attrs.REDUCER] = {"op": st["op"], "v1": st["v1"] or not st["v2"]}
        return tirx.AllocBuffer(alloc.buffer, annotations, span=alloc.span)

    return func.with_body(tt_map(func.body, [(tirx.AllocBuffer, fix)]))


def _identity(op: str, dtype: str):
    if op == "sum":
        return tirx.const(0, dtype)
    if dtype.startswith(("int", "uint")):
        info = {"int8": 7, "int16": 15, "int32": 31, "int64": 63}.get(dtype)
        if info is None:
            raise _err(TTDtypeError, f"T.reducer_init: a {op} reducer of {dtype} is not "
                                     "supported")
        lim = (1 << info) - 1
        return tirx.const(-lim - 1 if op == "max" else lim, dtype)
    return tirx.const(float("-inf") if op == "max" else float("inf"), dtype)


def alloc_reducer(shape, dtype, op="sum", replication=None):
    """TileLang ``T.alloc_reducer``: a fragment carrying its combine op (module docstring)."""
    from .language import _shape, dtype_name

    op = str(op)
    name = dtype_name(dtype)
    if op in _BITWISE:
        if not name.startswith(("int", "uint")) and name != "bool":
            raise _err(TTAssertionError, f"T.alloc_reducer(op={op!r}): bitwise reducer op "
                                         f"'{op}' requires an integer dtype, got {name}")
        raise _err(TTUnsupportedError, f"T.alloc_reducer(op={op!r}): bitwise reductions have "
                                       "no tile operation on Tensix; reduce with sum, max or "
                                       "min, or compute the bits with T.Parallel")
    if op not in OPS:
        raise _err(TTArgumentError, f"T.alloc_reducer(op={op!r}): expected one of "
                                    "'sum', 'max', 'min'")
    if replication is not None and str(replication) not in ("all", "none"):
        raise _err(TTArgumentError, f"T.alloc_reducer(replication={replication!r}): expected "
                                    "'all' or 'none' (a CUDA thread-replication hint, "
                                    "ignored on Tensix)")
    v1 = replication is not None
    buf = _IB.alloc_buffer(_shape(shape), name, scope="local.fragment",
                           annotations={attrs.REDUCER: {"op": op, "v1": v1}})
    _epochs().append((buf, {"op": op, "v1": v1, "init": False, "final": False, "v2": False,
                            "name": buf.name, "dtype": name}))
    return buf


def _reducer_state(buf, call):
    st = _state(buf) if is_buffer_var(buf) else None
    if st is None:
        what = buf.name if is_buffer_var(buf) else repr(buf)
        raise _err(TTArgumentError, f"{call}: {what} is not a reducer; allocate it with "
                                    "T.alloc_reducer(shape, dtype, op=...)")
    return st


def reducer_init(reducer, init=None):
    """TileLang ``T.reducer_init(r[, init])``: ``r`` filled with ``init`` or the identity."""
    from .language import fill

    st = _reducer_state(reducer, "T.reducer_init")
    _use_v2(st, "T.reducer_init")
    if st["init"] and not st["final"]:
        raise _err(TTCompileError, f"T.reducer_init({st['name']}): double T.reducer_init: the "
                                   "reducer's epoch is already open; T.finalize_reducer it "
                                   "before opening another")
    if init is None:
        value = _identity(st["op"], st["dtype"])
    elif isinstance(init, (bool, int, float)):
        value = tirx.const(init, st["dtype"])
    else:
        if str(init.ty.dtype) != st["dtype"]:
            raise _err(TTDtypeError, f"T.reducer_init({st['name']}, ...): the starting value's "
                                     f"dtype {init.ty.dtype} does not match reducer "
                                     f"{st['name']}'s dtype {st['dtype']}; cast it with "
                                     f"T.cast(value, {st['dtype']!r})")
        value = init
    st.update(init=True, final=False, scope=list(IRBuilder.current().frames))
    return fill(reducer, value, _reducer_call=True)


def _inside_parallel() -> bool:
    from .language import _parallel_vars

    marked = _parallel_vars()
    for frame in IRBuilder.current().frames:
        for v in getattr(frame, "vars", None) or []:
            if any(v.same_as(m) for m in marked):
                return True
    return False


def reducer_update(target, value):
    """TileLang ``T.reducer_update(r[I], v)``: the marked store ``r[I] = r[I] op v``."""
    if not isinstance(target, TensorLoad):
        raise _err(TTArgumentError, "T.reducer_update expects `acc[indices]` as its first "
                                    f"argument, got {type(target).__name__}")
    st = _reducer_state(target.source, "T.reducer_update")
    name = st["name"]
    _use_v2(st, "T.reducer_update")
    if not st["init"] and not st["v1"]:
        raise _err(TTCompileError, f"T.reducer_update({name}[...]) before T.reducer_init"
                                   f"({name}): open the epoch with T.reducer_init({name}) first")
    if st["final"]:
        raise _err(TTCompileError, f"T.reducer_update({name}[...]) after T.finalize_reducer"
                                   f"({name}): the epoch is closed; T.reducer_init it again")
    if not _inside_parallel():
        raise _err(TTUnsupportedError, f"T.reducer_update({name}[...]) outside any T.Parallel "
                                       "loop: a reducer folds the elements of a T.Parallel "
                                       "nest; write the update inside `for ... in "
                                       "T.Parallel(...)` over the contributing elements")
    dtype = st["dtype"]
    if isinstance(value, (bool, int, float)):
        value = tirx.const(value, dtype)
    elif str(value.ty.dtype) != dtype:
        value = tirx.Cast(dtype, value)
    old = target
    new = old + value if st["op"] == "sum" else (
        _T.max(old, value) if st["op"] == "max" else _T.min(old, value))
    with _IB.attr(st["op"], attrs.REDUCER_UPDATE, tirx.IntImm("int32", 0)):
        _IB.buffer_store(target.source, new, list(target.indices))
    return None


def _check_scope(st) -> None:
    """The finalize sits in its init's loops and branches, perhaps inside more branches (a
    conditional refinement), never inside a loop the init is not in (TileLang's rule)."""
    from tvm.tirx.script.builder.frame import ForFrame

    init, here = st["scope"], list(IRBuilder.current().frames)
    if len(here) < len(init) or any(not a.same_as(b) for a, b in zip(init, here)) or \
            any(isinstance(f, ForFrame) for f in here[len(init):]):
        name = st["name"]
        raise _err(TTCompileError, f"T.finalize_reducer({name}) is not in the scope of its "
                                   f"T.reducer_init({name}): write both in the same loop and "
                                   "branch (the finalize may sit inside a further `if`)")


def finalize_reducer(reducer, dst=None, batch=1, annotations=None):
    """TileLang ``T.finalize_reducer(r[, dst][, batch])``: nothing, or ``T.copy(r, dst)``."""
    from .language import copy

    if int(batch) < 1:
        raise _err(TTArgumentError, f"T.finalize_reducer: batch must be >= 1, got {batch}")
    st = _reducer_state(reducer, "T.finalize_reducer")
    name = st["name"]
    shape = [int(x) for x in reducer.ty.shape]
    total = 1
    for x in shape:
        total *= x
    if int(batch) > total:
        raise _err(TTArgumentError, f"T.finalize_reducer({name}, batch={batch}): batch exceeds "
                                    f"total output elements ({total})")
    if total % int(batch):
        raise _err(TTArgumentError, f"T.finalize_reducer({name}, batch={batch}): batch must "
                                    f"evenly divide the {total} output elements")
    if dst is not None:
        _use_v2(st, "T.finalize_reducer")
    if st["final"]:
        raise _err(TTCompileError, f"T.finalize_reducer({name}) twice: the epoch is already "
                                   "closed")
    if st["v2"]:
        if not st["init"]:
            raise _err(TTCompileError, f"T.finalize_reducer({name}) before T.reducer_init"
                                       f"({name})")
        if dst is None:
            raise _err(TTCompileError, f"T.finalize_reducer({name}) without a destination is "
                                       "the in-place form of the legacy "
                                       "alloc_reducer(replication=...) reducer; write "
                                       f"T.finalize_reducer({name}, result) into a fragment")
    if st["init"]:
        _check_scope(st)
    st["final"] = True
    if dst is None:
        return None
    if not is_buffer_var(dst) or [int(s) for s in dst.ty.shape] != \
            [int(s) for s in reducer.ty.shape] or str(dst.ty.dtype) != st["dtype"]:
        raise _err(TTArgumentError, f"T.finalize_reducer({name}, dst): dst must be a buffer of "
                                    f"{name}'s shape {list(reducer.ty.shape)} and dtype "
                                    f"{st['dtype']}")
    return copy(reducer, dst)
