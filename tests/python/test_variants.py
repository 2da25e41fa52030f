"""fmhajit.attention's variant= (C++ score_mod/mask_mod, docs/variants.md)
and variant_tensors= on NumPy arrays: the examples of examples/variants/
against the float64 reference of conftest.py, whose Variant is their math
written again here (never read from their source), and the refusals."""

import pathlib
import re

import numpy as np
import pytest

import fmhajit
from conftest import Variant, assert_close, poisoned, random_qkv, reference

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "variants"

# Each example's math (the sources' comments say what they compute).
ALIBI = Variant(score_mod=lambda s, b, h, q, k: s - 2.0 ** -(h + 1.0) * (q - k),
                mask_mod=lambda b, h, q, k: k <= q)
SOFTCAP_TANH = Variant(score_mod=lambda s, b, h, q, k: 30.0 * np.tanh(s / 30.0))
DOCUMENT_MASK = Variant(mask_mod=lambda b, h, q, k: (q // 2048 == k // 2048) & (k <= q))


def relative_position_table(table):
    """relative_position_table.cpp's score_mod over a [rows, 257] table:
    row h's entry for q - k clamped to [-128, 128]; a head past the last
    row reads 0 (an index outside the tensor)."""
    def score_mod(s, b, h, q, k):
        rows = table.shape[0]
        entry = table[np.minimum(h, rows - 1), np.clip(q - k, -128, 128) + 128]
        return s + np.where(h < rows, entry, 0.0)
    return Variant(score_mod=score_mod)


def assert_differs(out, ref_without, dtype):
    """The variant changes the answer far beyond the tolerance, so that a
    reference without it (or a kernel that ignored it) fails the test."""
    err = np.linalg.norm(out.astype(np.float64) - ref_without) / np.linalg.norm(ref_without)
    assert err > 100 * fmhajit.tolerance(dtype)["rel_l2"], f"the variant changed little: {err:.3g}"


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_alibi_example_gqa(rng, dtype):
    """score_mod and mask_mod together, per head, given as a path."""
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 70, 4, 64), (2, 70, 2, 64), dtype=dtype)
    out, lse = fmhajit.attention(q, k, v, variant=EXAMPLES / "alibi.cpp", return_lse=True,
                                 out=poisoned((2, 70, 4, 64), dtype), threads=2)
    ref, ref_lse = reference(q64, k64, v64, variant=ALIBI)
    assert_close(out, ref, dtype, lse=lse, ref_lse=ref_lse)
    if dtype == "fp32":
        assert_differs(out, reference(q64, k64, v64, causal=True)[0], dtype)


def test_softcap_tanh_example_with_causal(rng):
    """A score_mod that is not additive, given as source text, ANDed with
    the spec's own (bottom-right) causal mask; large scores so that the
    cap matters."""
    source = (EXAMPLES / "softcap_tanh.cpp").read_text()
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (1, 40, 2, 64), (1, 90, 2, 64))
    out, lse = fmhajit.attention(q, k, v, causal=True, scale=0.5, variant=source,
                                 return_lse=True)
    ref, ref_lse = reference(q64, k64, v64, causal=True, scale=0.5, variant=SOFTCAP_TANH)
    assert_close(out, ref, "fp32", lse=lse, ref_lse=ref_lse)
    assert_differs(out, reference(q64, k64, v64, causal=True, scale=0.5)[0], "fp32")


def test_document_mask_example(rng):
    """A mask_mod across a document boundary (2048 tokens): the queries of
    the second document see only its keys (the plan's block map skips the
    first document's)."""
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (1, 2100, 1, 64), (1, 2100, 1, 64))
    out = fmhajit.attention(q, k, v, variant=EXAMPLES / "document_mask.cpp", threads=2)
    ref = reference(q64, k64, v64, variant=DOCUMENT_MASK)[0]
    assert_close(out, ref, "fp32")
    assert_differs(out[:, 2048:], reference(q64, k64, v64, causal=True)[0][:, 2048:], "fp32")


