"""`import tilelang_tt` imports TVM without what compiling for Tenstorrent does not use
(tilelang_tt/_tvm_import.py): tvm.relax lazily, no GPU backend hooks; everything still works
from there, and TILELANG_TT_TVM_FULL=1 (or importing tvm first) gives TVM's full import."""

import os
import subprocess
import sys

import pytest

PROBE = """
import sys, importlib.util
{first}
import tilelang_tt
import tvm
relax = sys.modules.get("tvm.relax")
print("relax-lazy", isinstance(relax, importlib.util._LazyModule))
print("cuda-hooks", tvm.backend.loader.is_loaded("cuda"))
print("disco", tvm.runtime.disco is None)
print("extra", "tvm_runtime_extra" in tvm.base._LOADED_LIBS)
import numpy as np, ml_dtypes
import tilelang_tt.language as T
@T.prim_func
def add(A: T.Tensor((32, 32), "bfloat16"), B: T.Tensor((32, 32), "bfloat16")):
    with T.Kernel(1, 1) as (bx, by):
        s = T.alloc_shared((32, 32), "bfloat16")
        T.copy(A, s)
        T.copy(s, B)
art = tilelang_tt.compile(add, out_idx=-1)
x = np.arange(1024, dtype=np.float32).reshape(32, 32).astype(ml_dtypes.bfloat16)
print("copy", bool((art(x) == x).all()))
print("relax-lazy-after-run", isinstance(sys.modules["tvm.relax"], importlib.util._LazyModule),
      "tvm.s_tir" in sys.modules)
from tvm.script import relax as R, ir as I
print("relax-used", isinstance(sys.modules["tvm.relax"], importlib.util._LazyModule),
      R.Tensor.__module__.startswith("tvm.relax"))
"""


def probe(tmp_path, first="", **env):
    run_env = dict(os.environ)
    run_env.pop("TILELANG_TT_TVM_FULL", None)
    run_env.update(env)
    script = tmp_path / "probe.py"  # TVMScript reads the kernel's source
    script.write_text(PROBE.format(first=first))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=run_env, timeout=300)
    assert out.returncode == 0, out.stderr
    return dict((line.split(" ", 1)[0], line.split(" ", 1)[1]) for line in out.stdout.splitlines())


def test_lean_tvm_import(tmp_path):
    got = probe(tmp_path)
    assert got["relax-lazy"] == "True" and got["cuda-hooks"] == "False"
    # as after TVM's own import: disco's import fails inside it, libtvm_runtime_extra is loaded
    assert got["disco"] == "True" and got["extra"] == "True"
    assert got["copy"] == "True"
    # parsing, compiling and running a kernel import neither relax nor s_tir
    assert got["relax-lazy-after-run"] == "True False"
    assert got["relax-used"] == "False True"  # imported in full when used


@pytest.mark.parametrize("how", ["env", "tvm-first"])
def test_full_tvm_import(tmp_path, how):
    got = (probe(tmp_path, TILELANG_TT_TVM_FULL="1") if how == "env"
           else probe(tmp_path, first="import tvm"))
    assert got["relax-lazy"] == "False" and got["cuda-hooks"] == "True"
    assert got["disco"] == "True" and got["extra"] == "True"
    assert got["copy"] == "True" and got["relax-used"] == "False True"


def test_ill_formed_kernel_is_reported_as_tvmscript_reports_it():
    """TVMScript's well-formedness check of a parsed kernel (run by tilelang_tt.language, not
    by TVMScript's parse, which would import tvm.relax): a variable the kernel never defines."""
    import tilelang_tt
    import tilelang_tt.language as T
    from tilelang_tt import tvm

    v = tvm.tirx.Var("v", "int32")

    with pytest.raises(tilelang_tt.TTCompileError) as info:
        @T.prim_func
        def kernel(A: T.Tensor((32, 32), "float32")):
            with T.Kernel(1, 1) as (bx, by):
                A[v, 0] = 1.0
    message = str(info.value)
    assert "not well-formed" in message and "undefined variable v" in message
    assert "test_import.py" in message  # pointing at the kernel's source
