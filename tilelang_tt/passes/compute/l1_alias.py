"""D6 PlanL1AliasTT: circular buffers whose lifetimes do not overlap share L1.

Requires: InsertDSTManagementTT on the compute kernel (its CBs and their uses are final).

The compute kernel's persistent body, in program order, gives every CB a *lifetime*: the
statements from its first use to its last (a use is a reserve / push / wait / pop or a call
reading or writing its tiles).  Every CB is balanced per work unit (VerifyTTIR checks it),
so it holds no pages before its first use nor after its last.  A CB used both inside a loop
and outside it lives for the whole loop; a CB a loop both pushes and pops while it is also
used outside the loop carries a value across the loop's iterations.  A CB only the compute
kernel touches (role ``intermediate``) and that no loop carries has that lifetime; every other
CB (filled by the reader, which prefetches the next block while compute works; drained by
the writer; spill CBs; carries; L1 shards used in place) may hold pages at any point.

Two CBs share L1 as two indices of one *region*: one ``CircularBufferConfig`` whose indices
all start at the region's address, each index a ring over the whole region.  A region's size
is the largest member's ring, rounded up to a multiple of every member's block (a block must
not straddle the ring's end).

Guarantees:

* ``T.annotate_l1_alias`` specs (``tt.l1_alias_request``) are checked: members are L1 block
  buffers (a group mixing them with DST accumulators or tensors is a ``TTAliasError`` naming
  the buffers and their memories); members of different branches of a ``shared`` group have
  disjoint lifetimes (else a ``TTAliasError`` naming both buffers and why); a sized spec
  holds each member and the regions it is realised with (else a ``TTAliasError`` naming the
  member or the bytes).  A spec is realised as regions: a ``distinct`` group keeps its
  members' regions apart, a ``shared`` group overlays its branches' regions (largest with
  largest).  Versions of one user buffer are distinct.
* unless the compile option ``tt.l1_alias`` is False, the other ``intermediate`` CBs whose
  lifetimes are disjoint are packed into regions automatically (largest first, each into the
  region where it saves the most L1);
* ``tt.l1_regions`` on every kernel lists the regions of two or more CBs:
  ``{name, source, cbs, bytes, unaliased_bytes}``; the IR is unchanged.
"""

from __future__ import annotations

import math

import tvm
from tvm import tirx

from ... import attrs, ops
from ...errors import TTAliasError
from ..common import collect, get_attr, split_persistent, to_py, tt_module_pass
from ..verify.verify_ttir import kernels_of

_PROTOCOL = ("tt.cb_reserve_back", "tt.cb_push_back", "tt.cb_wait_front", "tt.cb_pop_front")
_ALWAYS = (-1, float("inf"))  # a lifetime covering the whole work unit (and beyond)


def _span(spec):
    """A span at the spec's ``T.annotate_l1_alias`` line (errors quote it)."""
    if "line" not in spec:
        return None
    line = int(spec["line"])
    return tvm.ir.Span(tvm.ir.SourceName(str(spec["file"])), line, line, 0, 0)


def _ring_bytes(e) -> int:
    return int(e["rows"]) * int(e["cols"]) * int(e["depth"]) * int(e["page_bytes"])


