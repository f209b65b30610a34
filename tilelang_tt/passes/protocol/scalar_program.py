"""D2.2 LowerScalarProgramTT: a scalar program's element reads and stores -> NOC page moves.

Requires: ConfigureTensorAccessorTT.

A scalar program (A0.00.1 ScalarProgramTT: the launch's scalar code, the reader's alone after
D1) reads and stores elements of scalar tensors: 32-bit words, 16 to a 64-byte DRAM page
(``analysis/scalar_reads.py``).  The reader's RISC-V core has no direct access to DRAM: every
element moves through a page of L1.

Guarantees: in a reader holding an ``AttrStmt(tt.scalar_program)``:

* a CB ``scalar_scratch`` (one int32 tile, depth 1, id 0 - a scalar program has no other CB;
  ``tt.tile_dfg`` lists it, producer and consumer the reader, role ``scratch``) whose page
  the program holds from start to end of each work unit: ``cb_reserve_back``, ``l1 =
  get_write_ptr`` before the program, ``cb_push_back``, ``cb_wait_front``, ``cb_pop_front``
  after it (balanced on every path for F);
* ``tt.scalar.load(T, flat)`` -> ``tt.scalar_read(T_accessor, flat // 16, flat % 16, l1)``
  (the page read into the scratch page, read barrier, the word) when ``0 <= flat < size``,
  else 0 (``Select``: TileLang's safe access of an element outside the tensor);
* ``tt.scalar.store(T, flat, w)`` -> ``tt.scalar_write(T_accessor, flat // 16, flat % 16, l1,
  w)`` under ``if 0 <= flat < size`` (a store outside the tensor is dropped): a read-modify-write of the page (read, barrier, the word set, the page written back,
  write barrier), so the page's other 15 words keep their values.  Sound because the program
  runs on one core (A0.00.1 puts a launch of several blocks on one core), in program order.

The program's compute and writer kernels (empty) get the same ``tt.tile_dfg``; other launches
are returned unchanged.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs, ops
from ..analysis.scalar_reads import WORDS_PER_PAGE
from ..common import (
    WORD_DTYPE, buffer_shape, collect, get_attr, int_imm, seq, split_persistent, tile_bytes, tt_map, tt_pass,
    with_persistent,
)
from ..dataflow.shared_to_cb import alloc_cb_call

SCRATCH = "scalar_scratch"


@tt_pass("LowerScalarProgramTT", requires=("ConfigureTensorAccessorTT",), scalar_programs=True)
def LowerScalarProgramTT(func, mod, ctx):
    """Element reads / stores of a scalar program -> page reads / read-modify-writes through an
    L1 scratch page (see module docstring)."""
    if get_attr(func, attrs.SCALAR_PROGRAM) is None:
        return func
    entry = {"id": 0, "name": SCRATCH, "rows": 1, "cols": 1, "depth": 1,
             "dtype": WORD_DTYPE, "page_bytes": tile_bytes(WORD_DTYPE), "producer": "reader",
             "consumer": "reader", "role": "scratch"}
    if str(get_attr(func, attrs.KERNEL_KIND)) != "reader":  # the program's CBs, as C3 lists them
        return func.with_attr(attrs.TILE_DFG, [entry])
    programs = collect(func.body, tirx.AttrStmt,
                       lambda a: str(a.attr_key) == attrs.SCALAR_PROGRAM)
    if not programs:
        return func
    accessor = {}
    for b in collect(func.body, tirx.Bind, lambda b: ops.tt_op_name(b.value) ==
                     "tt.tensor_accessor"):
        accessor[b.value.args[0]] = b.var
    cb = tirx.Var(f"{SCRATCH}_cb", "int32")
    l1 = tirx.Var(f"{SCRATCH}_l1", "int32")
    words = int_imm(WORDS_PER_PAGE)

    def acc(buf):
        for k, v in accessor.items():
            if k.same_as(buf):
                return v
        raise AssertionError(f"no accessor for {buf.name}")

    def inside(buf, flat):  # TileLang's safe access: outside the tensor nothing moves
        n = 1
        for d in buffer_shape(buf):
            n *= int(d)
        return tirx.And(tirx.GE(flat, int_imm(0)), tirx.LT(flat, int_imm(n)))

    def on_call(c):
        if ops.tt_op_name(c) == "tt.scalar.load":
            buf, flat = c.args
            read = ops.call("tt.scalar_read", acc(buf), tirx.FloorDiv(flat, words),
                            tirx.FloorMod(flat, words), l1, span=c.span)
            return tirx.Select(inside(buf, flat), read, int_imm(0))
        return c

    def on_eval(ev):
        c = ev.value
        if ops.tt_op_name(c) == "tt.scalar.store":
            buf, flat, word = c.args
            write = ops.evaluate("tt.scalar_write", acc(buf), tirx.FloorDiv(flat, words),
                                 tirx.FloorMod(flat, words), l1, word, span=c.span)
            return tirx.IfThenElse(inside(buf, flat), write, None)
        return ev

    def on_attr(a):
        if str(a.attr_key) != attrs.SCALAR_PROGRAM:
            return a
        one = int_imm(1)
        body = seq([
            ops.evaluate("tt.cb_reserve_back", cb, one),
            tirx.Bind(l1, ops.call("tt.get_write_ptr", cb)),
            tt_map(a.body, [(tvm.ir.Call, on_call), (tirx.Evaluate, on_eval)], order="post"),
            ops.evaluate("tt.cb_push_back", cb, one),
            ops.evaluate("tt.cb_wait_front", cb, one),
            ops.evaluate("tt.cb_pop_front", cb, one),
        ])
        return tirx.AttrStmt(a.node, a.attr_key, a.value, body, a.span)

    prologue, persistent = split_persistent(func.body)
    persistent = tt_map(persistent, [(tirx.AttrStmt, on_attr)], order="post")
    alloc = tirx.Bind(cb, alloc_cb_call(1, 1, 1, WORD_DTYPE, SCRATCH, cb_id=0))
    return func.with_body(with_persistent([alloc] + list(prologue), persistent)) \
        .with_attr(attrs.TILE_DFG, [entry])
