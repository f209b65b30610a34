"""VerifyTTIR's protocol rules (passes/protocol.py), each broken by a kernel written as IR
(TVMScript with T.tt ops) - and the lowered kernels of the suite pass them (every compile
runs F)."""

import re
import textwrap

import pytest
import tvm

import kernels
import tilelang_tt
from tilelang_tt.passes import pipeline
from tilelang_tt.passes.analysis.protocol import protocol_problems
from tilelang_tt.target import profile_of

PROFILE = profile_of("wormhole_b0")
COMPUTE = '''
@T.prim_func
def k_compute():
    T.func_attr({{"global_symbol": "k_compute", "tt.kernel_kind": "compute",
                 "tt.compute_config": {{"dst_full_sync_en": False, "fp32_dest_acc_en": False,
                                       "math_approx_mode": False, "math_fidelity": "HiFi4",
                                       "unpack_to_dest_fp32": []}}}})
    a: T.let[T.int32] = T.tt.alloc_cb(0, 1, 1, 2, "bfloat16", "a")
    b: T.let[T.int32] = T.tt.alloc_cb(1, 1, 1, 2, "bfloat16", "b")
    c: T.let[T.int32] = T.tt.alloc_cb(16, 1, 1, 2, "bfloat16", "c")
    T.tt.compute_kernel_hw_startup(a, b, c, 0)
    with T.attr({{"tt.persistent_body": 1}}):
{body}
'''
DATAFLOW = '''
@T.prim_func
def k_{kind}(A: T.Buffer((32, 32), "bfloat16")):
    T.func_attr({{"global_symbol": "k_{kind}", "tt.kernel_kind": "{kind}"}})
    a: T.let[T.int32] = T.tt.alloc_cb(0, 1, 1, 2, "bfloat16", "a")
    acc: T.let[T.handle] = T.tt.tensor_accessor(A, 0, 0, 2048)
    with T.attr({{"tt.persistent_body": 1}}):
{body}
'''
# one tile of c = a * b, the protocol in full
MUL = """
T.tt.cb_wait_front(a, 1)
T.tt.cb_wait_front(b, 1)
T.tt.cb_reserve_back(c, 1)
T.tt.tile_regs_acquire()
T.tt.mul_init(a, b)
T.tt.mul_tiles(a, b, 0, 0, 0)
T.tt.tile_regs_commit()
T.tt.tile_regs_wait()
T.tt.pack_tile(0, c, 0, 0)
T.tt.tile_regs_release()
T.tt.cb_push_back(c, 1)
T.tt.cb_pop_front(b, 1)
T.tt.cb_pop_front(a, 1)
"""


def problems(template, body, **kw):
    source = template.format(body=textwrap.indent(textwrap.dedent(body).strip(), " " * 8), **kw)
    func = tvm.script.from_source(source)
    return protocol_problems(func, PROFILE)


def compute(body):
    return problems(COMPUTE, body)


def test_a_correct_kernel_has_no_problems():
    assert compute(MUL) == []
    loop = "for i in range(2):\n" + textwrap.indent(MUL.strip(), "    ")
    assert compute(loop) == []


def test_wait_without_pop_and_reserve_without_push():
    msgs = compute(MUL.replace("T.tt.cb_pop_front(a, 1)\n", ""))
    assert any("one iteration of the persistent loop does not leave the state" in m
               and "1 tile(s) of a waited for" in m for m in msgs)
    msgs = compute(MUL.replace("T.tt.cb_push_back(c, 1)\n", ""))
    assert any("1 tile(s) of c reserved" in m for m in msgs)
    msgs = compute(MUL.replace("T.tt.cb_pop_front(b, 1)", "T.tt.cb_pop_front(b, 2)"))
    assert any("cb_pop_front(b, 2) closes cb_wait_front(b, 1) with another count" in m
               for m in msgs)
    msgs = compute(MUL.replace("T.tt.cb_wait_front(a, 1)\n", ""))
    assert any("mul_tiles(a, b, 0, 0, 0) reads a with no tiles waited for" in m for m in msgs)
    assert any("cb_pop_front(a, 1) without a cb_wait_front" in m for m in msgs)
    msgs = compute(MUL.replace("T.tt.cb_reserve_back(c, 1)\n", ""))
    assert any("pack_tile(0, c, 0, 0) packs into c with no tiles reserved" in m for m in msgs)


