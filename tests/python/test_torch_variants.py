"""Variants through PyTorch tensors: variant= and variant_tensors= on the
CPU and on CUDA, their refusals, and gradients refused through the op.
test_variants.py checks the variants themselves on NumPy arrays."""

import pathlib

import pytest

torch = pytest.importorskip("torch")
import fmhajit  # noqa: E402  (after torch: registers torch.ops.fmhajit)
from conftest import Variant, assert_close, reference  # noqa: E402
from torch_support import cuda, f64, needs_op, randn  # noqa: E402

VARIANTS = pathlib.Path(__file__).resolve().parents[2] / "examples" / "variants"


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_variant_tensors(device):
    """variant= with a variant tensor on q's device (test_variants.py checks
    the variants themselves on NumPy arrays): relative_position_table.cpp
    adds row h's entry for q - k (clamped to 128) to each score."""
    q, k, v = (randn(1, 150, 2, 64, dtype="fp16", device=device, seed=s) for s in (1, 2, 3))
    table = randn(2, 257, device=device, seed=4)
    out = fmhajit.attention(q, k, v, variant=VARIANTS / "relative_position_table.cpp",
                            variant_tensors=[table])
    assert isinstance(out, torch.Tensor) and out.device == q.device
    rows = f64(table)
    variant = Variant(score_mod=lambda s, b, h, i, j: s + rows[h, (i - j).clip(-128, 128) + 128])
    ref = reference(f64(q), f64(k), f64(v), variant=variant)[0]
    assert_close(f64(out), ref, "fp16")


def test_variant_tensor_refusals_name_the_tensor():
    q = randn(1, 16, 2, 64, seed=1)
    variant = VARIANTS / "relative_position_table.cpp"
    with pytest.raises(TypeError, match=r"variant_tensors\[0\]: dtype float16 is not supported"):
        fmhajit.attention(q, q, q, variant=variant,
                          variant_tensors=[torch.zeros(257, dtype=torch.float16)])
    with pytest.raises(ValueError, match=r"variant_tensors\[0\]: must be contiguous"):
        fmhajit.attention(q, q, q, variant=variant, variant_tensors=[torch.zeros(2, 257).t()])


def test_no_grad_runs_with_a_variant_tensor():
    """A learned table that requires grad runs under torch.no_grad."""
    q = randn(1, 16, 2, 64, seed=1)
    table = torch.zeros(2, 257, requires_grad=True)
    with torch.no_grad():
        out = fmhajit.attention(q, q, q, variant=VARIANTS / "relative_position_table.cpp",
                                variant_tensors=[table])
    assert_close(f64(out), reference(*(f64(q),) * 3)[0], "fp32")


@needs_op
@pytest.mark.parametrize("wanted", ["q", "variant_tensors"])
def test_gradients_with_a_variant_are_refused(wanted):
    """The backward applies no variant: asking for any gradient through a
    call with one (of q, or of the variant's table) says so."""
    q = randn(1, 16, 2, 64, seed=1).requires_grad_(wanted == "q")
    table = torch.zeros(2, 257, requires_grad=wanted == "variant_tensors")
    out = fmhajit.attention(q, q, q, variant=VARIANTS / "relative_position_table.cpp",
                            variant_tensors=[table])
    assert out.requires_grad
    with pytest.raises(NotImplementedError, match="backward does not support variant yet"):
        out.sum().backward()


@pytest.mark.skipif(hasattr(torch.library, "custom_op"), reason="PyTorch >= 2.4 has the op")
def test_old_torch_refuses_gradients_of_variant_tensors():
    q = randn(1, 8, 2, 64, seed=1)
    table = torch.zeros(2, 257, requires_grad=True)
    with pytest.raises(NotImplementedError, match="need PyTorch 2.4 or newer"):
        fmhajit.attention(q, q, q, variant=VARIANTS / "relative_position_table.cpp",
                          variant_tensors=[table])


@needs_op
def test_compile_with_a_variant_cpu():
    """The op's schema takes the variant's source and its tensors (one
    optional tensor per slot)."""
    source = (VARIANTS / "relative_position_table.cpp").read_text()

    def block(x, table):
        return fmhajit.attention(x, x * 0.5, x + 1, causal=True, variant=source,
                                 variant_tensors=[table])

    x, table = randn(2, 16, 2, 64, seed=3), randn(2, 257, seed=4)
    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(x, table), block(x, table))
