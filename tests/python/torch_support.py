"""What the PyTorch test modules share: the skip marks and seeded tensors.
Imported after pytest.importorskip("torch")."""

import pytest
import torch

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
needs_op = pytest.mark.skipif(not hasattr(torch.library, "custom_op"),
                              reason="PyTorch < 2.4: no torch.library.custom_op")
TORCH_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def randn(*shape, dtype="fp32", device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(device=device, dtype=TORCH_DTYPES[dtype])


def f64(t):
    return t.detach().to("cpu", torch.float64).numpy()
