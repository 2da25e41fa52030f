"""Arrays read through DLPack's C exchange API (python/src/ExchangeApi.h),
with the tests' producer (producer/ExchangeProducer.cpp, built beside the
package as fmhajit_test_producer): an array type over NumPy memory that
defines __dlpack_c_exchange_api__ itself, as PyTorch 2.11's torch.Tensor
does. Results against the float64 reference; which path read each array
(the producer counts its calls); the messages, which must be those of
arrays read through __dlpack__; and a CUDA call's stream."""

import numpy as np
import pytest

import fmhajit
import fmhajit_test_producer as producer
from conftest import assert_close, poisoned, random_qkv, reference
from dlpack_producer import Capsule

Q = np.zeros((1, 8, 2, 64), np.float32)
DL_CUDA, DL_OPENCL = 2, 4


@pytest.fixture(autouse=True)
def fresh_counts():
    producer.reset()
    yield
    producer.reset()


class Sub(producer.Array):
    """A subclass inherits the API but must not be read through it."""


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_arrays_are_read_through_the_api(rng, dtype):
    (q, k, v), (q64, k64, v64) = random_qkv(rng, (2, 37, 4, 64), (2, 45, 2, 64), dtype=dtype)
    out = producer.Array(poisoned(q.shape, dtype))
    got, lse = fmhajit.attention(producer.Array(q), producer.Array(k), producer.Array(v),
                                 causal=True, out=out, return_lse=True)
    assert got is out
    calls = producer.calls()
    # q, k, v and out through the API; NumPy's kind asks out's dtype through
    # __dlpack__ once (fmhajit/_arrays.py); the host has no stream.
    assert (calls["read"], calls["dlpack"], calls["streams"]) == (4, 1, [])
    ref, ref_lse = reference(q64, k64, v64, causal=True)
    assert_close(np.asarray(out), ref, dtype, lse=lse, ref_lse=ref_lse)


def test_strided_views_and_unit_dims(rng):
    """Any strides with a contiguous last dim, as every array; a dim of size
    1 reads stride 1 (as torch's DLPack export gives it), so an odd stride
    there is the same problem and plan."""
    (wide, k, v), (wide64, k64, v64) = random_qkv(rng, (1, 1, 4, 128), (1, 20, 4, 64))
    q, q64 = wide[..., :64], wide64[..., :64]  # heads strided: not packed
    odd = np.lib.stride_tricks.as_strided(q, q.shape, (999 * 4, 7 * 4, 128 * 4, 4))
    k2, v2 = k[:, :, ::2], v[:, :, ::2]  # GQA from strided views, no copy
    fmhajit.clear_plans()
    want = fmhajit.attention(producer.Array(q), producer.Array(k2), producer.Array(v2))
    got = fmhajit.attention(producer.Array(odd), producer.Array(k2), producer.Array(v2))
    assert fmhajit.cached_plans() == 1 and np.array_equal(got, want)
    assert producer.calls()["read"] == 6
    assert_close(got, reference(q64, k64[:, :, ::2], v64[:, :, ::2])[0], "fp32")


def test_subclasses_and_refused_reads_take_dlpack(rng):
    """A subclass inherits the API but is read through __dlpack__, as a
    torch.Tensor subclass is; an array whose read fails is too, with the
    stream -1 (the call runs on its library's stream), and no error left."""
    (q, k, v), _ = random_qkv(rng, (1, 9, 2, 64), (1, 11, 2, 64))
    want = fmhajit.attention(q, k, v)
    got = fmhajit.attention(Sub(q), Sub(k), Sub(v))
    calls = producer.calls()
    assert (calls["read"], calls["dlpack"]) == (0, 4) and np.array_equal(got, want)
    producer.reset()
    producer.fail("read")
    got = fmhajit.attention(producer.Array(q), producer.Array(k), producer.Array(v))
    calls = producer.calls()
    assert (calls["read"], calls["dlpack"]) == (3, 2) and np.array_equal(got, want)
    assert calls["dlpack_streams"] == [None, -1]  # NumPy's kind, then q


