"""Tenstorrent target tags and device profiles.

``tvm.target.Target("tenstorrent")`` works once ``tilelang_tt`` is imported (or autoloaded by
``import tvm`` through the ``tvm.backends`` entry point).  TVM targets only accept a few
generic options, so device parameters live in :data:`PROFILES`, selected by the target's
``model``.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
from tvm.target import Target, register_tag

from .errors import TTCompileError

TARGET_KEY = "tenstorrent"

# The TT-Metalium release the generated C++ is written for (recorded in tt.plan.json; the
# generated CMake project checks it against the SDK it finds in real mode).
SDK_NAME = "TT-Metalium"
SDK_VERSION = "0.81.1"


@dataclass(frozen=True)
class DeviceProfile:
    """Hardware numbers the compiler and the emulator agree on."""

    name: str
    grid_x: int  # compute grid columns used by programs
    grid_y: int  # compute grid rows
    l1_bytes: int  # L1 per Tensix core
    l1_reserved_bytes: int  # bottom of L1 kept by firmware; CBs live above it
    dram_banks: int
    dram_gbps: float
    clock_ghz: float
    max_cbs: int = 32
    max_runtime_args: int = 341
    dst_tiles: int = 16  # DST register file size in tiles (16-bit data)
    # NOC / DRAM figures of the emulator's timing model (tilelang_tt/runtime/mock/src/timing.hpp
    # CostProfile, Wormhole defaults; docs/MOCK.md "Device profiles" gives each one's source:
    # tt-metal noc_latencies.yaml and the Saturating_DRAM_bandwidth reports).  The compiler's
    # cost decisions (D2.1 multicast) read them here; testing/test_multicast.py checks they
    # match timing.hpp / timing.cpp.
    noc_latency: float = 275.0  # cycles, fixed latency of a unicast transfer
    noc_bytes_per_cycle: float = 28.5  # NOC port bandwidth
    mcast_latency: float = 160.0  # extra latency of a multicast, cycles
    mcast_per_dest: float = 2.5  # extra latency per destination, cycles
    mcast_occupancy_dests: float = 80.0  # port occupancy x (1 + destinations / this)
    dram_bank_bytes_per_cycle: float = 22.25  # one DRAM bank

    @property
    def num_cores(self) -> int:
        return self.grid_x * self.grid_y

    @property
    def l1_usable_bytes(self) -> int:
        return self.l1_bytes - self.l1_reserved_bytes

    def dst_capacity(self, fp32_acc: bool, full_sync: bool = False) -> int:
        """Tiles one ``tile_regs_acquire`` gives: half of DST in half-sync, halved again for fp32."""
        tiles = self.dst_tiles if full_sync else self.dst_tiles // 2
        return tiles // 2 if fp32_acc else tiles


PROFILES: dict[str, DeviceProfile] = {
    "wormhole_b0": DeviceProfile(
        name="wormhole_b0", grid_x=8, grid_y=8, l1_bytes=1464 * 1024,
        l1_reserved_bytes=100 * 1024, dram_banks=12, dram_gbps=288.0, clock_ghz=1.0,
    ),
    "blackhole": DeviceProfile(
        name="blackhole", grid_x=13, grid_y=10, l1_bytes=1536 * 1024,
        l1_reserved_bytes=100 * 1024, dram_banks=8, dram_gbps=512.0, clock_ghz=1.35,
        noc_latency=350.0, noc_bytes_per_cycle=60.5, dram_bank_bytes_per_cycle=46.3,
    ),
}
DEFAULT_MODEL = "wormhole_b0"
_ALIASES = {"wormhole": "wormhole_b0", "n150": "wormhole_b0", "n300": "wormhole_b0", "p150": "blackhole"}


def _register_tags() -> None:
    base = {"kind": "ext_dev", "keys": [TARGET_KEY]}
    register_tag(TARGET_KEY, {**base, "model": DEFAULT_MODEL})
    for model in PROFILES:
        register_tag(f"{TARGET_KEY}/{model}", {**base, "model": model})


_register_tags()


def resolve_target(target) -> tuple[Target, DeviceProfile]:
    """Turn ``"tenstorrent"``, ``"tenstorrent/blackhole"`` or a Target into (Target, profile)."""
    if target is None:
        target = TARGET_KEY
    if isinstance(target, str):
        name = target.strip()
        head, _, model = name.partition("/")
        if head == TARGET_KEY and model:
            model = _ALIASES.get(model, model)
            if model not in PROFILES:
                raise TTCompileError(
                    f"unknown Tenstorrent device {model!r}",
                    hint=f"use one of: {', '.join(f'{TARGET_KEY}/{m}' for m in PROFILES)}",
                )
            name = f"{TARGET_KEY}/{model}"
        try:
            target = Target(name)
        except Exception as err:  # TVM raises its own error types for unknown tags
            raise TTCompileError(f"cannot parse target {target!r}: {err}") from None
    if not isinstance(target, Target) or TARGET_KEY not in list(target.keys):
        raise TTCompileError(
            f"target {target} is not a Tenstorrent target",
            hint='compile with target="tenstorrent" (or "tenstorrent/blackhole")',
        )
    model = str(target.attrs.get("model", DEFAULT_MODEL))
    model = _ALIASES.get(model, model)
    if model not in PROFILES:
        raise TTCompileError(f"unknown Tenstorrent device model {model!r}")
    return target, PROFILES[model]


def profile_of(name: str) -> DeviceProfile:
    return PROFILES[_ALIASES.get(name, name)]


__all__ = ["DeviceProfile", "PROFILES", "TARGET_KEY", "resolve_target", "profile_of", "tvm"]
