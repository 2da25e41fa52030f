"""PyTorch tensors: on the CPU against the float64 reference (and a
torch.compile'd module), and on CUDA against scaled_dot_product_attention
on the caller's stream; gradients are in test_torch_gradients.py. Skipped
where torch (or a CUDA device) is missing."""

import shutil

import pytest

torch = pytest.importorskip("torch")
import fmhajit  # noqa: E402  (after torch: registers torch.ops.fmhajit)
from conftest import assert_close, reference  # noqa: E402
from torch_support import cuda, f64, needs_op, randn  # noqa: E402


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_cpu_tensors(dtype):
    q, k, v = (randn(2, 33, 4, 64, dtype=dtype, seed=s) for s in (1, 2, 3))
    k, v = k[:, :, :2], v[:, :, :2]  # GQA from strided views, no copy
    out, lse = fmhajit.attention(q, k, v, causal=True, return_lse=True)
    assert isinstance(out, torch.Tensor) and out.dtype == q.dtype and out.device == q.device
    ref, ref_lse = reference(f64(q), f64(k), f64(v), causal=True)
    assert_close(f64(out), ref, dtype, lse=f64(lse), ref_lse=ref_lse)


def count_dlpack(monkeypatch):
    """The tensors whose __dlpack__ is called from now on (their shapes)."""
    calls = []
    export = torch.Tensor.__dlpack__

    def counting(self, *args, **kwargs):
        calls.append(tuple(self.shape))
        return export(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "__dlpack__", counting)
    return calls


class Sub(torch.Tensor):
    """A subclass: read through DLPack, as every tensor was before."""


def test_plain_tensors_are_read_without_dlpack(monkeypatch):
    """python/src/TorchTensor.h: plain tensors are read from their
    attributes, with the view DLPack gives (the same plan, the same bits);
    a subclass still goes through DLPack, and its output is a plain tensor."""
    q, k, v = (randn(2, 33, 4, 64, dtype="bf16", seed=s) for s in (1, 2, 3))
    k, v = k[:, :, :2], v[:, :, :2]  # strided views
    calls = count_dlpack(monkeypatch)
    fmhajit.clear_plans()
    out, lse = fmhajit.attention(q, k, v, causal=True, return_lse=True)
    assert calls == []
    sub_out, sub_lse = fmhajit.attention(*(x.as_subclass(Sub) for x in (q, k, v)),
                                         causal=True, return_lse=True)
    # (a subclass's __dlpack__ may come back through __torch_function__)
    assert set(calls) == {tuple(x.shape) for x in (q, k, v)}
    assert type(sub_out) is torch.Tensor and type(sub_lse) is torch.Tensor
    assert fmhajit.cached_plans() == 1
    assert torch.equal(out, sub_out) and torch.equal(lse, sub_lse)


def test_given_outputs_are_written_as_by_the_general_path():
    """Plain tensors take a shorter path in fmhajit.attention; with out= and
    lse= given it writes them and returns them, as the general path does
    for a subclass."""
    q, k, v = (randn(1, 20, 4, 64, dtype="fp16", seed=s) for s in (4, 5, 6))
    out, lse = torch.empty(1, 20, 4, 64, dtype=torch.float32), torch.empty(1, 4, 20)
    got = fmhajit.attention(q, k, v, causal=True, out=out, lse=lse, return_lse=True)
    assert got[0] is out and got[1] is lse
    sub = fmhajit.attention(*(x.as_subclass(Sub) for x in (q, k, v)), causal=True,
                            out=torch.empty_like(out), return_lse=True)
    assert torch.equal(out, sub[0]) and torch.equal(lse, sub[1])
    assert torch.equal(fmhajit.attention(q, k, v, causal=True, out=torch.empty_like(out)), out)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