def capsule_of(array):
    return Capsule(np.ascontiguousarray(array) if array.strides[-1] > 0 else array).capsule


@pytest.mark.parametrize("make,error,message", [
    (lambda: Q.astype(np.float64), TypeError, "q: dtype float64 is not supported"),
    (lambda: Q[None], TypeError, "q: expected at most 4 dims; got 5"),
    (lambda: np.zeros((1, 8, 2, 128), np.float32)[..., ::2], ValueError,
     r"q: the last dim \(head_dim\) must be contiguous, stride 1; got stride 2"),
    (lambda: Q[:, ::-1], ValueError, "q: negative strides are not supported"),
    (lambda: Q[:, :0], ValueError, "q: every dim must be >= 1"),
])
def test_messages_are_those_of_dlpack(make, error, message):
    """What the API reads and fmhajit refuses gets the message an array
    read through DLPack gets."""
    array = make()
    with pytest.raises(error, match=message) as through_api:
        fmhajit.attention(producer.Array(array), Q, Q, out=np.zeros_like(Q))
    assert producer.calls()["read"] == 1
    strides = [s // array.itemsize for s in array.strides]
    with pytest.raises(error) as through_dlpack:
        fmhajit.attention(Capsule(array, strides=strides).capsule, Q, Q, out=np.zeros_like(Q))
    assert str(through_api.value) == str(through_dlpack.value)


def test_devices_and_overlaps():
    with pytest.raises(ValueError, match="q: memory on DLPack device type 4 is not supported"):
        fmhajit.attention(producer.Array(Q, DL_OPENCL), Q, Q, out=np.zeros_like(Q))
    with pytest.raises(ValueError, match="k is on cpu but q is on cuda:0"):
        fmhajit.attention(producer.Array(Q, DL_CUDA), producer.Array(Q), Q,
                          out=np.zeros_like(Q))
    q = np.ones_like(Q)
    with pytest.raises(ValueError, match="out overlaps q in memory"):
        fmhajit.attention(producer.Array(q), Q, Q, out=producer.Array(q))


# The compiled half called as the Python half calls it for a plain tensor of
# PyTorch 2.11 (python/src/Calls.h): no stream named, out given. The kernel
# named does not exist, so the call ends at planning, before a launch could
# read the producer's "CUDA" arrays (host memory) on a machine with a GPU.
def cuda_call(stream, export_stream):
    arrays = [producer.Array(np.zeros_like(Q), DL_CUDA) for _ in range(4)]
    keywords = ("none", -1, -1, 0.0, 0.0, False, 1, "", "no_such_kernel", "",
                stream, export_stream)
    with pytest.raises((ValueError, RuntimeError)) as e:
        fmhajit._fmhajit.attention(*arrays[:3], (arrays[3],) + (None,) * 9, keywords, None,
                                   None)
    return e.value


def test_a_cuda_call_takes_the_producers_stream():
    """No stream named: the producer's current work stream of q's device is
    asked once, and every array is read through the API (export stream
    -1); a stream named is used as it is, and one asking producers to order
    their work before it sends CUDA arrays through __dlpack__ with it."""
    cuda_call(None, None)
    calls = producer.calls()
    assert (calls["streams"], calls["read"], calls["dlpack"]) == ([(DL_CUDA, 0)], 4, 0)
    producer.reset()
    cuda_call(7, -1)
    calls = producer.calls()
    assert (calls["streams"], calls["read"], calls["dlpack"]) == ([], 4, 0)
    producer.reset()
    cuda_call(7, 7)
    calls = producer.calls()
    assert calls["streams"] == [] and calls["dlpack_streams"] == [7] * 4


def test_a_failing_stream_query_raises_its_error():
    producer.fail("stream")
    error = cuda_call(None, None)
    assert isinstance(error, RuntimeError) and "producer: stream failed on purpose" in str(error)
    assert producer.calls()["read"] == 1  # q alone: the stream is asked before k
