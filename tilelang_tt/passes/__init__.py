"""The tilelang-tt lowering pipeline: one module per stage, assembled in ``pipeline``."""