def test_balanced_on_every_loop_iteration_and_every_path():
    # reserve in the loop, push once after it: unbalanced per iteration
    body = MUL.replace("T.tt.cb_push_back(c, 1)\n", "")
    loop = "for i in range(2):\n" + textwrap.indent(body.strip(), "    ") + \
        "\nT.tt.cb_push_back(c, 1)"
    msgs = compute(loop)
    assert any("one iteration of the loop over i does not leave the state it found" in m
               and "1 tile(s) of c reserved, DST released after" in m for m in msgs)
    # a pop on one path only
    branchy = "for i in range(2):\n" + textwrap.indent(MUL.replace(
        "T.tt.cb_pop_front(a, 1)\n", "if i == 0:\n    T.tt.cb_pop_front(a, 1)\n").strip(), "    ")
    msgs = compute(branchy)
    assert any("one iteration of the loop over i does not leave the state it found" in m
               for m in msgs)
    # the same condition twice: reserve and push under `if i == 1` is balanced on each path
    correlated = """
for i in range(2):
    if i == 1:
        T.tt.cb_reserve_back(c, 1)
    T.tt.tile_regs_acquire()
    T.tt.fill_tile_init()
    T.tt.fill_tile(0, T.float32(1))
    T.tt.tile_regs_commit()
    T.tt.tile_regs_wait()
    if i == 1:
        T.tt.pack_tile(0, c, 0, 0)
    T.tt.tile_regs_release()
    if i == 1:
        T.tt.cb_push_back(c, 1)
"""
    assert compute(correlated) == []


def test_dst_in_order():
    msgs = compute(MUL.replace("T.tt.tile_regs_wait()\n", ""))
    assert any("pack_tile(0, c, 0, 0) while DST is committed (it needs DST waited)" in m
               for m in msgs)
    assert any("tile_regs_release() while DST is committed" in m for m in msgs)
    msgs = compute(MUL.replace("T.tt.tile_regs_acquire()\n", ""))
    assert any("mul_tiles(a, b, 0, 0, 0) while DST is released" in m for m in msgs)
    msgs = compute(MUL.replace("T.tt.tile_regs_release()\n", ""))
    assert any("one iteration of the persistent loop does not leave the state" in m
               and "DST waited after" in m for m in msgs)
    msgs = compute(MUL.replace("T.tt.tile_regs_release()\n",
                               "T.tt.tile_regs_release()\nT.tt.tile_regs_release()\n"))
    assert any("tile_regs_release() while DST is released" in m for m in msgs)


@pytest.mark.parametrize("call,setup", [
    ("T.tt.exp_tile(99)", "T.tt.exp_tile_init()"),
    ("T.tt.fill_tile(99, T.float32(0))", "T.tt.fill_tile_init()"),
    ("T.tt.reduce_tile(a, b, 0, 0, 99, 0, 0)", "T.tt.reduce_init(a, b, c, 0, 0)"),
    ("T.tt.copy_tile(a, 0, 99)", "T.tt.copy_init(a)"),
    ("T.tt.add_binary_tile(0, 99, 0)", "T.tt.add_binary_tile_init()"),
])
def test_dst_index_within_the_capacity_of_the_mode(call, setup):
    body = MUL.replace("T.tt.mul_tiles(a, b, 0, 0, 0)", f"{setup}\n{call}")
    msgs = compute(body)
    assert any(re.search(r"uses DST tile 99 .*DST holds 8 tiles in this mode", m) for m in msgs)
    ok = compute(body.replace("99", "7"))
    assert not any("DST tile" in m for m in ok)


def test_every_compute_call_after_its_init_on_every_path():
    msgs = compute(MUL.replace("T.tt.mul_init(a, b)\n", ""))
    assert any("mul_tiles(a, b, 0, 0, 0) needs mul_init in force on every path; the math engine "
               "is configured for nothing" in m for m in msgs)
    # the init under a branch only: the other path reaches mul_tiles without it
    branch = "for i in range(2):\n" + textwrap.indent(MUL.replace(
        "T.tt.mul_init(a, b)\n", "if i == 0:\n    T.tt.mul_init(a, b)\n").strip(), "    ")
    msgs = compute(branch)
    assert any("needs mul_init in force on every path" in m for m in msgs)
    # another init of the same engine in between
    msgs = compute(MUL.replace("T.tt.mul_tiles(a, b, 0, 0, 0)",
                               "T.tt.copy_init(a)\nT.tt.mul_tiles(a, b, 0, 0, 0)"))
    assert any("the math engine is configured for copy_init" in m for m in msgs)
    # reduce_init's pool and dimension must be the reduce_tile's
    msgs = compute(MUL.replace("T.tt.mul_init(a, b)\nT.tt.mul_tiles(a, b, 0, 0, 0)",
                               "T.tt.reduce_init(a, b, c, 1, 0)\n"
                               "T.tt.reduce_tile(a, b, 0, 0, 0, 0, 0)"))
    assert any("reduce_tile" in m and "needs reduce_init" in m for m in msgs)
    # an SFPU function after another function's init
    msgs = compute(MUL.replace("T.tt.mul_init(a, b)\nT.tt.mul_tiles(a, b, 0, 0, 0)",
                               "T.tt.exp_tile_init()\nT.tt.relu_tile(0)"))
    assert any("relu_tile(0) needs relu_tile_init" in m and "sfpu engine" in m for m in msgs)
    # nothing before the hardware start-up
    source = COMPUTE.replace("    T.tt.compute_kernel_hw_startup(a, b, c, 0)\n", "")
    msgs = problems(source, MUL)
    assert any("before compute_kernel_hw_startup" in m for m in msgs)


