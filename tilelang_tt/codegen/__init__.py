"""Code generation: visitors that print the lowered kernels, the host program and the plan."""