@pytest.mark.parametrize("dv", [64, 32])
def test_made_outputs_are_what_new_empty_makes(device, dv):
    """The compiled half makes a plain tensor's out (python/src/Calls.h):
    a packed plain tensor of q's dtype and device, whatever q's strides,
    by empty_like where dv is q's head_dim and new_empty where it is not,
    written as the general path writes the one it makes."""
    q = randn(2, 9, 4, 64, dtype="bf16", device=device, seed=1)
    q = q.as_strided(q.shape, (4 * 64, 2 * 4 * 64, 64, 1))  # seq and batch swapped
    k = randn(2, 13, 2, 64, dtype="bf16", device=device, seed=2)
    v = randn(2, 13, 2, dv, dtype="bf16", device=device, seed=3)
    out = fmhajit.attention(q, k, v)
    assert type(out) is torch.Tensor and out.is_contiguous()
    assert out.shape == (2, 9, 4, dv) and out.dtype == q.dtype and out.device == q.device
    assert out.stride() == torch.empty(out.shape).stride()
    assert not out.requires_grad
    sub = fmhajit.attention(*(x.as_subclass(Sub) for x in (q, k, v)))
    assert torch.equal(out, sub)


def test_made_outputs_keep_no_odd_strides():
    """empty_like(q) copies a dense q's strides, so the compiled half
    passes it no memory_format only where q's own strides, size-1 dims'
    included, are packed ones: an out made from a q with a stride of 999
    on a size-1 dim is packed all the same."""
    q = randn(1, 1, 4, 64, seed=1)
    odd = q.as_strided(q.shape, (999, 7, 64, 1))
    k, v = (randn(1, 9, 4, 64, seed=s) for s in (2, 3))
    for x in (q, odd):
        out = fmhajit.attention(x, k, v)
        assert out.stride() == torch.empty(out.shape).stride() == (256, 256, 64, 1)
        assert torch.equal(out, fmhajit.attention(q, k, v))


def test_common_call_takes_plain_tensors_only():
    """The C++ entry of the common call (python/src/AttentionCall.h) runs
    plain tensors that want no gradient and answers NotImplemented for the
    rest, which the Python path runs (the op, a subclass's DLPack)."""
    from fmhajit import _fmhajit
    q, k, v = (randn(1, 6, 2, 64, seed=s) for s in (1, 2, 3))

    def entry(q, k, v, out=None):
        return _fmhajit.attention_call(q, k, v, False, None, None, None, None, False,
                                       None, None, out, None, None, None, None, None,
                                       0.0, None, None, None, None)
    made = entry(q, k, v)
    assert type(made) is torch.Tensor and torch.equal(made, fmhajit._any_attention(
        q, k, v, False, None, None, None, None, False, None, None, None, None, None,
        None, None, None, 0.0, None, 0, None, None, None, None))
    given = torch.empty_like(q)
    assert entry(q, k, v, out=given) is given and torch.equal(given, made)
    assert entry(q.as_subclass(Sub), k, v) is NotImplemented
    assert entry(q, k, v, out=given.as_subclass(Sub)) is NotImplemented
    assert entry(q, k.numpy(), v) is NotImplemented
    assert entry(q, k, v.clone().requires_grad_()) is NotImplemented
    # out's requires_grad is read where it is read (the entry knows only
    # q's, k's and v's): DLPack refuses it, on both paths alike.
    wants_grad = torch.empty_like(q).requires_grad_()
    with pytest.raises(Exception) as common:
        entry(q, k, v, out=wants_grad)
    with pytest.raises(Exception) as python:
        fmhajit._any_attention(q, k, v, False, None, None, None, None, False, None,
                               None, wants_grad, None, None, None, None, None, 0.0,
                               None, 0, None, None, None, None)
    assert (type(common.value), str(common.value)) == \
        (type(python.value), str(python.value))


