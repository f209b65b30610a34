"""Helpers for the test suites: structural checks of generated sources, references."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np

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
    return x.astype(BF16) if dtype == "bfloat16" else x


def as_f32(x):
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
