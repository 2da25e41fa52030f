"""The array kinds fmhajit returns: NumPy on the host, PyTorch anywhere.

fmhajit reads any array through DLPack, but it must also make arrays: the
output, the LSE, host copies of cu_seqlens, a CUDA plan's workspace. Each
kind here makes them the way its library does, so that the result is the
same kind of array as q, on q's device. Arrays of other libraries on the
host get NumPy results; on a GPU they must come with out= (and lse=).
"""

import sys

import numpy as np

# DLPack device types (dlpack.h): host, CUDA, and CUDA-pinned host memory.
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST = 1, 2, 3


def torch_of(array):
    """The torch module when array is a torch.Tensor, else None (without
    importing torch: a program that never imported it has no tensors)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(array, torch.Tensor):
        return torch
    return None


def is_bf16_numpy(array):
    """ml_dtypes' bfloat16 (from JAX and others): NumPy arrays that DLPack
    cannot export; fmhajit passes them as their uint16 bits."""
    return isinstance(array, np.ndarray) and array.dtype.name == "bfloat16"


def bf16_bits(array):
    """An ml_dtypes bfloat16 array as its uint16 bits (others unchanged)."""
    return array.view(np.uint16) if is_bf16_numpy(array) else array


def check_integral(integral, dtype, got):
    """cu_seqlens must hold integers: converting 0.5 to int32 would hide
    a bug in the caller's lengths."""
    if dtype == np.int32 and not integral:
        raise TypeError(f"cu_seqlens: expected integers; got {got}")


class NumpyKind:
    """Host arrays: NumPy's, and any other library's on the host."""

    stream = None
    workspace = None

    @staticmethod
    def streams_for(*arrays):
        return (None, None)

    def __init__(self, like):
        if isinstance(like, np.ndarray):
            self.dtype = like.dtype
        else:
            self.dtype = np.from_dlpack(like).dtype

    @staticmethod
    def accepts(array):
        if isinstance(array, np.ndarray):
            return True
        device = getattr(array, "__dlpack_device__", None)
        return device is not None and device()[0] in (_DL_CPU, _DL_CUDA_HOST)

    def empty(self, shape, q, float32=False):
        return np.empty(shape, np.float32 if float32 else self.dtype)

    @staticmethod
    def host_vector(values, dtype):
        values = np.asarray(values)
        check_integral(values.dtype.kind in "iub", dtype, values.dtype)
        return np.ascontiguousarray(values, dtype=dtype), None

    @staticmethod
    def device_vector(values):
        """float32 values the kernels read (sinks), packed."""
        return np.ascontiguousarray(values, dtype=np.float32)


_raw_stream = None  # torch's current CUDA stream of a device index, as an int


def current_stream(torch, index):
    """torch.cuda.current_stream(index).cuda_stream, through the raw getter
    torch.compile's generated code uses where torch has it: making the
    Stream object costs microseconds a call."""
    global _raw_stream
    if _raw_stream is None:
        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
            lambda i: torch.cuda.current_stream(i).cuda_stream)
    return _raw_stream(index)


class TorchKind:
    """PyTorch tensors, on the CPU or a CUDA device."""

    def __init__(self, torch, like):
        self.torch = torch
        self.like = like
        self.cuda = like.is_cuda
        self.stream = None
        self.workspace = None
        if self.cuda:
            # The caller's current stream: fmhajit launches on it and tells
            # every producer (through __dlpack__) that it reads there.
            self.stream = current_stream(torch, like.get_device())
            self.workspace = self._workspace

    @property
    def device(self):
        return self.like.device

    def streams_for(self, *arrays):
        """(the API's stream, the stream for __dlpack__). Tensors are ordered
        on PyTorch's current stream, the call's own, so they get -1, "no
        synchronization" (which lets the module read them without DLPack:
        python/src/TorchTensor.h); another library's CUDA arrays get the
        stream, to order their producer's work before ours."""
        if self.stream is None:
            return (None, None)
        tensor = self.torch.Tensor
        for a in arrays:
            if not isinstance(a, tensor):
                return (self.stream, self.stream)
        return (self.stream, -1)

    def empty(self, shape, q, float32=False):
        """A plain tensor on the kind's device, of q's dtype or float32. From
        a plain tensor, new_empty makes the same (strided, no grad, not
        pinned) for less, least without a dtype; a subclass's new_empty
        could give the subclass."""
        torch = self.torch
        if type(self.like) is torch.Tensor:
            if not float32 and q is self.like:
                return q.new_empty(shape)
            return self.like.new_empty(shape, dtype=torch.float32 if float32 else q.dtype)
        dtype = torch.float32 if float32 else q.dtype
        return torch.empty(shape, dtype=dtype, device=self.device)

    def _workspace(self, nbytes):
        # The caching allocator orders reuse by stream, so the buffer may be
        # dropped as soon as the launches are queued.
        return self.torch.empty(nbytes, dtype=self.torch.uint8, device=self.device)

    def host_vector(self, values, dtype):
        """A host copy for the plan and, on CUDA, a device copy for the
        kernels, of cu_seqlens or ALiBi slopes given as a tensor, NumPy
        array or list."""
        torch = self.torch
        t = torch.as_tensor(values)
        check_integral(not t.is_floating_point() and not t.is_complex(), dtype, t.dtype)
        t = t.to(torch.int32 if dtype == np.int32 else torch.float32)
        host = t.to("cpu").contiguous()
        if not self.cuda:
            return host, None
        return host, t.to(self.device).contiguous()

    def device_vector(self, values):
        """float32 values the kernels read (sinks), packed on the kind's
        device: a tensor already so is passed as it is."""
        torch = self.torch
        t = torch.as_tensor(values, dtype=torch.float32, device=self.device)
        return t.detach().contiguous()


def kind_of(q):
    """The kind of array q is, or TypeError when fmhajit cannot make its
    results."""
    torch = torch_of(q)
    if torch is not None:
        return TorchKind(torch, q)
    if NumpyKind.accepts(q):
        return NumpyKind(q)
    raise TypeError(
        f"q: fmhajit makes results as NumPy arrays (host) or PyTorch tensors; "
        f"for {type(q).__name__} give out= (and lse=), or pass a supported array"
    )
