"""``tvm.backends`` entry point: ``import tvm`` loads tilelang-tt, which registers the
``tenstorrent`` target tags, the ``tt.*`` TIR ops and the ``T.tt`` script namespace."""


def register():
    import tilelang_tt  # noqa: F401  (importing registers everything; may be mid-import)
