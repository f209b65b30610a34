"""TIR -> C++ printing for device kernels: a visitor, no templates.

Codegen is dumb: every decision was taken by the passes and is spelled out in the IR.  This
module only prints: ``tt.*`` protocol calls by their C++ name, loops, conditions, bindings and
integer arithmetic (all indices are non-negative ``uint32_t``, so floor division and modulo
print as ``/`` and ``%``).  The persistent per-core loop is a loop of the IR like any other
(LowerPersistentLoopTT).
"""

from __future__ import annotations

import re

import tvm
from tvm import tirx

from .. import attrs, ops
from ..errors import TTVerifyError
from ..passes.common import buffer_shape, collect

_BINOPS = {
    tirx.Add: "+", tirx.Sub: "-", tirx.Mul: "*", tirx.FloorDiv: "/", tirx.FloorMod: "%",
    tirx.Div: "/", tirx.Mod: "%", tirx.EQ: "==", tirx.NE: "!=", tirx.LT: "<", tirx.LE: "<=",
    tirx.GT: ">", tirx.GE: ">=", tirx.And: "&&", tirx.Or: "||",
}


_CTYPES = {"int32": "int32_t", "uint32": "uint32_t", "float32": "float", "bool": "bool",
           # 16-bit floats: a C++ float holding a value of the type (rounded by _ROUND)
           "bfloat16": "float", "float16": "float",
           "int64": "int64_t", "int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t",
           "uint16": "uint16_t"}


# a float rounded to the nearest (ties to even) value of a 16-bit float type, as a float: the
# result of a scalar program's bfloat16 / float16 operation (NaN kept; float16: infinite from
# 65520, subnormals at multiples of 2^-24 rounded by one float addition)
_ROUND = {
    "bfloat16": ("([](float x) -> float {{ uint32_t b = __builtin_bit_cast(uint32_t, x); "
                 "if ((b & 0x7fffffffu) > 0x7f800000u) return x; "
                 "return __builtin_bit_cast(float, (b + 0x7fffu + ((b >> 16) & 1u)) & "
                 "0xffff0000u); }})({0})"),
    "float16": ("([](float x) -> float {{ uint32_t b = __builtin_bit_cast(uint32_t, x); "
                "uint32_t a = b & 0x7fffffffu; if (a > 0x7f800000u) return x; "
                "if (a < 0x38800000u) {{ float s = (b >> 31) ? -0.75f : 0.75f; "
                "return (x + s) - s; }} "
                "b = (b + 0xfffu + ((b >> 13) & 1u)) & 0xffffe000u; "
                "if ((b & 0x7fffffffu) > 0x477fe000u) b = (b & 0x80000000u) | 0x7f800000u; "
                "return __builtin_bit_cast(float, b); }})({0})"),
}


def ctype(dtype) -> str:
    """The C++ type of a scalar program's value of TIR dtype ``dtype``."""
    t = _CTYPES.get(str(dtype))
    if t is None:
        raise TTVerifyError(f"codegen: a scalar program value of dtype {dtype} has no C++ type "
                            "here (int32, uint32, float32, bool and small integers)")
    return t


