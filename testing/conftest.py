"""Shared fixtures: the example kernel factories are importable as `kernels`; every
pipeline run in the tests verifies the IR after every stage (TT_VERIFY_EACH)."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

os.environ.setdefault("TT_VERIFY_EACH", "1")
