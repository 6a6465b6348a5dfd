"""The pure core and the rule-only signals load without any model runtime."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import vsr_extproc.core.router, vsr_extproc.core.decision, vsr_extproc.core.explain
import vsr_extproc.config.compile
from vsr_extproc.config.compile import load_policy
load_policy("deploy/examples/rules-only.yaml")
heavy = sorted(m for m in ("torch", "transformers", "PIL", "cv2", "grpc", "lingua")
               if m in sys.modules)
print(",".join(heavy))
"""


def test_rules_and_deterministic_signals_import_no_model_runtime() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""
