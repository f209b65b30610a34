"""C3 BuildTileDFGTT: the producer -> circular buffer -> consumer graph, and CB ids.

Requires: LowerTTTileIntrinsics.

Guarantees:

* a CB nothing writes or reads (a ``T.alloc_shared`` / ``T.alloc_fragment`` the kernel never
  uses) is dropped;
* ``tt.tile_dfg`` lists every other CB: ``{id, name, rows, cols, depth, dtype, page_bytes,
  producer, consumer, role}`` where producer is ``reader`` (``tt.read_to_cb``,
  ``tt.mask_to_cb``) or ``compute``
  (``tt.acc.pack``, ``tt.fpu.*``, ``tt.eltwise`` ...), consumer is ``compute`` (``tt.mm.mma``,
  ``tt.fpu.*``, ``tt.eltwise`` ...) or ``writer`` (``tt.write_from_cb``), and role is ``input``
  (reader -> compute), ``output`` (compute -> writer), ``intermediate`` (compute -> compute) or
  ``passthrough`` (reader -> writer);
* CB ids follow the TT-Metalium convention: inputs from ``c_0``, outputs from ``c_16``,
  intermediates from ``c_24`` (falling back to any free index); every ``tt.alloc_cb``
  carries its id.  More than 32 CBs: the others get their ids as above and the intermediates
  (compute -> compute) ids from 32 on, which D5.2 ShareCBIdsTT (``compute/cb_share.py``)
  shares between intermediates whose lifetimes do not overlap and renumbers below 32 (or
  refuses); a ``TTResourceError`` here when even one id per kind of intermediate (data
  format, page size, block shape) leaves more than 32;
* compute-side consumption is explicit: ``tt.consume.begin(cb, tiles)`` comes right before
  the first statement after the producing statement that uses the pushed block, and
  ``tt.consume.end(cb, tiles)`` right after the last one before the next production, in the
  innermost statement list holding both producer and consumers (so a block produced outside
  a loop and used inside it is held for the loop).  A loop of that list whose every
  iteration produces the block before it consumes it (a reduction's scaler tile in each of
  two column-chunk loops, A0.1.4) carries nothing: its body is a statement list of its own
  for those windows.  The windows of different CBs may
  overlap in any way: a circular buffer's waits and pops need not nest with another's.
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs, ops
from ...errors import TTCompileError, TTResourceError, TTUnsupportedError
from ..common import collect, int_imm, seq, tile_bytes, tt_calls, tt_pass
from ..common import tt_map

ID_RANGES = {"input": range(0, 16), "output": range(16, 24), "intermediate": range(24, 32),
             "passthrough": range(0, 16)}
MAX_CBS = 32


CB_HINT = ("each block buffer the kernel keeps is a circular buffer (a buffer written by several "
           "statements, one per version): reuse a dead block buffer of the same shape and dtype "
           "instead of allocating another, compute an elementwise chain into one fragment, or "
           "split the kernel into two launches")


def cb_listing(entries) -> str:
    """The CBs' buffer names, with how many versions (A0.4) each has."""
    versions = {}
    for e in entries:
        versions[e["name"]] = versions.get(e["name"], 0) + 1
    return ", ".join(f"{n}" + (f" ({k} versions)" if k > 1 else "") for n, k in versions.items())


def share_key(e) -> tuple:
    """What two CBs must agree on to share one id: data format, page size and block shape."""
    return (str(e["dtype"]), int(e["page_bytes"]), int(e["rows"]), int(e["cols"]))


def _least_cbs(entries) -> int:
    """A lower bound on the CBs left when the intermediates share ids: the others, plus one
    per kind of intermediate (``share_key``)."""
    inter = [e for e in entries if e["role"] == "intermediate"]
    return len(entries) - len(inter) + len({share_key(e) for e in inter})


def cb_binds(body) -> list:
    """The ``cb = tt.alloc_cb(...)`` Binds of a kernel, in order."""
    return [b for b in collect(body, tirx.Bind) if ops.tt_op_name(b.value) == "tt.alloc_cb"]


def cb_uses(body):
    """(producers, consumers): CB var -> list of (kernel kind, call), from the registry's
    CB operands and owning kernels."""
    producers, consumers = {}, {}
    for call in tt_calls(body):
        kernel = ops.spec(call.op.name).kernel
        for i in ops.cb_reads(call):
            consumers.setdefault(call.args[i], []).append((kernel, call))
        for i in ops.cb_writes(call):
            producers.setdefault(call.args[i], []).append((kernel, call))
    return producers, consumers


def _contains(stmt, call) -> bool:
    return any(c.same_as(call) for c in tt_calls(stmt))