def test_flag_answer_reads_only_is_compilings_flag():
    """fmhajit._torch.flag_answer: the flag of a function whose body is
    torch.compiler.is_compiling's (PyTorch 2.5 to 2.11: torch.jit's
    is_scripting, then the module's _is_compiling_flag), false for _never,
    and None (call it) for any other body."""
    glue = fmhajit._torch
    scope = {"torch": torch, "_is_compiling_flag": False}
    exec("def is_compiling():\n"
         "    if torch.jit.is_scripting():\n"
         "        return False\n"
         "    else:\n"
         "        return _is_compiling_flag\n"
         "def other():\n"
         "    return _is_compiling_flag or torch.jit.is_scripting() or scope\n",
         scope)
    assert glue.flag_answer(scope["is_compiling"]) == (scope, "_is_compiling_flag")
    assert glue.flag_answer(scope["other"]) is None
    assert glue.flag_answer(glue._never) == (None, None)
    assert glue.flag_answer(lambda: False) is None


@needs_op
def test_torch_exports_flag_takes_the_op_path(monkeypatch):
    """torch.compiler._is_compiling_flag (torch.export sets it) sends even a
    common call of plain tensors to the Python path, whether the C function
    reads the flag (fmhajit._torch.flag_answer) or asks is_compiling."""
    if not hasattr(torch.compiler, "_is_compiling_flag"):
        pytest.skip("this PyTorch has no torch.compiler._is_compiling_flag")
    q, k, v = (randn(1, 6, 2, 64, seed=s) for s in (1, 2, 3))
    calls = []
    monkeypatch.setattr(fmhajit, "_any_attention", lambda *args: calls.append(args))
    assert type(fmhajit.attention(q, k, v)) is torch.Tensor and calls == []
    monkeypatch.setattr(torch.compiler, "_is_compiling_flag", True)
    assert fmhajit.attention(q, k, v) is None and len(calls) == 1


def test_outputs_made_under_a_mode_are_checked():
    """A TorchFunctionMode may hand the compiled half another type for its
    out: that one is read like any array, and refused unless it is what
    was asked for (the kernels write all of it)."""
    from torch.overrides import TorchFunctionMode

    class Made(TorchFunctionMode):
        def __init__(self, shape):
            super().__init__()
            self.shape = shape

        def __torch_function__(self, func, types, args=(), kwargs=None):
            made = func(*args, **(kwargs or {}))
            if func is torch.empty_like:
                made = torch.empty(self.shape, dtype=made.dtype).as_subclass(Sub)
            return made

    q, k, v = (randn(1, 5, 2, 64, seed=s) for s in (1, 2, 3))
    want = fmhajit.attention(q, k, v)
    with Made(q.shape):
        out = fmhajit.attention(q, k, v)
    assert type(out) is Sub and torch.equal(out.as_subclass(torch.Tensor), want)
    with Made((1, 5, 2, 32)), pytest.raises(ValueError, match="out: the tensor torch made"):
        fmhajit.attention(q, k, v)


def test_zero_dim_tensors_get_the_shape_error():
    """A 0-dim q or v gets the shape check's message, as NumPy arrays do
    (q.shape[-1] raised IndexError while Python made the out)."""
    q = randn(1, 4, 2, 64, seed=1)
    with pytest.raises(ValueError, match=r"v: expected \[batch, seqlen, heads, head_dim\]"):
        fmhajit.attention(q, q, torch.tensor(1.0))
    with pytest.raises(ValueError, match=r"q: expected \[batch, seqlen, heads, head_dim\]"):
        fmhajit.attention(torch.tensor(1.0), q, q)


