"""Running compiled kernels: artifacts, host tensors, the emulator build driver."""
