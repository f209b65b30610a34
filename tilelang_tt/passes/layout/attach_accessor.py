"""A3 AttachTensorAccessorTT: abstract TensorAccessor descriptors for global buffers.

Requires: InferTTLayout.

Guarantees: ``tt.accessors`` lists, for every buffer parameter that a tile op reads or
writes, ``{param, page_bytes, memory, layout, bound: False}``, in parameter order.  The
descriptors are not bound to kernel arguments yet (ConfigureTensorAccessorTT does that per
kernel after the split).
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs
from ..common import buffer_scope, collect, require_attr, to_py, tt_pass


@tt_pass("AttachTensorAccessorTT", requires=("InferTTLayout",))
def AttachTensorAccessorTT(func, mod, ctx):
    """List one abstract accessor per global buffer a tile op touches."""
    layouts = to_py(require_attr(func, attrs.LAYOUT_DESC, "AttachTensorAccessorTT"))
    touched = []
    for call in collect(func.body, tirx.TilePrimitiveCall):
        for arg in call.args:
            src = getattr(arg, "source", None)
            if src is not None and tirx.is_buffer_var(src) and buffer_scope(src) == "global":
                if not any(src.same_as(t) for t in touched):
                    touched.append(src)
    accessors = []
    for index, buf in enumerate(func.params):
        if any(buf.same_as(t) for t in touched):
            lay = layouts[index]
            accessors.append({
                "param": index, "page_bytes": lay["page_bytes"], "memory": lay["memory"],
                "layout": lay["layout"], "bound": False,
            })
    return func.with_attr(attrs.ACCESSORS, accessors)
