"""TileLang's debug printing (``T.print``) as frontend TIR: TT-Metalium's DPRINT.

``T.print(value, msg="")`` of an integer scalar expression (block indices, loop variables,
their arithmetic, ``T.alloc_var`` integers) is one ``tt.dprint(format, bx, by, bz, value)``
statement where it stands (inside the branches and loops around it).  The op belongs to the
reader kernel (ops.py), which runs every block of its core with the block indices bound, so
each block that reaches the statement prints one line, as TileLang's CUDA backend prints one
line per thread block that reaches it (only its thread 0 here: a block is one program)::

    msg='<msg>' BlockIdx=(bx, by, bz): dtype=<dtype> value=<value>

(TileLang's line without ``ThreadIdx``: Tensix has no threads; the emulator and TT-Metalium's
print server put ``0:(x=X,y=Y):BR: `` before it).  ``msg`` defaults to ``expr<value>`` as in
TileLang.  ``T.print(msg="text")`` prints ``msg='text' BlockIdx=(bx, by, bz)``.

``T.print(buf, msg="")`` of a shared or fragment block buffer (2-D, whole tiles, bfloat16,
float16 or float32) prints one line per element in row-major order::

    msg='<msg>' BlockIdx=(bx, by, bz): buffer=<name>, index=<i>, dtype=<dtype> value=<%f>

(``msg`` defaults to ``buffer<name, dtype>`` as in TileLang).  The statement is the marker
``tt.dprint_block(id, format, bx, by, bz)``; the next ``T.copy(buf, tensor)`` parsed claims it
(``tt_print_ids`` in its config) and C1 (shared_to_cb.py) makes it the writer's print of the
block that copy stores: the writer holds the block in a CB there.

Refused (TTUnsupportedError naming the call): a floating-point scalar (a kernel's float values
live in tiles on the compute engines, never in the data movement kernel's registers), a 64-bit
integer (the kernels compute indices in 32 bits), a T.Parallel loop variable, a region of a
block buffer, a block of another scope, rank, shape or dtype, a tensor, anything else.  ``bool`` values
print as ``true`` / ``false``.

``T.device_assert(condition, msg="")`` of the same values is ``tt.device_assert(condition,
text)``, the SDK's ``ASSERT`` (api/debug/assert.h) in the reader, ``text`` (the condition as
written, the message and the source line) a string literal ``&&``-ed into the asserted
expression so the watcher's report (and the emulator's error) shows it; comparisons of signed
integers compare as ``int32_t``.  A buffer or tensor element in either is refused.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.script.ir_builder import tirx as _IB
from tvm.tirx import is_buffer_var

from . import language_compat, ops
from .errors import TTUnsupportedError
from .passes.common import buffer_scope, collect, uses_var

_INTS = ("int8", "int16", "int32", "uint8", "uint16", "uint32")


def _refuse(message: str):
    return language_compat.note_error(TTUnsupportedError(message))


def _escape(text: str) -> str:
    """``text`` as literal text of an fmt format string (braces doubled)."""
    return text.replace("{", "{{").replace("}", "}}")


def _message_head(msg: str):
    """``(text, fields)``: the format text before `` BlockIdx=...`` of a print, ``msg='<msg>'``,
    and the arguments of its leading fields.  A newline in ``msg`` is a ``{}`` field filled by
    ``tt.dprint_newline`` (one DPRINT of several lines, as TileLang's printf shows it): a
    format holds no newline, as a StringImm holding one prints back as no TVMScript."""
    lines = ("msg='" + msg + "'").split("\n")
    return "{}".join(_escape(line) for line in lines), \
        [ops.call("tt.dprint_newline") for _ in lines[1:]]


def _block_indices():
    from .language import get_block_bindings

    return get_block_bindings()


def _where(op: str) -> str:
    from .language import _statement_location

    loc = _statement_location()
    return f" (line {loc[1]})" if loc else ""


def _signed(e):
    """A signed integer value as DPRINT must see it (kernels compute in uint32_t)."""
    return ops.call("tt.as_signed", e)


_COMPARES = (tirx.LT, tirx.LE, tirx.GT, tirx.GE, tirx.EQ, tirx.NE)


def _signed_condition(c):
    """``c`` with the operands of its comparisons of signed integers as signed 32-bit values:
    kernels compute indices in uint32_t, where ``bx - 1 >= 0`` would always hold."""
    if isinstance(c, (tirx.And, tirx.Or)):
        return type(c)(_signed_condition(c.a), _signed_condition(c.b))
    if isinstance(c, tirx.Not):
        return tirx.Not(_signed_condition(c.a))
    if isinstance(c, _COMPARES) and str(c.a.ty).startswith("int"):
        return type(c)(_signed(c.a), _signed(c.b))
    return c


def _no_elements(expr, call: str) -> None:
    """Refuse a value that reads buffer or tensor elements: the reader, which prints and
    asserts, holds no block's elements in registers."""
    loads = [ld for ld in collect(expr, tvm.ir.TensorLoad)
             if buffer_scope(ld.source) not in ("local.var", "local")]  # T.alloc_var: a scalar
    if loads:
        raise _refuse(
            f"{call}{_where(call)}: reads an element of {loads[0].source.name}; a print or "
            "assert sees block indices, loop variables and integer variables only (block "
            "elements live in circular buffers, worked on by tile operations)")


def print(obj=None, msg: str = "", warp_group_id: int = 0, warp_id: int = 0) -> None:  # noqa: A001
    """``T.print``: a DPRINT line per block that reaches the statement (module docstring)."""
    del warp_group_id, warp_id  # which CUDA thread prints: a Tensix block is one program
    if not isinstance(msg, str):
        raise _refuse(f"T.print(msg={msg!r}){_where('print')}: msg must be a Python string")
    bx, by, bz = (b if isinstance(b, tvm.ir.Expr) else tirx.IntImm("int32", int(b))
                  for b in _block_indices())
    if obj is None:
        if not msg:
            raise _refuse(f"T.print(){_where('print')}: give a value to print or a msg")
        text, fields = _message_head(msg)
        _IB.evaluate(ops.call("tt.dprint", tirx.StringImm(text + " BlockIdx=({}, {}, {})"),
                              *fields, bx, by, bz))
        return None
    if isinstance(obj, tvm.ir.Var) and is_buffer_var(obj):
        _print_block(obj, msg, bx, by, bz)
        return None
    if isinstance(obj, tvm.ir.TensorRegion):
        raise _refuse(f"T.print({obj.source.name}[...]){_where('print')}: a block prints "
                      f"whole: T.print({obj.source.name})")
    if isinstance(obj, bool):
        obj = tirx.IntImm("bool", int(obj))
    elif isinstance(obj, int):
        obj = tirx.IntImm("int32", obj)
    if not isinstance(obj, tvm.ir.Expr):
        raise _refuse(f"T.print({obj!r}){_where('print')}: expected an integer scalar "
                      "expression, a block buffer or None (a message alone)")
    from .language import _parallel_vars

    par = [v for v in _parallel_vars() if uses_var(obj, v)]
    if par:
        raise _refuse(
            f"T.print({obj}){_where('print')}: a T.Parallel loop variable ({par[0].name}) cannot "
            "be printed: a T.Parallel nest is one tile operation on Tensix, not a loop of "
            "elements; print outside the nest")
    _no_elements(obj, f"T.print({obj})")
    dtype = str(obj.ty)
    if not msg:
        msg = f"expr<{obj}>"
    if dtype != "bool" and dtype not in _INTS:
        what = "a floating-point value" if dtype.startswith(("float", "bfloat")) else \
            f"a {dtype} value"
        raise _refuse(
            f"T.print({obj}){_where('print')}: {what} cannot be printed: the kernel that prints "
            "(the reader) holds integers of 32 bits or fewer (block indices, loop variables, "
            "their arithmetic); a float value lives in tiles on the compute engines")
    text, fields = _message_head(msg)
    head = text + " BlockIdx=({}, {}, {})"
    if dtype == "bool":
        _IB.evaluate(ops.call("tt.dprint", tirx.StringImm(head + ": dtype=bool value={}"),
                              *fields, bx, by, bz, ops.call("tt.dprint_bool", obj)))
        return None
    value = _signed(obj) if dtype.startswith("int") else obj
    _IB.evaluate(ops.call("tt.dprint", tirx.StringImm(head + f": dtype={dtype} value={{}}"),
                          *fields, bx, by, bz, value))
    return None


_BLOCK_DTYPES = {"bfloat16": "bfloat16", "float16": "float16", "float32": "float32"}


def _print_block(buf, msg, bx, by, bz) -> None:
    """``T.print(buffer)``: a ``tt.dprint_block(id, format, bx, by, bz)`` marker where the
    statement stands; the next ``T.copy(buffer, tensor)`` claims it (its config's
    ``tt_print_ids``) and C1 makes it the writer's print of the block that copy stores."""
    from .language import _pending_prints

    call = f"T.print({buf.name})"
    scope = buffer_scope(buf)
    if scope not in ("shared", "shared.dyn", "local.fragment"):
        raise _refuse(f"{call}{_where('print')}: only shared and fragment block buffers print "
                      f"(this one is in scope {scope!r})")
    shape = [int(d) if isinstance(d, tirx.IntImm) else None for d in buf.shape]
    if len(shape) != 2 or any(d is None or d % 32 for d in shape):
        raise _refuse(
            f"{call}{_where('print')}: a printed block is 2-D with dims that are multiples of "
            f"32 (whole tiles); {buf.name} has shape {[str(d) for d in buf.shape]}")
    dtype = str(buf.dtype)
    if dtype not in _BLOCK_DTYPES:
        raise _refuse(
            f"{call}{_where('print')}: {dtype} elements cannot be printed: block prints show "
            "bfloat16, float16 and float32 values (copy the block to a float32 fragment and "
            "print that)")
    if not msg:
        msg = f"buffer<{buf.name}, {dtype}>"
    if "\n" in msg:
        raise _refuse(f"{call}{_where('print')}: msg holds a newline: a block prints one line "
                      "per element, each with msg; print a message with a newline on its own "
                      "(T.print(msg=...)) before the block")
    fmt = ("msg='" + _escape(msg) + "' BlockIdx=({}, {}, {}): buffer=" + _escape(buf.name) +
           ", index={}, dtype=" + _BLOCK_DTYPES[dtype] + " value={:f}")
    pending = _pending_prints()
    ident = _next_print_id()
    pending.append((buf, ident))
    _IB.evaluate(ops.call("tt.dprint_block", tirx.IntImm("int32", ident), tirx.StringImm(fmt),
                          bx, by, bz))


def _next_print_id() -> int:
    """A fresh id (unique in the process: ids of different kernels never meet)."""
    from .language import _STATE

    _STATE.print_ids = getattr(_STATE, "print_ids", 0) + 1
    return _STATE.print_ids


def device_assert(condition, msg: str = "", no_stack_info: bool = False) -> None:
    """``T.device_assert(condition, msg)``: the SDK's ``ASSERT`` in the reader kernel, where the
    statement stands (module docstring)."""
    del no_stack_info  # TileLang's Python stack in the message: the source line is given instead
    if not isinstance(msg, str):
        raise _refuse(f"T.device_assert(msg={msg!r}){_where('device_assert')}: msg must be a "
                      "Python string")
    if isinstance(condition, (bool, int)) and not isinstance(condition, tvm.ir.Expr):
        if condition:
            return None  # holds everywhere
        condition = tirx.IntImm("bool", 0)
    if not isinstance(condition, tvm.ir.Expr) or str(condition.ty) != "bool" and \
            str(condition.ty) not in _INTS:
        raise _refuse(
            f"T.device_assert({condition}){_where('device_assert')}: the condition must be a "
            "boolean or integer expression of block indices, loop variables and integer "
            "variables (what the reader kernel, which checks it, holds)")
    _no_elements(condition, f"T.device_assert({condition})")
    if str(condition.ty) != "bool":
        condition = condition != tirx.IntImm(str(condition.ty), 0)
    text = f"T.device_assert({condition})" + (f": {msg}" if msg else "") + _where("device_assert")
    _IB.evaluate(ops.call("tt.device_assert", _signed_condition(condition),
                          tirx.StringImm(text)))
    return None
