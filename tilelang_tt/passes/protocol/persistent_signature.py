"""E1 FinalizePersistentSignatureTT: freeze each kernel's runtime-argument signature.

Requires: LowerCBIntrinsics, InsertDSTManagementTT (and through them D1-D4).

Guarantees: ``tt.runtime_args`` is the ordered list of 4-byte runtime arguments of the
kernel - the address of every bound accessor's buffer (at its ``addr_slot``), then
``start_id`` and ``count`` of the core's range of work units - and ``tt.persistent`` names the
slots of ``start_id`` / ``count``.  Codegen emits the persistent loop ``for work_id in
[start_id, start_id + count)`` around the ``tt.persistent_body`` from these.  Shapes and tile
counts are compile-time constants of the generated code, so they are not runtime args.
"""

from __future__ import annotations

from ... import attrs
from ...errors import TTResourceError
from ...target import profile_of
from ..common import require_attr, to_py, tt_calls, tt_pass


@tt_pass("FinalizePersistentSignatureTT",
         requires=("ConfigureTensorAccessorTT", "LowerCBIntrinsics", "InsertComputeInitTT",
                   "InsertDSTManagementTT"))
def FinalizePersistentSignatureTT(func, mod, ctx):
    """Record the runtime-argument layout and the persistent-loop slots."""
    accessors = to_py(require_attr(func, attrs.ACCESSORS, "FinalizePersistentSignatureTT"))
    profile = profile_of(str(require_attr(func, attrs.TARGET, "FinalizePersistentSignatureTT")))
    args = [None] * len(accessors)
    for acc in accessors:
        args[acc["addr_slot"]] = {"kind": "buffer_addr", "param": acc["param"]}
    start_slot = len(args)
    args += [{"kind": "start_id"}, {"kind": "count"}]
    if len(args) > profile.max_runtime_args:
        raise TTResourceError(
            f"kernel {func.attrs['global_symbol']} needs {len(args)} runtime args; a core "
            f"accepts {profile.max_runtime_args}")
    for call in tt_calls(func.body, "tt.get_arg_val"):
        slot = int(call.args[0])
        if slot >= len(args):
            raise TTResourceError(f"runtime arg slot {slot} is outside the signature")
    return (func.with_attr(attrs.RUNTIME_ARGS, args)
            .with_attr(attrs.PERSISTENT, {"start_slot": start_slot, "count_slot": start_slot + 1}))
