"""D2 ConfigureTensorAccessorTT: bind each kernel's tensor accessors to its arguments.

Requires: SplitDeviceKernel.

Guarantees: in the reader and writer, every global buffer the kernel streams gets, before
the persistent body, ``acc = tt.tensor_accessor(buffer, index, addr_slot, page_bytes)``:
the ``index``-th ``TensorAccessorArgs`` of the kernel's compile-time args (chained in index
order) over the buffer address passed as runtime arg ``addr_slot``, pages of the layout's
page size (``tt.layout_desc``).  ``tt.accessors`` lists ``{param, index, addr_slot,
page_bytes}`` per accessor (empty for compute); the host program builds the compile-time
args and passes the addresses from it.
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs, ops
from ..common import (
    int_imm, layout_of, param_index, require_attr, split_persistent, tt_calls, tt_pass,
    with_persistent,
)

STREAM_OPS = ("tt.read_to_cb", "tt.write_from_cb", "tt.scalar_to_cb", "tt.element_to_cb",
              "tt.im2col_to_cb", "tt.read_rows_to_cb", "tt.write_rows_from_cb")
# a scalar program's element reads and stores (A0.00.1): the tensor is their first operand
SCALAR_OPS = ("tt.scalar.load", "tt.scalar.store")


def streamed_buffers(body) -> list:
    """Global buffers streamed by read_to_cb / write_from_cb (or read and stored by element
    by a scalar program), in order of first use."""
    seen = []
    for call in tt_calls(body):
        if call.op.name in STREAM_OPS + SCALAR_OPS:
            buf = call.args[0 if call.op.name in SCALAR_OPS else 1]
            if not any(buf.same_as(b) for b in seen):
                seen.append(buf)
    return seen


@tt_pass("ConfigureTensorAccessorTT", requires=("SplitDeviceKernel",), scalar_programs=True)
def ConfigureTensorAccessorTT(func, mod, ctx):
    """Bind accessors to compile-time arg groups and address runtime args."""
    kind = str(require_attr(func, attrs.KERNEL_KIND, "ConfigureTensorAccessorTT"))
    if kind == "compute":
        return func.with_attr(attrs.ACCESSORS, [])
    prologue, persistent = split_persistent(func.body)
    bound, binds = [], []
    for index, buf in enumerate(streamed_buffers(func.body)):
        param = param_index(func, buf)
        page = int(layout_of(func, buf)["page_bytes"])
        var = tirx.Var(f"{buf.name}_accessor", "handle")
        binds.append(tirx.Bind(var, ops.call("tt.tensor_accessor", buf, int_imm(index),
                                             int_imm(index), int_imm(page))))
        bound.append({"param": param, "index": index, "addr_slot": index, "page_bytes": page})
    body = with_persistent(prologue + binds, persistent)
    return func.with_body(body).with_attr(attrs.ACCESSORS, bound)
