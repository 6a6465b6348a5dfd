"""Settings every test tier shares."""

from __future__ import annotations

import os

# the same as the command line sets: OpenMP threads wait passively, so a busy 2-core
# machine does not spend its time spinning (set before torch is imported anywhere)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