class _Uses:
    """Positions (program order) of each CB's uses in the persistent body, the loops around
    them and the block sizes reserved / waited on it."""

    def __init__(self, body, cb_vars: dict):
        self.cb_vars = cb_vars  # Var -> CB id
        self.uses, self.blocks, self.loops = {}, {}, []
        self.n = 0
        self.walk(body, [])

    def record(self, call, loops):
        name = ops.tt_op_name(call)
        if name is None:
            return
        if name in _PROTOCOL:
            cbs = [call.args[0]]
        else:
            cbs = [call.args[i] for i in ops.cb_reads(call) + ops.cb_writes(call)]
        for cb in cbs:
            cid = self.cb_vars.get(cb) if isinstance(cb, tvm.ir.Var) else None
            if cid is None:
                continue
            kind = {"tt.cb_push_back": "push", "tt.cb_pop_front": "pop"}.get(name, "use")
            self.uses.setdefault(cid, []).append((self.n, kind, tuple(loops)))
            if name in ("tt.cb_reserve_back", "tt.cb_wait_front"):
                n = call.args[1]
                self.blocks.setdefault(cid, set()).add(
                    int(n.value) if isinstance(n, tirx.IntImm) else None)

    def walk(self, s, loops):
        if isinstance(s, tirx.SeqStmt):
            for x in s.seq:
                self.walk(x, loops)
        elif isinstance(s, tirx.For):
            entry = [self.n, None]
            self.loops.append(entry)
            self.walk(s.body, loops + [len(self.loops) - 1])
            entry[1] = self.n - 1
        elif isinstance(s, tirx.IfThenElse):
            self.walk(s.then_case, loops)
            if s.else_case is not None:
                self.walk(s.else_case, loops)
        elif isinstance(s, tirx.AttrStmt):
            self.walk(s.body, loops)
        else:
            for call in collect(s, tvm.ir.Call):
                self.record(call, loops)
            self.n += 1

    def lifetime(self, cid):
        """(first, last) statement positions of the CB's uses, widened to the loops it is used
        both inside and outside of; and whether a loop carries it."""
        uses = self.uses.get(cid, [])
        if not uses:
            return None, False
        lo, hi = min(p for p, _, _ in uses), max(p for p, _, _ in uses)
        carried = False
        for li, (start, end) in enumerate(self.loops):
            inside = [(p, k) for p, k, ls in uses if li in ls]
            if inside and len(inside) < len(uses):
                lo, hi = min(lo, start), max(hi, end)
                kinds = {k for _, k in inside}
                carried = carried or {"push", "pop"} <= kinds
        return (lo, hi), carried


def _overlap(a, b) -> bool:
    return not (a[1] < b[0] or b[1] < a[0])