def _consume_ranges(home, producer_calls, consumer_calls, name, span):
    """The windows ``(seq, first, last, drain)`` of ``home``'s statements consuming each
    produced block: ``[first, last]`` of ``seq``'s statements, or (``drain``) a block nobody
    reads any more, freed right after statement ``first``.

    A loop that both consumes and produces the CB carries a value from one iteration to the
    next (VersionBlockBuffersTT's carry): it consumes the block in force when it starts, and
    every iteration consumes the block of the one before and ends producing the next, so its
    body gets a window of its own and the block of the last iteration is in force after the
    loop (freed there when nothing reads it)."""
    stmts = list(home.seq)
    prods = [i for i, s in enumerate(stmts) if any(_contains(s, c) for c in producer_calls)]
    cons = [i for i, s in enumerate(stmts) if any(_contains(s, c) for c in consumer_calls)]
    ranges = []
    # a loop whose every iteration produces the block before it consumes it (a reduction's
    # scaler tile in each of two column-chunk loops) carries nothing: its body is a home of
    # its own, and every block it produces is consumed there
    for i in [i for i in prods if i in cons and _self_contained(stmts[i], producer_calls,
                                                                 consumer_calls)]:
        ranges += _consume_ranges(stmts[i].body, producer_calls, consumer_calls, name, span)
        prods.remove(i)
        cons.remove(i)
    carried = [i for i in prods if i in cons]
    for n, p in enumerate(prods):
        nxt = prods[n + 1] if n + 1 < len(prods) else len(stmts)
        users = [i for i in cons if p < i < nxt]
        if p in carried:
            ranges += _carried_body(stmts[p], producer_calls, consumer_calls, name, span)
            if not users and nxt == len(stmts):
                ranges.append((home, p, p, True))
                continue
        if users and nxt in carried:
            raise TTUnsupportedError(
                f"buffer {name} is read before a loop that carries its value; read it in the "
                "loop or copy it to a buffer of its own", span=span)
        if not users:
            if nxt in carried:
                continue  # the loop consumes it
            raise TTCompileError(f"a block written to shared buffer {name} is never used",
                                 span=span)
        ranges.append((home, users[0], users[-1], False))
    stray = [i for i in cons if not prods or i < prods[0]]
    if stray:
        raise TTCompileError(f"shared buffer {name} is used before anything is written to it",
                             span=span)
    return ranges


def _self_contained(stmt, producer_calls, consumer_calls) -> bool:
    """A loop whose body (a statement list) first produces the block, in a statement that
    does not consume it or in a loop that is itself self-contained."""
    if not isinstance(stmt, tirx.For) or not isinstance(stmt.body, tirx.SeqStmt):
        return False
    for s in stmt.body.seq:
        prod = any(_contains(s, c) for c in producer_calls)
        cons = any(_contains(s, c) for c in consumer_calls)
        if prod and not cons:
            return True
        if prod or cons:
            return prod and _self_contained(s, producer_calls, consumer_calls)
    return False


def _carried_body(loop, producer_calls, consumer_calls, name, span):
    """The window of a carrying loop's body: its reads of the block in force, before the
    statement that produces the next one."""
    body = loop.body if isinstance(loop, tirx.For) else None
    if not isinstance(body, tirx.SeqStmt):
        raise TTUnsupportedError(
            f"buffer {name} is read and written inside a statement that is not a loop",
            span=span)
    stmts = list(body.seq)
    prods = [i for i, s in enumerate(stmts) if any(_contains(s, c) for c in producer_calls)]
    cons = [i for i, s in enumerate(stmts) if any(_contains(s, c) for c in consumer_calls)]
    while len(prods) == 1 and cons == prods and isinstance(stmts[prods[0]], tirx.IfThenElse) \
            and stmts[prods[0]].else_case is None \
            and isinstance(stmts[prods[0]].then_case, tirx.SeqStmt):
        # a carry updated only under a branch (VersionBlockBuffersTT refills it as the last
        # statement of the then arm): the arm consumes it and produces the next value; an
        # iteration that does not take the branch leaves the block in force
        body = stmts[prods[0]].then_case
        stmts = list(body.seq)
        prods = [i for i, s in enumerate(stmts) if any(_contains(s, c) for c in producer_calls)]
        cons = [i for i, s in enumerate(stmts) if any(_contains(s, c) for c in consumer_calls)]
    if len(prods) != 1 or not cons or max(cons) >= prods[0]:
        raise TTUnsupportedError(
            f"the loop carrying buffer {name} must read it and then produce its next value "
            "once per iteration", span=span)
    return [(body, cons[0], cons[-1], False)]