@pytest.mark.parametrize("exchange", [False, True])
def test_eager_paths_with_and_without_the_exchange_api(monkeypatch, exchange):
    """Where torch.Tensor has DLPack's C exchange API (PyTorch 2.11), the
    eager path passes no stream and no workspace allocator and the compiled
    half asks torch (python/src/ExchangeApi.h); without it, it passes them.
    Both branches give the reference's out and lse, made or given, whatever
    this torch has (its tensors are read as it allows)."""
    import fmhajit._torch as glue
    monkeypatch.setattr(glue, "EXCHANGE", exchange)
    q = randn(2, 17, 4, 64, dtype="bf16", seed=1)
    k, v = (randn(2, 23, 2, 64, dtype="bf16", seed=s) for s in (2, 3))
    ref, ref_lse = reference(f64(q), f64(k), f64(v), causal=True)
    out, lse = fmhajit.attention(q, k, v, causal=True, return_lse=True)
    assert type(out) is torch.Tensor and out.dtype == q.dtype
    assert_close(f64(out), ref, "bf16", lse=f64(lse), ref_lse=ref_lse)
    given = torch.full_like(q, float("nan"), dtype=torch.float32)
    assert fmhajit.attention(q, k, v, causal=True, out=given) is given
    assert_close(f64(given), ref, "bf16", out_dtype="fp32")


def test_keywords_change_between_calls():
    """The compiled half reads a keywords tuple once and keeps it while
    calls pass the same one: calls alternating keywords each get theirs."""
    q, k, v = (randn(1, 12, 2, 64, seed=s) for s in (4, 5, 6))
    ref, _ = reference(f64(q), f64(k), f64(v), causal=False)
    ref_causal, _ = reference(f64(q), f64(k), f64(v), causal=True)
    for _ in range(2):
        for causal, want in ((False, ref), (True, ref_causal)):
            assert_close(f64(fmhajit.attention(q, k, v, causal=causal)), want, "fp32")
            assert_close(f64(fmhajit.attention(q, k, v, causal=causal, threads=1)), want,
                         "fp32")


def test_size_one_dims_read_as_dlpack_gives_them():
    """A dim of size 1 reads stride 1, as torch's DLPack export gives it:
    its stride is never stepped over, so any stride there is one problem
    (q's heads are strided, so that its layout holds every stride)."""
    q = randn(1, 1, 4, 128, seed=1)[..., :64]
    odd = q.as_strided(q.shape, (999, 7, 128, 1))
    k, v = (randn(1, 9, 4, 64, seed=s) for s in (2, 3))
    fmhajit.clear_plans()
    out = fmhajit.attention(q, k, v)
    assert torch.equal(fmhajit.attention(odd, k, v), out)
    assert fmhajit.cached_plans() == 1


def test_tensors_dlpack_refuses_keep_its_messages(monkeypatch):
    """What the direct reads leave to DLPack fails as it did: a dtype
    fmhajit does not read, and (in plan(), which does not detach) a tensor
    that requires grad. Through DLPack's exchange API (PyTorch 2.11) the
    float64 tensors are read by the API, with DLPack's dtype name in the
    same message; the tensor that requires grad still goes to DLPack."""
    calls = count_dlpack(monkeypatch)
    wide = torch.zeros(1, 4, 2, 64, dtype=torch.float64)
    with pytest.raises(TypeError, match="q: dtype float64 is not supported"):
        fmhajit.attention(wide, wide, wide)
    grad = randn(1, 4, 2, 64, seed=1).requires_grad_()
    # RuntimeError from PyTorch 1.13, BufferError (ValueError here) later.
    with pytest.raises((RuntimeError, ValueError), match="gradient"):
        fmhajit.plan(grad, grad.detach(), grad.detach())
    # q, k and v of float64 (refused before an out is made); the grad tensor
    exchange = "__dlpack_c_exchange_api__" in vars(torch.Tensor)
    assert len(calls) == (0 if exchange else 3) + 1


class Block(torch.nn.Module):
    def forward(self, x):
        q, k, v = x, x * 0.5, x + 1
        return fmhajit.attention(q, k, v, causal=True) * 2


@needs_op
def test_compile_keeps_the_op_cpu():
    x = randn(2, 16, 2, 64, seed=3)
    compiled = torch.compile(Block(), backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(x), Block()(x))


