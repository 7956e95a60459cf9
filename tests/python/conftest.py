# Shared setup for the torch op tests: w4jit loaded, torch's intra-op
# thread count set explicitly (Debian's torch starts with 1 here).
import pytest
import torch

import w4jit  # noqa: F401  (loads libw4jit_torch.so)

THREADS = 2


@pytest.fixture(autouse=True)
def _threads_and_seed():
    torch.set_num_threads(THREADS)
    torch.manual_seed(1234)
    yield