@tt_pass("BuildTileDFGTT", requires=("LowerTTTileIntrinsics",))
def BuildTileDFGTT(func, mod, ctx):
    """Build tt.tile_dfg, assign CB ids and mark compute-side consumption ranges."""
    body = func.body
    binds = cb_binds(body)
    producers, consumers = cb_uses(body)
    entries, used_ids = [], set()
    by_var, unused = {}, []
    for b in binds:
        var = b.var
        args = b.value.args
        name = str(args[5].value)
        prods = producers.get(var, [])
        cons = consumers.get(var, [])
        if not prods and not cons:  # allocated and never used (TileLang drops it too)
            unused.append(var)
            continue
        if not prods:
            raise TTCompileError(f"shared buffer {name} is read but never written", span=b.span)
        if not cons:
            raise TTCompileError(
                f"shared buffer {name} is written but never read (copy it out or drop it)",
                span=b.span)
        p_kinds = {k for k, _ in prods}
        c_kinds = {k for k, _ in cons}
        in_place = [c for _, c in prods if any(c.same_as(d) for _, d in cons)]
        if in_place:
            raise TTUnsupportedError(
                f"buffer {name} is updated in place (one operation reads and writes it); a "
                "circular buffer cannot be read and refilled by the same operation - write the "
                "result into a new buffer", span=in_place[0].span or b.span)
        if len(p_kinds) > 1 or len(c_kinds) > 1:
            raise TTUnsupportedError(
                f"shared buffer {name} is written by {sorted(p_kinds)} and read by "
                f"{sorted(c_kinds)}; a shared buffer must have one producer and one consumer "
                "kernel (use a second buffer)", span=b.span)
        producer, consumer = p_kinds.pop(), c_kinds.pop()
        role = {("reader", "compute"): "input", ("compute", "writer"): "output",
                ("compute", "compute"): "intermediate",
                ("reader", "writer"): "passthrough"}[(producer, consumer)]
        rows, cols, depth = int(args[1]), int(args[2]), int(args[3])
        dtype = str(args[4].value)
        entries.append({
            "cb": var, "name": name, "rows": rows, "cols": cols, "depth": depth, "dtype": dtype,
            "page_bytes": tile_bytes(dtype), "producer": producer,
            "consumer": consumer, "role": role, "span": b.span,
        })
        by_var[var] = entries[-1]

    overflow = len(entries) > MAX_CBS
    if overflow and _least_cbs(entries) > MAX_CBS:
        raise TTResourceError(
            f"the kernel needs {len(entries)} circular buffers; a Tensix core has {MAX_CBS}, and "
            f"sharing the compute kernel's intermediates leaves at least {_least_cbs(entries)}: "
            f"{cb_listing(entries)}",
            hint=CB_HINT)
    for e in entries:
        if overflow and e["role"] == "intermediate":
            continue
        free = [i for i in ID_RANGES[e["role"]] if i not in used_ids] or \
            [i for i in range(MAX_CBS) if i not in used_ids]
        e["id"] = free[0]
        used_ids.add(e["id"])
    # more CBs than a core has: the intermediates take ids from MAX_CBS on, for now; D5.2
    # ShareCBIdsTT gives those whose lifetimes do not overlap one id and renumbers them
    for n, e in enumerate(x for x in entries if overflow and x["role"] == "intermediate"):
        e["id"] = MAX_CBS + n

    # compute-side consumption ranges
    seqs = collect(body, tirx.SeqStmt)
    homes = []  # [(home SeqStmt, [(first, last, entry), ...])]
    for e in entries:
        if e["consumer"] != "compute":
            continue
        p_calls = [c for _, c in producers[e["cb"]]]
        c_calls = [c for _, c in consumers[e["cb"]]]
        targets = p_calls + c_calls
        home = None
        for s in seqs:  # pre-order: the last seq holding all uses is the innermost
            if all(_contains(s, c) for c in targets):
                home = s
        if home is None:
            raise TTCompileError(f"cannot place the uses of shared buffer {e['name']}",
                                 span=e["span"])
        for where, first, last, drain in _consume_ranges(home, p_calls, c_calls, e["name"],
                                                         e["span"]):
            slot = next((h for h in homes if h[0].same_as(where)), None)
            if slot is None:
                slot = (where, [])
                homes.append(slot)
            slot[1].append((first, last, drain, e))

    def mark(s: tirx.SeqStmt):
        slot = next((h for h in homes if h[0].same_as(s)), None)
        if slot is None:
            return s
        items = list(s.seq)
        before = [[] for _ in items]
        after = [[] for _ in items]
        for first, last, drain, e in slot[1]:
            n = int_imm(e["rows"] * e["cols"])
            begin = ops.evaluate("tt.consume.begin", e["cb"], n)
            end = ops.evaluate("tt.consume.end", e["cb"], n)
            if drain:
                after[first] += [begin, end]
                continue
            before[first].append(begin)
            after[last].insert(0, end)
        out = []
        for item, pre, post in zip(items, before, after):
            out += pre + [item] + post
        return seq(out)

    body = tt_map(body, [(tirx.SeqStmt, mark)], order="pre")

    def set_id(b: tirx.Bind):
        e = by_var.get(b.var) if ops.tt_op_name(b.value) == "tt.alloc_cb" else None
        if e is None:
            if any(b.var.same_as(u) for u in unused):
                return tirx.Evaluate(tirx.IntImm("int32", 0))
            return b
        args = list(b.value.args)
        args[0] = int_imm(e["id"])
        return tirx.Bind(b.var, ops.call("tt.alloc_cb", *args), b.span)

    body = tt_map(body, [(tirx.Bind, set_id)], order="post")
    dfg = [{k: v for k, v in e.items() if k not in ("span", "cb")} for e in entries]
    return func.with_body(body).with_attr(attrs.TILE_DFG, dfg)
