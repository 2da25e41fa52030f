# Type stubs of the package fmhajit (docs/python.md).
import os
from typing import Any, Literal, Optional, Sequence, Tuple, TypeVar, Union, overload

_Array = TypeVar("_Array")  # a NumPy array or torch.Tensor; results match q
_Vector = Union[Sequence[int], Sequence[float], Any]
_Spec = Union[str, dict]
# attention's dropout: dropout_p in [0, 1) (0: no dropout), dropout_seed
# 0 to 2^63-1 (None: drawn per call from torch's or NumPy's generator),
# dropout_offset 0 to 2^32-1 (docs/python.md, "Dropout").
# sinks: float32 [heads_q] on q's device (a list too); attn_bias: a float32
# array broadcastable to [batch, heads_q, seqlen_q, seqlen_k], on q's device
# (docs/python.md, "Sinks and an elementwise bias").
# variant: C++ source defining score_mod and/or mask_mod, or the path of a
# file holding it; variant_tensors: the float32 arrays its fmhajit_tensor
# reads, in slot order (at most 4), on q's device (docs/python.md,
# "Variants").
_Variant = Union[str, os.PathLike[str]]

__version__: str

@overload
def attention(q: _Array, k: Any, v: Any, *, causal: bool = ...,
              window: Optional[Tuple[int, int]] = ..., softcap: Optional[float] = ...,
              alibi_slopes: Optional[_Vector] = ..., scale: Optional[float] = ...,
              return_lse: Literal[False] = ..., cu_seqlens_q: Optional[_Vector] = ...,
              cu_seqlens_k: Optional[_Vector] = ..., out: Optional[_Array] = ...,
              lse: Optional[_Array] = ..., threads: Optional[int] = ...,
              target: Optional[str] = ..., kernel: Optional[str] = ...,
              cache_dir: Optional[str] = ..., dropout_p: float = ...,
              dropout_seed: Optional[int] = ..., dropout_offset: int = ...,
              sinks: Optional[_Vector] = ..., attn_bias: Optional[Any] = ...,
              variant: Optional[_Variant] = ...,
              variant_tensors: Optional[Sequence[Any]] = ...) -> _Array: ...
@overload
def attention(q: _Array, k: Any, v: Any, *, causal: bool = ...,
              window: Optional[Tuple[int, int]] = ..., softcap: Optional[float] = ...,
              alibi_slopes: Optional[_Vector] = ..., scale: Optional[float] = ...,
              return_lse: Literal[True], cu_seqlens_q: Optional[_Vector] = ...,
              cu_seqlens_k: Optional[_Vector] = ..., out: Optional[_Array] = ...,
              lse: Optional[_Array] = ..., threads: Optional[int] = ...,
              target: Optional[str] = ..., kernel: Optional[str] = ...,
              cache_dir: Optional[str] = ..., dropout_p: float = ...,
              dropout_seed: Optional[int] = ..., dropout_offset: int = ...,
              sinks: Optional[_Vector] = ..., attn_bias: Optional[Any] = ...,
              variant: Optional[_Variant] = ...,
              variant_tensors: Optional[Sequence[Any]] = ...) -> Tuple[_Array, _Array]: ...

def plan(q: Any, k: Any, v: Any, *, causal: bool = ...,
         window: Optional[Tuple[int, int]] = ..., softcap: Optional[float] = ...,
         alibi_slopes: Optional[_Vector] = ..., scale: Optional[float] = ...,
         return_lse: bool = ..., cu_seqlens_q: Optional[_Vector] = ...,
         cu_seqlens_k: Optional[_Vector] = ..., threads: Optional[int] = ...,
         target: Optional[str] = ..., kernel: Optional[str] = ...,
         cache_dir: Optional[str] = ..., device: Optional[Literal["host", "cpu", "cuda"]] = ...,
         load: bool = ..., autotune: bool = ..., backward: bool = ...,
         dropout_p: float = ..., sinks: Optional[_Vector] = ...,
         attn_bias: Optional[Any] = ...,
         variant: Optional[_Variant] = ...) -> dict[str, Any]: ...

def validate(spec: _Spec) -> dict[str, Any]: ...
def name(spec: _Spec) -> str: ...
def decode(name_: str) -> dict[str, Any]: ...
@overload
def compile(spec: _Spec, emit: Literal["llvm", "opt", "asm"] = ...,
            target: Optional[str] = ...) -> str: ...
@overload
def compile(spec: _Spec, emit: Literal["obj"], target: Optional[str] = ...) -> bytes: ...
def warmup(profile: str, target: str, cache_dir: Optional[str] = ...) -> None: ...
def tolerance(dtype: str, out_dtype: Optional[str] = ...,
              gradients: bool = ...) -> dict[str, float]: ...
def to_bf16(array: Any) -> Any: ...
def from_bf16(bits: Any) -> Any: ...
def cached_plans() -> int: ...
def clear_plans() -> None: ...