@cuda
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("sq,sk,hq,hkv,causal", [(128, 128, 8, 8, False), (100, 300, 8, 2, True),
                                                 (1, 4096, 8, 1, False)])
def test_cuda_against_sdpa(dtype, sq, sk, hq, hkv, causal):
    q = randn(2, sq, hq, 128, dtype=dtype, device="cuda", seed=1)
    k, v = (randn(2, sk, hkv, 128, dtype=dtype, device="cuda", seed=s) for s in (2, 3))
    out = fmhajit.attention(q, k, v, causal=causal)
    assert out.device == q.device and out.dtype == q.dtype
    # SDPA's is_causal is top-left: give the bottom-right mask explicitly.
    mask = None
    if causal:
        mask = torch.ones(sq, sk, dtype=torch.bool, device="cuda").tril(sk - sq)
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(x.transpose(1, 2).double() for x in (q, k, v)), attn_mask=mask,
        enable_gqa=hq != hkv).transpose(1, 2)
    assert_close(f64(out), f64(ref), dtype)


@cuda
def test_cuda_current_stream():
    """fmhajit launches on torch's current stream: work queued before it on
    that stream is seen, and the output is ready after the stream's sync."""
    s = torch.cuda.Stream()
    q = randn(1, 256, 4, 64, dtype="bf16", device="cuda", seed=1)
    s.wait_stream(torch.cuda.current_stream())  # q is made on the default stream
    with torch.cuda.stream(s):
        k = q * 2  # queued on s, read by fmhajit on s
        out = fmhajit.attention(q, k, k)
    s.synchronize()
    ref = torch.nn.functional.scaled_dot_product_attention(
        *(x.transpose(1, 2).double() for x in (q, k, k))).transpose(1, 2)
    assert_close(f64(out), f64(ref), "bf16")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_varlen_alibi_tensors(device):
    """cu_seqlens and slopes as tensors: host copies for the plan, device
    copies for a CUDA launch."""
    cu_q, cu_k = [0, 37, 100, 101], [0, 50, 180, 300]
    q = randn(101, 8, 64, dtype="fp16", device=device, seed=1)
    k, v = (randn(300, 2, 64, dtype="fp16", device=device, seed=s) for s in (2, 3))
    slopes = torch.tensor([2.0 ** -i for i in range(1, 9)], device=device)
    i32 = dict(dtype=torch.int32, device=device)
    out = fmhajit.attention(q, k, v, cu_seqlens_q=torch.tensor(cu_q, **i32),
                            cu_seqlens_k=torch.tensor(cu_k, **i32), alibi_slopes=slopes,
                            causal=True)
    ref = reference(f64(q), f64(k), f64(v), causal=True, slopes=f64(slopes), cu_q=cu_q,
                    cu_k=cu_k)[0]
    assert_close(f64(out), ref, "fp16")


# Inductor compiles Triton launchers with the machine's C compiler.
HAS_CC = any(shutil.which(c) for c in ("cc", "gcc", "clang"))


@cuda
@needs_op
@pytest.mark.parametrize("backend", [
    "aot_eager", pytest.param("inductor", marks=pytest.mark.skipif(not HAS_CC, reason="no C compiler"))])
def test_cuda_compile(backend):
    x = randn(2, 128, 4, 64, dtype="bf16", device="cuda", seed=2)
    compiled = torch.compile(Block(), backend=backend, fullgraph=True)
    torch.testing.assert_close(compiled(x), Block()(x))


def key_padding_bias(batch, sk, device, seed=0):
    """[batch, 1, 1, sk] float32: 0 on each sequence's keys, -inf after."""
    lengths = torch.randint(sk // 2, sk, (batch,), generator=torch.Generator().manual_seed(seed))
    pad = torch.arange(sk)[None] >= lengths[:, None]
    bias = torch.zeros(batch, sk).masked_fill(pad, float("-inf"))
    return bias.reshape(batch, 1, 1, sk).to(device)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=cuda)])
