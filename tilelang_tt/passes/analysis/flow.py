"""Forward dataflow over structured TIR, joining paths at every merge point.

The pipeline's statements are structured (``SeqStmt``, ``IfThenElse``, ``For``, ``While``,
``AttrStmt`` and leaves), so a forward analysis needs no CFG: a sequence threads the state
through, an
``if`` joins the states of its two arms (the missing ``else`` is the state unchanged), and a
loop iterates its body until the state at the loop head is stable (``head = join(entry,
body_exit)``).  The persistent body (``tt.persistent_body``) repeats like a loop.

:class:`FlowRewriter` does the same walk and may rewrite the leaves it visits from the state in
force before them; loop bodies are analysed to a fixed point first and rewritten once with
the stable head state, so a rewrite always sees the join over every path reaching it.
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs

TOP = object()  # "unknown": the join of two different facts


def join_value(a, b):
    """Join of two lattice values compared by equality (``TOP`` absorbs)."""
    return a if a == b else TOP


def join_tuple(a, b):
    """Component-wise :func:`join_value` of two equal-length tuples."""
    return tuple(join_value(x, y) for x, y in zip(a, b))


def _loop_like(stmt) -> bool:
    return isinstance(stmt, (tirx.For, tirx.While)) or (
        isinstance(stmt, tirx.AttrStmt) and str(stmt.attr_key) == attrs.PERSISTENT_BODY)


class FlowRewriter:
    """Subclass and override :meth:`leaf` (and :meth:`join`, :meth:`before_loop`).

    ``leaf(stmt, state, rewrite) -> (new statement or list of statements, state after)``
    handles every statement without a statement body (``Evaluate``, ``Bind``, ...).
    ``before_loop(loop, state, rewrite) -> (statements to put before the loop, state)`` may
    hoist work out of a loop.
    """

    def join(self, a, b):
        return join_tuple(a, b)

    def leaf(self, stmt, state, rewrite):
        return stmt, state

    def before_loop(self, loop, state, rewrite):
        return [], state

    def run(self, stmt, state):
        """(rewritten statement, state after it)."""
        return self._visit(stmt, state, True)

    def analyse(self, stmt, state):
        """The state after ``stmt`` (nothing rewritten)."""
        return self._visit(stmt, state, False)[1]

    # ------------------------------------------------------------------------------------
    def _visit(self, stmt, state, rewrite):
        if isinstance(stmt, tirx.SeqStmt):
            out = []
            for s in stmt.seq:
                new, state = self._visit(s, state, rewrite)
                if rewrite:
                    out.extend(new if isinstance(new, list) else [new])
            return (_seq(out) if rewrite else stmt), state
        if isinstance(stmt, tirx.IfThenElse):
            then_s, then_state = self._visit(stmt.then_case, state, rewrite)
            if stmt.else_case is not None:
                else_s, else_state = self._visit(stmt.else_case, state, rewrite)
            else:
                else_s, else_state = None, state
            new = tirx.IfThenElse(stmt.condition, _seq(then_s), else_s and _seq(else_s),
                                  stmt.span) if rewrite else stmt
            return new, self.join(then_state, else_state)
        if _loop_like(stmt):
            pre, state = self.before_loop(stmt, state, rewrite)
            head = state
            while True:  # a finite lattice: stabilises after a few rounds
                exit_state = self._visit(stmt.body, head, False)[1]
                new_head = self.join(state, exit_state)
                if new_head == head:
                    break
                head = new_head
            body, _ = self._visit(stmt.body, head, rewrite)
            if not rewrite:
                return stmt, head
            if isinstance(stmt, tirx.For):
                new = tirx.For(stmt.loop_var, stmt.min, stmt.extent, stmt.kind, _seq(body),
                               stmt.thread_binding, stmt.annotations, stmt.step, stmt.span)
            elif isinstance(stmt, tirx.While):
                new = tirx.While(stmt.condition, _seq(body), stmt.span)
            else:
                new = tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, _seq(body), stmt.span)
            return (pre + [new] if pre else new), head
        if isinstance(stmt, tirx.AttrStmt):
            body, state = self._visit(stmt.body, state, rewrite)
            new = tirx.AttrStmt(stmt.node, stmt.attr_key, stmt.value, _seq(body),
                                stmt.span) if rewrite else stmt
            return new, state
        return self.leaf(stmt, state, rewrite)


def _seq(stmts):
    from ..common import seq

    if isinstance(stmts, list):
        return seq(stmts)
    return stmts
