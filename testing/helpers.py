"""Helpers for the test suites: structural checks of generated sources, references."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np

import tilelang_tt

BF16 = ml_dtypes.bfloat16

_CALL = re.compile(r"\b(cb_reserve_back|cb_push_back|cb_wait_front|cb_pop_front)\((\w+),\s*([^)]+)\)")


def cb_protocol(code: str) -> dict:
    """CB name -> list of (call, count expression) in textual order."""
    calls = {}
    for m in _CALL.finditer(code):
        calls.setdefault(m.group(2), []).append((m.group(1), m.group(3).strip()))
    return calls


def assert_balanced(code: str, kernel: str) -> None:
    """Every reserve is followed by its push, every wait by its pop, with the same count."""
    for cb, seq in cb_protocol(code).items():
        for open_, close in (("cb_reserve_back", "cb_push_back"), ("cb_wait_front", "cb_pop_front")):
            pending = []
            for call, count in seq:
                if call == open_:
                    assert not pending, f"{kernel}: {cb}: {open_}({count}) before the previous one closed"
                    pending.append(count)
                elif call == close:
                    assert pending, f"{kernel}: {cb}: {close}({count}) without a matching {open_}"
                    assert pending.pop() == count, f"{kernel}: {cb}: {open_}/{close} counts differ"
            assert not pending, f"{kernel}: {cb}: {open_}({pending[0]}) never closed"


def assert_no_tir_left(code: str, fname: str) -> None:
    assert not re.search(r"\btt\.[a-z_]", code), f"{fname}: tt.* pseudo-call left"
    for marker in ("T.", "tirx", "T.Buffer", "T.int32", "@T.prim_func"):
        assert marker not in code, f"{fname}: TIR text {marker!r} left"


def rand(shape, dtype, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    return x.astype({"bfloat16": BF16, "float16": np.float16}.get(dtype, np.float32))


def as_f32(x):
    # a kernel called without arguments returns torch tensors once the process imported torch
    # (another test may have), and numpy cannot take a torch bfloat16 tensor directly
    if type(x).__module__.startswith("torch"):
        x = x.float().numpy()
    return np.asarray(x).astype(np.float32)


def kernel_from_source(tmp_path, source: str, name: str = "k"):
    """The ``T.prim_func`` ``name`` of a module written from ``source`` (TVMScript parses a
    kernel from its file, so generated kernel variants go through one)."""
    import importlib.util
    import uuid

    path = tmp_path / f"kernel_{uuid.uuid4().hex}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def parallel_outputs_kernel(tmp_path, dtype, inputs, exprs, M, N, bm, bn):
    """One kernel whose inputs are the (M, N) tensors ``inputs`` and whose outputs are one
    (M, N) tensor per element expression of ``exprs`` (name: text over the inputs' elements,
    ``{X}`` for ``X[y, x]``), each computed in its own T.Parallel nest over the global tensors
    (the nest of kernels.elementwise_expr): one program checks several expressions."""
    params = ", ".join(f'{n}: T.Tensor(({M}, {N}), "{dtype}")' for n in [*inputs, *exprs])
    body = "".join(
        f"        for i, j in T.Parallel({bm}, {bn}):\n"
        f"            y = by * {bm} + i\n"
        f"            x = bx * {bn} + j\n"
        f"            {name}[y, x] = " + text.format(**{n: f"{n}[y, x]" for n in inputs}) + "\n"
        for name, text in exprs.items())
    src = (f"import tilelang_tt.language as T\n\n@T.prim_func\ndef k({params}):\n"
           f"    with T.Kernel({N // bn}, {M // bm}) as (bx, by):\n{body}")
    return tilelang_tt.compile(kernel_from_source(tmp_path, src),
                               out_idx=list(range(len(inputs), len(inputs) + len(exprs))))


# ---- expected results and tolerances from the Tensix arithmetic model ------------------------------
# docs/MOCK.md "Numerics" lists the rules; testing/tensix_model.py implements them bit for bit. The
# bounds below follow from those rules (which bits each fidelity drops, where the matrix engine
# rounds), not from measured errors.

PHASES = {"LoFi": 1, "HiFi2": 2, "HiFi3": 3, "HiFi4": 4}


def compute_config(art) -> dict:
    """The ComputeConfig the compiler chose (math_fidelity, fp32_dest_acc_en, ...)."""
    return art.plan["kernels"]["compute"]["config"]


def ulp(x, dtype="bfloat16"):
    """Spacing of ``dtype`` at |x| (its smallest normal spacing below the normal range)."""
    mant, emin = {"bfloat16": (7, -126), "float16": (10, -14), "float32": (23, -126)}[str(dtype)]
    e = np.floor(np.log2(np.maximum(np.abs(np.asarray(x, dtype=np.float64)), 2.0 ** emin)))
    return 2.0 ** (e - mant)


def pack_round_bf16(x):
    """fp32 values rounded to bf16 as the packer rounds a 32-bit DST: half away from zero."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x8000) & 0xFFFF0000).astype(np.uint32).view(np.float32).astype(BF16)


