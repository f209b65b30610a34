"""dataflow phase of the pipeline (see docs/PIPELINE.md)."""
