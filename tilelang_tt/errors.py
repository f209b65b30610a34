"""Errors raised by tilelang-tt.

Every error a user can trigger by writing an unsupported or malformed kernel is a
:class:`TTCompileError` (or a subclass) whose message names the buffer, op or source line
involved and says what to change.  Errors reported by the emulator or an SDK build at run
time are :class:`TTRuntimeError`.
"""

from __future__ import annotations


class TTCompileError(Exception):
    """A kernel cannot be compiled for Tenstorrent; the message says why and what to change."""

    def __init__(self, message: str, *, span=None, hint: str | None = None):
        self.span = span
        self.hint = hint
        location = describe_span(span)
        text = message
        if location:
            text = f"{location}: {text}"
        if hint:
            text = f"{text}\n  hint: {hint}"
        super().__init__(text)


class TTUnsupportedError(TTCompileError):
    """A construct that is valid TileLang but not supported by this backend yet."""


class TTDtypeError(TTCompileError, TypeError):
    """An operation applied to a value of a dtype it does not take (``T.__exp`` of an integer).
    Also a ``TypeError``, as TileLang raises for the same programs."""


class TTArgumentError(TTCompileError, ValueError):
    """An argument value TileLang itself rejects with ValueError: a compile argument that
    contradicts the kernel (``out_idx`` given for a kernel that declares its outputs), a memory
    order an atomic load or store cannot have. Also a ``ValueError``, so TileLang programs
    catching one still do."""


class TTAssertionError(TTCompileError, AssertionError):
    """A kernel's own ``assert`` on Python values (sizes, tuning parameters) failed while the
    kernel was traced. Also an ``AssertionError``, as TileLang raises for the same programs."""


class TTAssumeError(TTCompileError, RuntimeError):
    """A kernel's ``T.assume(cond)`` is false for the sizes it is compiled for (symbolic sizes
    are compiled per call). Also a ``RuntimeError``, as TileLang's run-time check raises."""


class TTLayoutError(TTCompileError):
    """A shape, layout or alignment that cannot be mapped onto 32x32 tiles."""


class TTResourceError(TTCompileError):
    """A resource limit of the device is exceeded (L1, circular buffers, DST, runtime args)."""


class TTPerformanceWarning(UserWarning):
    """The kernel compiled, but with a measure that costs speed (the compile-time report):
    circular buffers single-buffered to fit L1 (their producer and consumer no longer
    overlap)."""


class TTDeadCodeWarning(UserWarning):
    """The kernel compiled, but computes a block value nothing reads: the statements that
    compute it were dropped (A0.3.0 DropDeadBlockWritesTT names the buffer and the lines)."""


class TTAliasError(TTCompileError):
    """An L1 alias spec (``T.annotate_l1_alias``) that cannot hold: a bad nesting of reuse
    groups, a group mixing memory kinds, a member that does not fit a sized spec, or buffers
    told to share L1 whose lifetimes overlap."""


class TTVerifyError(TTCompileError):
    """The lowered IR violates an invariant checked by VerifyTTIR (a compiler bug or bad input)."""


class TTRuntimeError(RuntimeError):
    """Running a compiled artifact failed (emulator protocol error, deadlock, build failure)."""


def source_span(span):
    """One ``tvm.ir.Span`` for ``span``: a statement expanded from a ``T.macro`` carries a
    SequentialSpan (the call site, then the macro's own line), which gives its last, the
    line of the statement itself."""
    spans = getattr(span, "spans", None)
    if spans is not None:
        return spans[-1] if len(spans) else None
    return span


def describe_span(span) -> str:
    """Render a TVM span as ``file:line`` plus the source line when it can be read."""
    span = source_span(span)
    if span is None:
        return ""
    try:
        path = str(span.source_name.name)
        line = int(span.line)
    except Exception:  # pragma: no cover - spans without a source
        return ""
    text = f"{path}:{line}"
    try:
        with open(path, encoding="utf-8") as fh:
            src = fh.read().splitlines()[line - 1].strip()
        text += f" `{src}`"
    except Exception:
        pass
    return text