class _Planner:
    def __init__(self, kernels):
        compute = kernels["compute"]
        self.entries = {}
        for func in kernels.values():
            for e in to_py(get_attr(func, attrs.TILE_DFG, [])):
                self.entries.setdefault(int(e["id"]), e)
        cb_vars = {b.var: int(b.value.args[0]) for b in collect(compute.body, tirx.Bind)
                   if ops.tt_op_name(b.value) == "tt.alloc_cb"}
        prologue, persistent = split_persistent(compute.body)
        self.uses = _Uses(persistent.body, cb_vars)
        outside = _Uses(tirx.SeqStmt(list(prologue)) if len(prologue) > 1 else
                        (prologue[0] if prologue else tirx.Evaluate(0)), cb_vars).uses
        self.life, self.why = {}, {}
        for cid, e in self.entries.items():
            span, carried = self.uses.lifetime(cid)
            if cid in outside:
                self.life[cid] = _ALWAYS
                self.why[cid] = "the compute kernel uses it outside the loop over work units"
            elif e["role"] != "intermediate":
                self.life[cid] = _ALWAYS
                self.why[cid] = {
                    "input": "the reader kernel fills it ahead of the compute kernel",
                    "output": "the writer kernel drains it after the compute kernel",
                    "passthrough": "the reader and writer kernels use it",
                    "spill": "it keeps GEMM partial results across K steps",
                }.get(e["role"], f"its role is {e['role']}")
            elif "in_place" in e:
                self.life[cid], self.why[cid] = _ALWAYS, "it lies on an L1 shard"
            elif carried:
                self.life[cid] = _ALWAYS
                self.why[cid] = "a loop carries its value from one iteration to the next"
            elif span is None or None in self.uses.blocks.get(cid, {None}):
                self.life[cid], self.why[cid] = _ALWAYS, "its uses are not all known"
            else:
                self.life[cid] = span

    def block_bytes(self, cid) -> list:
        e = self.entries[cid]
        return [n * int(e["page_bytes"]) for n in self.uses.blocks.get(cid, ())] or \
            [int(e["rows"]) * int(e["cols"]) * int(e["page_bytes"])]

    def region_bytes(self, cids) -> int:
        """The smallest size holding every member's ring that is a multiple of every block
        size reserved or waited on a member."""
        need = max(_ring_bytes(self.entries[c]) for c in cids)
        unit = 1
        for c in cids:
            for b in self.block_bytes(c):
                unit = unit * b // math.gcd(unit, b)
        return -(-need // unit) * unit

    def disjoint(self, a, b) -> bool:
        la, lb = self.life[a], self.life[b]
        return la is not _ALWAYS and lb is not _ALWAYS and not _overlap(la, lb)

    # ---- explicit specs -------------------------------------------------------------------
    def spec_regions(self, spec, names: dict):
        """Regions (lists of CB ids) realising one spec, checked."""

        def realise(node):
            if not isinstance(node, dict):
                return [[c] for c in sorted(names.get(node, []),
                                            key=lambda c: -_ring_bytes(self.entries[c]))]
            parts = [realise(m) for m in node["members"]]
            if node["kind"] == "distinct":
                regions = [r for p in parts for r in p]
            else:
                for i in range(len(parts)):
                    for j in range(i + 1, len(parts)):
                        for a in (c for r in parts[i] for c in r):
                            for b in (c for r in parts[j] for c in r):
                                self.check_share(spec, a, b)
                regions = []
                for k in range(max((len(p) for p in parts), default=0)):
                    regions.append([c for p in parts if k < len(p) for c in p[k]])
            return sorted(regions, key=lambda r: -self.region_bytes(r))

        regions = realise(spec["group"])
        size = int(spec["size"])
        if size:
            for r in regions:
                for c in r:
                    if _ring_bytes(self.entries[c]) > size:
                        e = self.entries[c]
                        raise TTAliasError(
                            f"buffer {e['name']} does not fit L1 alias spec {spec['name']}: it "
                            f"needs {_ring_bytes(e)} bytes ({e['rows']}x{e['cols']} tiles x "
                            f"{e['depth']} blocks of {e['page_bytes']}-byte tiles) and the spec "
                            f"holds {size} bytes", hint="enlarge the spec or leave it unsized",
                            span=_span(spec))
            total = sum(self.region_bytes(r) for r in regions)
            if total > size:
                detail = "; ".join(
                    " + ".join(self.entries[c]["name"] for c in r)
                    + f" in {self.region_bytes(r)} bytes" for r in regions)
                raise TTAliasError(
                    f"L1 alias spec {spec['name']} holds {size} bytes but its members need "
                    f"{total} bytes as it groups them ({detail})",
                    hint="enlarge the spec, or put buffers whose lifetimes do not overlap in "
                    "one T.shared group", span=_span(spec))
        return regions

    def check_share(self, spec, a, b):
        if self.disjoint(a, b):
            return
        ea, eb = self.entries[a], self.entries[b]
        reasons = [f"{self.entries[c]['name']} may hold pages at any time: {self.why[c]}"
                   for c in (a, b) if c in self.why]
        if not reasons:
            first, second = sorted((a, b), key=lambda c: self.life[c][0])
            reasons = [f"{self.entries[second]['name']} is first used before the compute "
                       f"kernel's last use of {self.entries[first]['name']} in a work unit"]
        raise TTAliasError(
            f"L1 alias spec {spec['name']} shares L1 between {ea['name']} and {eb['name']}, but "
            f"their lifetimes overlap ({'; '.join(reasons)})",
            hint="put them in a T.distinct group, or in different specs", span=_span(spec))

    # ---- automatic ------------------------------------------------------------------------
    def auto_regions(self, taken: set) -> list:
        cands = [c for c, e in self.entries.items()
                 if c not in taken and self.life[c] is not _ALWAYS]
        cands.sort(key=lambda c: (-_ring_bytes(self.entries[c]), c))
        regions = []
        for c in cands:
            own = _ring_bytes(self.entries[c])
            best, gain = None, 0
            for r in regions:
                if not all(self.disjoint(c, m) for m in r):
                    continue
                saved = own - (self.region_bytes(r + [c]) - self.region_bytes(r))
                if saved > gain:
                    best, gain = r, saved
            if best is None:
                regions.append([c])
            else:
                best.append(c)
        return [r for r in regions if len(r) > 1]


def _member_kinds(kernels, cb_names: dict) -> dict:
    """user buffer name -> its memory ("L1", "DST" or the tensor's memory)."""
    compute = kernels["compute"]
    kinds = {}
    for d in to_py(get_attr(compute, attrs.LAYOUT_DESC, [])) or []:
        kinds[d["name"]] = ("L1 shard" if d["memory"] == "L1" else d["memory"])
    for entry in to_py(get_attr(compute, attrs.DST_PLAN, [])) or []:
        kinds.setdefault(str(entry["acc"]), "DST")
    for name in cb_names:
        kinds[name] = "L1"
    return kinds


def _check_kinds(spec, tree, kinds):
    """Every member of the spec is an L1 block buffer; ``tree`` is a group of the spec."""
    members = [m for m in _leaves(tree) if m in kinds]
    foreign = [m for m in members if kinds[m] != "L1"]
    if not foreign:
        return
    l1 = [m for m in members if kinds[m] == "L1"]
    what = ", ".join(f"{m} ({kinds[m]})" for m in foreign)
    if l1:
        raise TTAliasError(
            f"L1 alias spec {spec['name']} mixes memory kinds: {', '.join(l1)} (L1 circular "
            f"buffers) with {what}", hint="an alias spec relates block buffers in L1 only; "
            "GEMM accumulators live in DST, tensors in DRAM or in their L1 shards",
            span=_span(spec))
    raise TTAliasError(f"L1 alias spec {spec['name']} holds no L1 block buffer: {what}",
                       hint="an alias spec relates block buffers in L1 only", span=_span(spec))


def _leaves(tree):
    for m in tree["members"]:
        if isinstance(m, dict):
            yield from _leaves(m)
        else:
            yield m


@tt_module_pass("PlanL1AliasTT")
def PlanL1AliasTT(mod, ctx):
    """Check the alias specs and group CBs into shared regions (see module docstring)."""
    kernels = kernels_of(mod)
    compute = kernels["compute"]
    if "InsertDSTManagementTT" not in list(get_attr(compute, attrs.STAGE_LOG, [])):
        from ...errors import TTVerifyError

        raise TTVerifyError("PlanL1AliasTT requires InsertDSTManagementTT to have run first")
    table = plan_regions(kernels)
    return tvm.IRModule({gv: func.with_attr(attrs.L1_REGIONS, table)
                         for gv, func in mod.functions.items()})


def plan_regions(kernels: dict) -> list:
    """The ``tt.l1_regions`` table of the kernels (kind -> PrimFunc) as their CBs stand:
    the alias specs' regions, checked, then the automatic ones (module docstring)."""
    compute = kernels["compute"]
    planner = _Planner(kernels)
    names = {}
    for cid, e in planner.entries.items():
        names.setdefault(str(e["name"]), []).append(cid)
    kinds = _member_kinds(kernels, names)
    regions, taken = [], set()
    for spec in to_py(get_attr(compute, attrs.L1_ALIAS_REQUEST, [])) or []:
        _check_kinds(spec, spec["group"], kinds)
        for r in planner.spec_regions(spec, names):
            taken.update(r)
            if len(r) > 1:
                regions.append((spec["name"], "spec", r))
    options = to_py(get_attr(compute, attrs.COMPILE_OPTIONS, {})) or {}
    auto = planner.auto_regions(taken) if options.get(attrs.PC_L1_ALIAS, True) else []
    for k, r in enumerate(auto):
        regions.append((f"auto{k}", "auto", r))
    return [{"name": name, "source": source, "cbs": sorted(r),
             "bytes": planner.region_bytes(r),
             "unaliased_bytes": sum(_ring_bytes(planner.entries[c]) for c in r)}
            for name, source, r in regions]