def test_relative_position_table_example(rng):
    """A variant tensor: the table has rows for two of three heads (the
    third reads 0), distances past 128 share the rows' ends, and a new
    table runs on the same plan."""
    variant = EXAMPLES / "relative_position_table.cpp"
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 300, 3, 64), (2, 300, 3, 64))
    table = rng.standard_normal((2, 257)).astype(np.float32)
    out = fmhajit.attention(q, k, v, variant=variant, variant_tensors=[table])
    assert_close(out, reference(q64, k64, v64, variant=relative_position_table(table))[0], "fp32")
    assert_differs(out, reference(q64, k64, v64)[0], "fp32")
    kept = fmhajit.cached_plans()
    table = 3 * rng.standard_normal((2, 257)).astype(np.float32)
    out = fmhajit.attention(q, k, v, variant=variant, variant_tensors=(table,))
    assert_close(out, reference(q64, k64, v64, variant=relative_position_table(table))[0], "fp32")
    assert fmhajit.cached_plans() == kept


def test_variant_tensor_in_split_kv_decode(rng):
    """A decode shape runs split-KV: every part reads the table."""
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (1, 1, 4, 128), (1, 3000, 1, 128),
                                            dtype="bf16")
    variant = EXAMPLES / "relative_position_table.cpp"
    table = rng.standard_normal((4, 257)).astype(np.float32)
    steps = fmhajit.plan(q, k, v, variant=variant, threads=8)["steps"]
    assert [s["role"] for s in steps] == ["split-KV forward", "combine"]
    out, lse = fmhajit.attention(q, k, v, variant=variant, variant_tensors=[table], threads=8,
                                 return_lse=True, out=poisoned((1, 1, 4, 128), "bf16"))
    ref, ref_lse = reference(q64, k64, v64, variant=relative_position_table(table))
    assert_close(out, ref, "bf16", lse=lse, ref_lse=ref_lse)


def test_varlen_positions_count_from_each_sequence(rng):
    """Under varlen, b is the sequence and q, k count from its start."""
    cu_q, cu_k = [0, 30, 31, 75], [0, 40, 100, 150]
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (75, 4, 64), (150, 2, 64), dtype="fp16")
    out = fmhajit.attention(q, k, v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                            variant=EXAMPLES / "alibi.cpp")
    ref = reference(q64, k64, v64, cu_q=cu_q, cu_k=cu_k, variant=ALIBI)[0]
    assert_close(out, ref, "fp16")


def test_plans_are_kept_apart_by_variant(rng):
    """Each variant gets its own plan and kernel (named by the source's
    hash); the same source as text or as a path shares one."""
    (q, k, v), _ = random_qkv(rng, (1, 24, 2, 64), (1, 24, 2, 64))
    path = EXAMPLES / "alibi.cpp"
    fmhajit.clear_plans()
    plain = fmhajit.attention(q, k, v)
    alibi = fmhajit.attention(q, k, v, variant=path)
    softcap = fmhajit.attention(q, k, v, variant=EXAMPLES / "softcap_tanh.cpp")
    assert fmhajit.cached_plans() == 3
    assert np.array_equal(fmhajit.attention(q, k, v, variant=path.read_text()), alibi)
    assert fmhajit.cached_plans() == 3
    assert not np.array_equal(plain, alibi) and not np.array_equal(alibi, softcap)
    kernels = {str(p): fmhajit.plan(q, k, v, variant=p)["steps"][0]["kernel"]
               for p in (path, EXAMPLES / "softcap_tanh.cpp")}
    assert all("_var" in name for name in kernels.values())
    assert len(set(kernels.values())) == 2
    assert "_var" not in fmhajit.plan(q, k, v)["steps"][0]["kernel"]


def test_plan_says_how_many_tensors_a_run_takes(rng):
    (q, k, v), _ = random_qkv(rng, (1, 8, 2, 64), (1, 8, 2, 64))
    table = fmhajit.plan(q, k, v, variant=EXAMPLES / "relative_position_table.cpp")
    assert table["variant_tensors"] == 1
    assert fmhajit.plan(q, k, v, variant=EXAMPLES / "alibi.cpp")["variant_tensors"] == 0
    assert fmhajit.plan(q, k, v)["variant_tensors"] == 0