def test_noc_barriers_before_push_and_pop():
    read = """
T.tt.cb_reserve_back(a, 1)
l1: T.let[T.int32] = T.tt.get_write_ptr(a)
T.tt.noc_async_read_page(0, acc, l1)
T.tt.noc_async_read_barrier()
T.tt.cb_push_back(a, 1)
"""
    assert problems(DATAFLOW, read, kind="reader") == []
    msgs = problems(DATAFLOW, read.replace("T.tt.noc_async_read_barrier()\n", ""), kind="reader")
    assert any("cb_push_back(a, 1) before noc_async_read_barrier" in m for m in msgs)
    write = """
T.tt.cb_wait_front(a, 1)
l1: T.let[T.int32] = T.tt.get_read_ptr(a)
T.tt.noc_async_write_page(0, acc, l1)
T.tt.noc_async_write_barrier()
T.tt.cb_pop_front(a, 1)
"""
    assert problems(DATAFLOW, write, kind="writer") == []
    msgs = problems(DATAFLOW, write.replace("T.tt.noc_async_write_barrier()\n", ""),
                    kind="writer")
    assert any("cb_pop_front(a, 1) before noc_async_write_barrier" in m for m in msgs)
    msgs = problems(DATAFLOW, write.replace("T.tt.cb_wait_front(a, 1)\n", ""), kind="writer")
    assert any("get_read_ptr(a) with no tiles of a waited for" in m for m in msgs)
    # a reader op in the writer kernel
    msgs = problems(DATAFLOW, write.replace("T.tt.noc_async_write_page", "T.tt.noc_async_read_page"),
                    kind="writer")
    assert any("tt.noc_async_read_page belongs to the reader kernel" in m for m in msgs)


def test_lowered_module_with_pops_and_releases_deleted_fails_verification():
    """The issue's example: F used to accept a module with every cb_pop_front and
    tile_regs_release deleted."""
    mod = tilelang_tt.lower(kernels.matmul(128, 128, 64, 64, 64, 32))
    text = mod.script()
    broken = "\n".join(line for line in text.splitlines()
                       if "T.tt.cb_pop_front" not in line and "T.tt.tile_regs_release" not in line)
    mod = tvm.script.from_source(broken)
    with pytest.raises(tilelang_tt.TTVerifyError) as info:
        pipeline.run_pass(pipeline.VerifyTTIR, mod)
    msg = str(info.value)
    assert "break the TT-Metalium protocol" in msg and "waited for" in msg


def test_rmw_semaphore_handshake():
    """An atomic's per-iteration read-modify-write (tt.rmw_semaphore): the reader claims the
    semaphore only after waiting for the writer's release, and reads nothing between the two;
    the writer releases it only after its write barrier."""
    rmw = DATAFLOW.replace('"tt.kernel_kind": "{kind}"',
                           '"tt.kernel_kind": "{kind}", "tt.rmw_semaphore": 0').replace(
        '    a: T.let', '    sem: T.let[T.int32] = T.tt.get_semaphore(0)\n    a: T.let', 1)
    read = """
T.tt.noc_semaphore_wait(sem, 0)
T.tt.noc_semaphore_set(sem, 1)
T.tt.cb_reserve_back(a, 1)
l1: T.let[T.int32] = T.tt.get_write_ptr(a)
T.tt.noc_async_read_page(0, acc, l1)
T.tt.noc_async_read_barrier()
T.tt.cb_push_back(a, 1)
"""
    assert problems(rmw, read, kind="reader") == []
    msgs = problems(rmw, read.replace("T.tt.noc_semaphore_wait(sem, 0)\n", ""), kind="reader")
    assert any("without a noc_semaphore_wait for 0" in m for m in msgs)
    msgs = problems(rmw, read.replace("T.tt.noc_semaphore_set(sem, 1)\n", ""), kind="reader")
    assert any("without claiming it" in m for m in msgs)
    write = """
T.tt.cb_wait_front(a, 1)
l1: T.let[T.int32] = T.tt.get_read_ptr(a)
T.tt.noc_async_write_page(0, acc, l1)
T.tt.noc_async_write_barrier()
T.tt.cb_pop_front(a, 1)
T.tt.noc_semaphore_set(sem, 0)
"""
    assert problems(rmw, write, kind="writer") == []
    early = write.replace("T.tt.noc_semaphore_set(sem, 0)\n", "").replace(
        "T.tt.noc_async_write_barrier()\n", "T.tt.noc_semaphore_set(sem, 0)\n"
        "T.tt.noc_async_write_barrier()\n")
    msgs = problems(rmw, early, kind="writer")
    assert any("before noc_async_write_barrier: the reader may read" in m for m in msgs)