def pack_round_fp16(x):
    """fp32 values rounded to float16 as the emulator packs a 32-bit DST into a Float16 CB: the
    bf16 rule at 10 mantissa bits (half away from zero; below 2^-14 -> +0; NaN, overflow -> inf)."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)
    sign = np.where(u & 0x80000000, -1.0, 1.0)
    a = ((u & 0x7FFFFFFF) + 0x1000) & 0x7FFFE000
    mag = a.astype(np.uint32).view(np.float32).astype(np.float64)
    mag = np.where(mag < 2.0 ** -14, 0.0, np.where(np.isnan(mag) | (mag >= 65520.0), np.inf, mag))
    return np.where(mag == 0, 0.0, sign * mag).astype(np.float16)


def src_operand(x, fp32_dst: bool):
    """An L1 operand as the unpacker puts it in SrcA/SrcB (float64): bf16 and float16 exactly,
    fp32 truncated to TF32 with a 32-bit DST and to bf16 with a 16-bit DST."""
    x = np.asarray(x)
    if x.dtype in (BF16, np.float16):  # both exact in a source register
        return x.astype(np.float64)
    u = x.astype(np.float32).view(np.uint32)
    u = u & np.uint32(0xFFFFE000 if fp32_dst else 0xFFFF0000)
    return u.view(np.float32).astype(np.float64)


def _truncate(x, mantissa_bits: int):
    u = np.asarray(x, dtype=np.float32).view(np.uint32)
    keep = np.uint32((0xFFFFFFFF << (23 - mantissa_bits)) & 0xFFFFFFFF)
    return (u & keep).view(np.float32).astype(np.float64)


def matmul_reference(a, b, fidelity: str, fp32_dst: bool, out_dtype="bfloat16",
                     transpose_b=False):
    """(reference, atol) for ``a @ b`` on the matrix engine.

    reference: the product of the mantissa fields the fidelity phases multiply (SrcB = a: top 6
    bits, then the last 4; SrcA = b: top 4 bits, then the next 5), in exact arithmetic.
    atol: bound of the rounding the engine adds, accumulating each output over all of K in DST:
    aligning each product to its group of 8 (half a 2^-10 step of the group's largest product per
    lane, summed over phases), rounding into DST after every 16-k step (half an ulp of the DST
    format plus the three 10-bit addend roundings of a 16-bit DST) and packing (one ulp)."""
    a = src_operand(a, fp32_dst)
    b = src_operand(b, fp32_dst)
    if transpose_b:
        b = b.T
    a_hi = _truncate(a, 6)
    a_fields = (a_hi, _truncate(a, 10) - a_hi)
    b_hi = _truncate(b, 4)
    b_fields = (b_hi, _truncate(b, 9) - b_hi)
    ref = sum(a_fields[(p >> 1) & 1] @ b_fields[p & 1] for p in range(PHASES[fidelity]))
    aa, ab = np.abs(a), np.abs(b)
    k = a.shape[1]
    group = sum(np.max(aa[:, g:g + 8, None] * ab[None, g:g + 8, :], axis=1)
                for g in range(0, k, 8))
    eps_dst = 2.0 ** -24 + 3 * 2.0 ** -23 if fp32_dst else 2.0 ** -8 + 3 * 2.0 ** -10
    dst = np.zeros_like(ref)
    partial = np.zeros_like(ref)
    for t in range(0, k, 32):
        tile_abs = aa[:, t:t + 32] @ ab[t:t + 32, :]
        nxt = partial + a[:, t:t + 32] @ b[t:t + 32, :]
        dst += 2 * PHASES[fidelity] * eps_dst * (np.maximum(np.abs(partial), np.abs(nxt)) + tile_abs)
        partial = nxt
    atol = 1.05 * 2.0 ** -8 * group + dst
    return ref, atol + ulp(np.abs(ref) + atol, out_dtype)


def assert_matmul(c, a, b, art=None, *, fidelity=None, fp32_dst=None, transpose_b=False):
    """Every element of ``c`` within the model's bound of ``a @ b`` (fidelity and DST mode from
    the artifact's ComputeConfig unless given)."""
    if art is not None:
        cfg = compute_config(art)
        fidelity = fidelity or cfg["math_fidelity"]
        fp32_dst = cfg["fp32_dest_acc_en"] if fp32_dst is None else fp32_dst
    out_dtype = str(np.asarray(c).dtype)
    ref, atol = matmul_reference(a, b, fidelity, fp32_dst, out_dtype, transpose_b)
    err = np.abs(as_f32(c).astype(np.float64) - ref)
    bad = err > atol
    assert not bad.any(), (f"{bad.sum()} of {bad.size} elements outside the {fidelity} "
                           f"{'fp32' if fp32_dst else '16-bit'}-DST bound; worst excess "
                           f"{(err - atol).max():.3g} at {np.unravel_index((err - atol).argmax(), err.shape)}")


def assert_within_ulps(actual, exact, ulps, dtype="bfloat16", atol=0.0):
    """|actual - exact| <= ulps * ulp(exact) + atol in every element."""
    exact = np.asarray(exact, dtype=np.float64)
    err = np.abs(as_f32(actual).astype(np.float64) - exact)
    tol = ulps * ulp(exact, dtype) + atol
    bad = err > tol
    assert not bad.any(), (f"{bad.sum()} of {bad.size} elements beyond {ulps} {dtype} ulp; e.g. "
                           f"{as_f32(actual)[bad][:3]} vs {exact[bad][:3]}")
