"""The example scripts run and check themselves against numpy."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("script", ["quickstart.py", "gemm.py", "elementwise_add.py", "softmax.py",
                                    "online_softmax.py", "rms_norm.py", "flash_attention.py",
                                    "flash_attention_4d.py"])
def test_example_runs(script):
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "match" in proc.stdout.lower()