def _cpp_string(text: str) -> str:
    """``text`` as a C++ string literal (printable ASCII kept, everything else escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.extend(f"\\x{b:02x}\"\"" for b in ch.encode())
    return '"' + "".join(out) + '"'


class KernelPrinter:
    """Prints one lowered kernel PrimFunc as the body of ``kernel_main``."""

    INDENT = "    "

    def __init__(self, func: tirx.PrimFunc):
        self.func = func
        self.names: dict = {}
        self.used: set = {"kernel_main"}
        self._read_vars = None
        self.lines: list[str] = []
        self.depth = 1
        self.accessor_args: dict = {}  # accessor index -> args variable name
        self.typed = False  # inside a scalar program: C++ types from TIR dtypes
        self.typed_vars: list = []  # the variables a scalar program declares

    # ---- names ---------------------------------------------------------------------------
    def name(self, var) -> str:
        for v, n in self.names.items():
            if v.same_as(var):
                return n
        base = re.sub(r"[^A-Za-z0-9_]", "_", str(var.name)) or "v"
        if base[0].isdigit():
            base = "v" + base
        candidate, k = base, 1
        while candidate in self.used:
            candidate = f"{base}_{k}"
            k += 1
        self.used.add(candidate)
        self.names[var] = candidate
        return candidate

    # ---- expressions ---------------------------------------------------------------------
    def expr(self, e) -> str:
        text = self._expr(e)
        if self.typed and str(getattr(e, "ty", "")) in _ROUND and isinstance(e, (
                tirx.Add, tirx.Sub, tirx.Mul, tirx.Div, tirx.Cast)):
            return _ROUND[str(e.ty)].format(text)  # a 16-bit float operation rounds
        return text

    def _expr(self, e) -> str:
        if isinstance(e, int):
            return str(e)
        if isinstance(e, tvm.tirx.IntImm):
            if str(e.ty) == "bool":
                return "true" if int(e.value) else "false"
            if str(e.ty) == "uint32":
                return f"{int(e.value)}u"
            return str(int(e.value))
        if isinstance(e, tvm.tirx.FloatImm):
            v = float(e.value)
            if v != v:
                return "__builtin_nanf(\"\")"
            if v in (float("inf"), float("-inf")):  # GCC's constant, no header needed
                return "__builtin_inff()" if v > 0 else "(-__builtin_inff())"
            return repr(v) + "f"
        if isinstance(e, tvm.ir.Var):
            if self.typed and str(e.ty) == "int32" and not any(e.same_as(v) for v in self.typed_vars):
                # an index from outside the program (uint32_t in the kernel) in signed arithmetic
                return f"static_cast<int32_t>({self.name(e)})"
            return self.name(e)
        if isinstance(e, tvm.tirx.StringImm):
            return _cpp_string(str(e.value))
        if self.typed and isinstance(e, (tirx.FloorDiv, tirx.FloorMod)) and \
                str(e.ty).startswith("int"):  # C++'s / and % truncate: floor them
            a, b = self.expr(e.a), self.expr(e.b)
            if isinstance(e, tirx.FloorDiv):
                return (f"([](int32_t a, int32_t b) {{ int32_t q = a / b; return (a % b != 0 && "
                        f"((a < 0) != (b < 0))) ? q - 1 : q; }})({a}, {b})")
            return (f"([](int32_t a, int32_t b) {{ int32_t r = a % b; return (r != 0 && "
                    f"((r < 0) != (b < 0))) ? r + b : r; }})({a}, {b})")
        op = _BINOPS.get(type(e))
        if self.typed and isinstance(e, (tirx.Add, tirx.Sub, tirx.Mul)) and \
                str(e.ty) == "int32":  # wrapping, as TIR's int32 (C++'s signed overflow is UB)
            return (f"static_cast<int32_t>(static_cast<uint32_t>({self.expr(e.a)}) {op} "
                    f"static_cast<uint32_t>({self.expr(e.b)}))")
        if op is not None:
            return f"({self.expr(e.a)} {op} {self.expr(e.b)})"
        if isinstance(e, tirx.Not):
            return f"(!{self.expr(e.a)})"
        if isinstance(e, (tirx.Min, tirx.Max)):
            # kernels compute in uint32_t; TIR's int32 is signed, so its min / max compare as
            # int32_t (T.max(0, bx - 1) is 0 at bx = 0, not the wrapped difference)
            a, b = self.expr(e.a), self.expr(e.b)
            op = "<" if isinstance(e, tirx.Min) else ">"
            if str(e.ty).startswith("int"):
                return f"(static_cast<int32_t>({a}) {op} static_cast<int32_t>({b}) ? ({a}) : ({b}))"
            return f"(({a}) {op} ({b}) ? ({a}) : ({b}))"
        if isinstance(e, tirx.Select):
            return f"({self.expr(e.condition)} ? {self.expr(e.true_value)} : {self.expr(e.false_value)})"
        if isinstance(e, tirx.Cast):
            if self.typed:  # a scalar program: C++'s conversion to the cast's type
                return f"static_cast<{ctype(e.ty)}>({self.expr(e.value)})"
            return f"static_cast<uint32_t>({self.expr(e.value)})"
        if isinstance(e, tvm.ir.TensorLoad):  # a scalar program's local (C++ array element)
            return f"{self.name(e.source)}[{self.local_index(e.source, e.indices)}]"
        if isinstance(e, tvm.ir.Call):
            return self.call(e)
        raise TTVerifyError(f"codegen: cannot print expression `{e}` ({type(e).__name__})")

    def call(self, c) -> str:
        name = ops.tt_op_name(c)
        if name is None:
            raise TTVerifyError(f"codegen: non-tt call `{c}` in a device kernel")
        spec = ops.spec(name)
        args = [self.expr(a) for a in c.args]
        if spec.cpp is None:
            raise TTVerifyError(f"codegen: abstract op {name} reached codegen (pipeline bug)")
        if "{" in spec.cpp or spec.props.get("expression"):  # the registry spells the whole
            # expression ({rest}: a variadic operand's arguments, each after a comma)
            fixed = len(spec.operands) - 1 if spec.variadic else len(args)
            return spec.cpp.format(*args, rest="".join(", " + a for a in args[fixed:]))
        if spec.template_args:  # the registry spells the template arguments
            n = spec.template_args
            template = spec.template(*[int(a) for a in c.args[-n:]])
            return f"{spec.cpp}{template}({', '.join(args[:-n])})"
        return f"{spec.cpp}{spec.template or ''}({', '.join(args)})"

    # ---- statements ----------------------------------------------------------------------
    def emit(self, line: str = ""):
        self.lines.append(self.INDENT * self.depth + line if line else "")

    def stmt(self, s):
        if isinstance(s, tirx.SeqStmt):
            for x in s.seq:
                self.stmt(x)
        elif isinstance(s, tirx.Evaluate):
            if isinstance(s.value, tvm.tirx.IntImm):
                return
            self.emit(self.expr(s.value) + ";")
        elif isinstance(s, tirx.For) and self.typed:
            v = self.name(s.loop_var)
            self.typed_vars.append(s.loop_var)
            t = ctype(s.loop_var.ty)
            lo, ext = self.expr(s.min), self.expr(s.extent)
            step = 1 if s.step is None else s.step
            if isinstance(step, tvm.tirx.IntImm) and int(step) < 0:
                cond = f"{v} > {lo} + {ext}"
            elif isinstance(step, tvm.tirx.IntImm):
                cond = f"{v} < {lo} + {ext}"
            else:
                st = self.expr(step)
                cond = f"({st} > 0 ? {v} < {lo} + {ext} : {v} > {lo} + {ext})"
            self.emit(f"for ({t} {v} = {lo}; {cond}; {v} += {self.expr(step)}) {{")
            self.block(s.body)
            self.emit("}")
        elif isinstance(s, tirx.For):
            v = self.name(s.loop_var)
            lo, ext = self.expr(s.min), s.extent
            hi = self.expr(ext) if isinstance(s.min, tvm.tirx.IntImm) and int(s.min) == 0 \
                else f"{lo} + {self.expr(ext)}"
            self.emit(f"for (uint32_t {v} = {lo}; {v} < {hi}; ++{v}) {{")
            self.block(s.body)
            self.emit("}")
        elif isinstance(s, tirx.IfThenElse):
            self.emit(f"if ({self.expr(s.condition)}) {{")
            self.block(s.then_case)
            if s.else_case is not None:
                self.emit("} else {")
                self.block(s.else_case)
            self.emit("}")
        elif isinstance(s, tirx.Bind):
            self.bind(s)
        elif isinstance(s, tirx.AttrStmt) and str(s.attr_key) == attrs.SCALAR_PROGRAM:
            # a scalar program (A0.00.1): typed C++ (int32_t, float), its locals C++ arrays
            was, self.typed = self.typed, True
            self.emit("{  // scalar program")
            self.block(s.body)
            self.emit("}")
            self.typed = was
        elif isinstance(s, tirx.AllocBuffer) and self.typed:
            b = s.buffer
            n = 1
            for d in buffer_shape(b):
                n *= int(d)
            self.emit(f"{ctype(b.dtype)} {self.name(b)}[{n}] = {{}};")
        elif isinstance(s, tirx.BufferStore) and self.typed:
            self.emit(f"{self.name(s.buffer)}[{self.local_index(s.buffer, s.indices)}] = "
                      f"{self.expr(s.value)};")
        elif isinstance(s, tirx.While):  # a scalar program's, or a loop over mutable scalars
            self.emit(f"while ({self.expr(s.condition)}) {{")
            self.block(s.body)
            self.emit("}")
        else:
            raise TTVerifyError(f"codegen: cannot print statement {type(s).__name__}: {s}")

    def local_index(self, buf, indices) -> str:
        """The row-major index of a scalar program's local array element."""
        text = None
        for i, d in zip(indices, buffer_shape(buf)):
            text = self.expr(i) if text is None else f"({text}) * {int(d)} + {self.expr(i)}"
        return text

    def block(self, body):
        self.depth += 1
        self.stmt(body)
        self.depth -= 1

    def bind(self, b: tirx.Bind):
        name = ops.tt_op_name(b.value)
        v = self.name(b.var)
        if name == "tt.alloc_cb":
            if not self.read(b.var):
                return  # a CB this kernel never names: no unused constant (the JIT builds with -Werror)
            cb_id, rows, cols, depth = (int(x) for x in b.value.args[:4])
            dtype, label = str(b.value.args[4].value), str(b.value.args[5].value)
            self.emit(f"constexpr uint32_t {v} = {cb_id};  // {label}: {rows}x{cols} tiles "
                      f"x {depth}, {dtype}")
        elif name == "tt.tensor_accessor":
            buf, index, slot, page = b.value.args
            index = int(index)
            args_name = f"{v}_args"
            self.used.add(args_name)
            offset = "0" if index == 0 else \
                f"{self.accessor_args[index - 1]}.next_compile_time_args_offset()"
            self.accessor_args[index] = args_name
            self.emit(f"constexpr auto {args_name} = TensorAccessorArgs<{offset}>();")
            self.emit(f"const auto {v} = TensorAccessor({args_name}, "
                      f"get_arg_val<uint32_t>({int(slot)}), {int(page)});  // {buf.name}")
        elif name == "tt.state_var":  # a mutable scalar (A0.1): every kernel's own copy
            self.emit(f"{ctype(b.var.ty)} {v} = 0;  // {b.value.args[0].value}")
        elif self.typed:
            self.typed_vars.append(b.var)
            self.emit(f"const {ctype(b.var.ty)} {v} = {self.expr(b.value)};")
        else:
            self.emit(f"const uint32_t {v} = {self.expr(b.value)};")

    def read(self, var) -> bool:
        """Whether any expression of the kernel (a call argument or a bound value) uses ``var``."""
        if self._read_vars is None:
            exprs = [b.value for b in collect(self.func.body, tirx.Bind)]
            exprs += collect(self.func.body, tvm.ir.Call)
            self._read_vars = [v for e in exprs for v in collect(e, tvm.ir.Var)]
        return any(v.same_as(var) for v in self._read_vars)

    def body(self) -> str:
        self.stmt(self.func.body)
        return "\n".join(self.lines)