SCORE_MOD_TYPO = """float score_mod(float score, int b, int h, int q, int k) {
  return score + ;
}
"""


def test_clang_errors_name_the_line(tmp_path):
    """clang's message as file:line:col: variant.cpp for a str, the path
    for a file."""
    (q, k, v), _ = random_qkv(np.random.default_rng(0), (1, 8, 1, 64), (1, 8, 1, 64))
    with pytest.raises(ValueError, match=r"variant\.cpp:2:18: error: expected expression"):
        fmhajit.attention(q, k, v, variant=SCORE_MOD_TYPO)
    path = tmp_path / "typo.cpp"
    path.write_text(SCORE_MOD_TYPO)
    with pytest.raises(ValueError, match=re.escape(str(path)) + r":2:18: error"):
        fmhajit.attention(q, k, v, variant=path)
    with pytest.raises(ValueError, match=r"variant\.cpp:2:18: error"):
        fmhajit.plan(q, k, v, variant=SCORE_MOD_TYPO)


def test_variant_refusals():
    (q, k, v), _ = random_qkv(np.random.default_rng(0), (1, 8, 1, 64), (1, 8, 1, 64))
    with pytest.raises(TypeError, match="variant: expected C\\+\\+ source as a str"):
        fmhajit.attention(q, k, v, variant=b"float score_mod(float s, int b, int h, int q, int k);")
    with pytest.raises(TypeError, match="got int"):
        fmhajit.attention(q, k, v, variant=1)
    with pytest.raises(ValueError, match=r"looks like a file name.*pathlib\.Path"):
        fmhajit.attention(q, k, v, variant="examples/variants/alibi.cpp")
    with pytest.raises(ValueError, match="the source is empty"):
        fmhajit.attention(q, k, v, variant=" \n")
    with pytest.raises(ValueError, match="score_mod"):  # neither function defined
        fmhajit.attention(q, k, v, variant="int twice(int x) { return 2 * x; }\n")


def test_variant_tensor_refusals():
    """The count is run()'s to check (Plan::variantTensorCount()), with its
    messages; the rest is the module's, naming the tensor."""
    (q, k, v), _ = random_qkv(np.random.default_rng(0), (1, 8, 1, 64), (1, 8, 1, 64))
    variant = EXAMPLES / "relative_position_table.cpp"
    table = np.zeros(257, np.float32)
    with pytest.raises(ValueError, match="the variant reads 1 run-time tensors .* gives 0"):
        fmhajit.attention(q, k, v, variant=variant)
    with pytest.raises(ValueError, match="the variant reads 1 run-time tensors .* gives 2"):
        fmhajit.attention(q, k, v, variant=variant, variant_tensors=[table, table])
    with pytest.raises(ValueError, match="5 given; a variant reads at most 4"):
        fmhajit.attention(q, k, v, variant=variant, variant_tensors=[table] * 5)
    with pytest.raises(TypeError, match=r"variant_tensors\[0\]: dtype float64 is not supported"):
        fmhajit.attention(q, k, v, variant=variant, variant_tensors=[table.astype(np.float64)])
    with pytest.raises(ValueError, match=r"variant_tensors\[0\]: must be contiguous"):
        fmhajit.attention(q, k, v, variant=variant,
                          variant_tensors=[np.zeros((2, 257), np.float32)[:, ::2]])
    with pytest.raises(ValueError, match="needs data and a length of at least 1"):
        fmhajit.attention(q, k, v, variant=variant, variant_tensors=[table[:0]])
    with pytest.raises(TypeError, match="expected a list or tuple .* got ndarray"):
        fmhajit.attention(q, k, v, variant=variant, variant_tensors=table)
    with pytest.raises(ValueError, match="given without a variant"):
        fmhajit.attention(q, k, v, variant_tensors=[table])
    with pytest.raises(ValueError, match="the variant reads 0 run-time tensors .* gives 1"):
        fmhajit.attention(q, k, v, variant=EXAMPLES / "alibi.cpp", variant_tensors=[table])