def test_sinks_and_bias_tensors(dtype, device):
    """sinks= and attn_bias= as tensors on q's device: a key-padding bias
    expanded to the full shape (strides of 0, no copy) plus a relative
    bias shared over the batch, with GQA and causal."""
    q = randn(2, 40, 4, 64, dtype=dtype, device=device, seed=1)
    k, v = (randn(2, 52, 2, 64, dtype=dtype, device=device, seed=s) for s in (2, 3))
    bias = key_padding_bias(2, 52, device).expand(2, 4, 40, 52)
    bias = bias + randn(1, 4, 40, 52, device=device, seed=4)  # a new [2, 4, 40, 52]
    sinks = torch.tensor([float("-inf"), 0.5, 2.0, -1.0], device=device)
    out, lse = fmhajit.attention(q, k, v, causal=True, sinks=sinks, attn_bias=bias,
                                 return_lse=True)
    assert isinstance(out, torch.Tensor) and out.device == q.device
    ref, ref_lse = reference(f64(q), f64(k), f64(v), causal=True, sinks=f64(sinks),
                             bias=f64(bias))
    assert_close(f64(out), ref, dtype, lse=f64(lse), ref_lse=ref_lse)
    padding = key_padding_bias(2, 52, device).expand(2, 4, 40, 52)  # strides (52, 0, 0, 1)
    out = fmhajit.attention(q, k, v, sinks=[1.0, 1.0, 1.0, 1.0], attn_bias=padding)
    ref = reference(f64(q), f64(k), f64(v), sinks=[1.0] * 4, bias=f64(padding))[0]
    assert_close(f64(out), ref, dtype)


def test_bias_tensor_refusals():
    q = randn(1, 16, 2, 64, seed=1)
    with pytest.raises(TypeError, match="attn_bias: dtype float16 is not supported"):
        fmhajit.attention(q, q, q, attn_bias=torch.zeros(1, 1, 16, 16, dtype=torch.float16))
    with pytest.raises(ValueError, match=r"attn_bias: shape \(3, 16, 16\) does not broadcast"):
        fmhajit.attention(q, q, q, attn_bias=torch.zeros(3, 16, 16))


def test_no_grad_runs_with_sinks_and_bias():
    """Inputs that require grad run under torch.no_grad (inference)."""
    q = randn(1, 16, 2, 64, seed=1).requires_grad_()
    sinks = torch.zeros(2, requires_grad=True)
    with torch.no_grad():
        out = fmhajit.attention(q, q, q, sinks=sinks, attn_bias=torch.zeros(16))
    ref = reference(*(f64(q),) * 3, sinks=[0.0, 0.0])[0]
    assert_close(f64(out), ref, "fp32")


@needs_op
def test_compile_with_sinks_and_bias_cpu():
    """The op's schema and fake implementation take sinks and attn_bias."""
    def block(x, sinks, bias):
        return fmhajit.attention(x, x * 0.5, x + 1, causal=True, sinks=sinks, attn_bias=bias)

    x = randn(2, 16, 2, 64, seed=3)
    sinks, bias = torch.tensor([0.5, -1.0]), randn(1, 1, 16, 16, seed=4)
    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(x, sinks, bias), block(x, sinks, bias))


@needs_op
def test_compile_traces_a_first_call_with_fmhajit_imported_before_torch():
    # A fresh process, fmhajit first: the stand-in Dynamo traces must be
    # registered when torch.compile loads Dynamo, not at a first call that
    # the trace never makes (fmhajit/_after_import.py).
    import subprocess
    import sys
    program = (
        "import fmhajit, torch\n"
        "x = torch.randn(2, 16, 2, 64)\n"
        "f = torch.compile(lambda x: fmhajit.attention(x, x, x) * 2, backend='aot_eager',"
        " fullgraph=True)\n"
        "torch.testing.assert_close(f(x), fmhajit.attention(x, x, x) * 2)\n")
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
