"""fmhajit.attention's common call runs in one C++ entry
(python/src/AttentionCall.h), which answers NotImplemented for every other
call so that the Python path runs it: which calls it takes, that it gives
the Python path's bits and messages, and the outputs it makes."""

import os
import subprocess
import sys

import numpy as np
import pytest

import fmhajit
from fmhajit import _fmhajit

# attention's keywords, with their defaults, in attention_call's order
# (python/src/AttentionCall.h): q, k, v come first.
DEFAULTS = dict(causal=False, window=None, softcap=None, alibi_slopes=None,
                scale=None, return_lse=False, cu_seqlens_q=None,
                cu_seqlens_k=None, out=None, lse=None, threads=None,
                target=None, kernel=None, cache_dir=None, dropout_p=0.0,
                sinks=None, attn_bias=None, variant=None, variant_tensors=None)


def entry(q, k, v, **keywords):
    """attention_call with attention's keywords."""
    args = dict(DEFAULTS, **keywords)
    return _fmhajit.attention_call(q, k, v, *args.values())


def python_path(q, k, v, **keywords):
    """The Python path that attention takes when the entry declines."""
    args = dict(DEFAULTS, dropout_seed=None, dropout_offset=0)
    args.update(keywords)
    return fmhajit._any_attention(
        q, k, v, *(args[name] for name in (
            "causal", "window", "softcap", "alibi_slopes", "scale", "return_lse",
            "cu_seqlens_q", "cu_seqlens_k", "out", "lse", "threads", "target",
            "kernel", "cache_dir", "dropout_p", "dropout_seed", "dropout_offset",
            "sinks", "attn_bias", "variant", "variant_tensors")))


def arrays(dtype=np.float32, dv=64):
    rng = np.random.default_rng(7)
    q = rng.standard_normal((2, 9, 4, 64)).astype(dtype)
    k = rng.standard_normal((2, 13, 2, 64)).astype(dtype)
    v = rng.standard_normal((2, 13, 2, dv)).astype(dtype)
    return q, k, v


def lse_for(q):
    return np.empty((q.shape[0], q.shape[2], q.shape[1]), np.float32)


# Calls the entry leaves to the Python path (each one keyword off the
# common call), and the reason.
DECLINED = {
    "window": dict(window=(4, 0)),
    "alibi": dict(alibi_slopes=[0.5, 0.25, 0.125, 0.0625]),
    "sinks": dict(sinks=np.zeros(4, np.float32)),
    "bias": dict(attn_bias=np.zeros((9, 13), np.float32)),
    "variant": dict(variant="float score_mod(float s, int b, int h, int q, int k) "
                            "{ return s; }"),
    "dropout": dict(dropout_p=0.1, dropout_seed=1),
    "causal not a bool": dict(causal=1),
    "lse to make": dict(return_lse=True),
    "softcap a NumPy float": dict(softcap=np.float64(30.0)),
    "threads a bool": dict(threads=True),
    "target bytes": dict(target=b"host"),
}


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_other_calls_are_left_to_python(name):
    """Each of these answers NotImplemented, and fmhajit.attention still
    runs it (the Python path's bits)."""
    q, k, v = arrays()
    keywords = DECLINED[name]
    assert entry(q, k, v, **{n: x for n, x in keywords.items()
                             if n != "dropout_seed"}) is NotImplemented
    got = fmhajit.attention(q, k, v, **keywords)
    want = python_path(q, k, v, **keywords)
    for g, w in zip(*(x if isinstance(x, tuple) else (x,) for x in (got, want))):
        np.testing.assert_array_equal(g, w)


def test_arrays_it_does_not_read_are_left_to_python():
    q, k, v = arrays()
    assert entry(q, k, v, dropout_p=10**30) is NotImplemented  # no error left set
    assert entry(q.astype(np.float64), k, v) is NotImplemented
    assert entry(list(q), k, v) is NotImplemented
    with pytest.raises(TypeError, match="q: dtype float64 is not supported"):
        fmhajit.attention(q.astype(np.float64), k, v)


# Common calls, each with the keywords as the entry reads them.
COMMON = {
    "plain": {},
    "causal": dict(causal=True),
    "softcap and scale": dict(softcap=30.0, scale=0.1),
    "an int softcap": dict(softcap=30),
    "threads and strings": dict(threads=1, target="", kernel=None, cache_dir=None),
    "dropout 0": dict(dropout_p=0),
    "dropout False": dict(dropout_p=False),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint16])
@pytest.mark.parametrize("name", sorted(COMMON))
def test_common_calls_give_the_python_paths_bits(name, dtype):
    q, k, v = arrays(np.float32)
    if dtype == np.uint16:
        q, k, v = (fmhajit.to_bf16(x) for x in (q, k, v))
    else:
        q, k, v = (x.astype(dtype) for x in (q, k, v))
    got = entry(q, k, v, **COMMON[name])
    assert got is not NotImplemented
    assert type(got) is np.ndarray and got.dtype == q.dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got, python_path(q, k, v, **COMMON[name]))


def test_given_out_and_lse_come_back():
    q, k, v = arrays(dv=32)
    out, lse = np.full((2, 9, 4, 32), np.nan, np.float32), lse_for(q)
    got = entry(q, k, v, out=out, lse=lse, return_lse=True)
    assert got[0] is out and got[1] is lse
    want_out, want_lse = python_path(q, k, v, return_lse=True)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(lse, want_lse)
    assert entry(q, k, v, lse=lse_for(q)).shape == (2, 9, 4, 32)


def test_made_out_is_packed_whatever_q_is():
    """NumPy's out is made packed, of q's dtype with v's head_dim, from a
    strided q too (the Python layer's np.empty(shape, q.dtype))."""
    q, k, v = arrays(np.float16, dv=32)
    strided = np.swapaxes(np.swapaxes(q, 0, 1).copy(), 0, 1)  # seq outermost
    got = entry(strided, k, v)
    assert got.shape == (2, 9, 4, 32) and got.dtype == np.float16
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, python_path(q, k, v))


def raised(call):
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", ["heads", "threads", "overlap", "dtype"])
def test_errors_are_the_python_paths(case):
    """The same exception and message whichever path a call takes."""
    q, k, v = arrays()
    keywords = {}
    if case == "heads":
        v = v[:, :, :1]
    elif case == "threads":
        keywords = dict(threads=-1)
    elif case == "overlap":
        keywords = dict(out=q)
    else:
        keywords = dict(out=np.empty((2, 9, 4, 64), np.float16))
    assert raised(lambda: entry(q, k, v, **keywords)) == \
        raised(lambda: python_path(q, k, v, **keywords))


def test_torch_imported_later_loads_the_glue():
    """With torch imported after fmhajit, the first call (common, so the
    Python path does not run) still loads fmhajit._torch, which registers
    the op, and asks torch whether it compiles from then on."""
    pytest.importorskip("torch")
    script = (
        "import numpy as np, fmhajit\n"
        "assert fmhajit._torch_glue is None\n"
        "import torch\n"
        "q = np.ones((1, 2, 1, 64), np.float32)\n"
        "fmhajit.attention(q, q, q)\n"
        "assert fmhajit._torch_glue is not None\n"
        "assert fmhajit._compiling is fmhajit._torch_glue.compiling\n"
        "if fmhajit._torch_glue.HAS_OP:\n"
        "    assert hasattr(torch.ops.fmhajit, 'attention')\n")
    subprocess.run([sys.executable, "-c", script], check=True, env=dict(os.environ))


# fmhajit.attention itself is a C function made from the Python def
# (python/src/AttentionFunction.h): no Python frame on a call.

def test_attention_is_a_c_function_with_the_defs_signature_and_doc():
    import inspect
    import types
    assert type(fmhajit.attention) is types.BuiltinFunctionType
    assert fmhajit.attention.__module__ == "fmhajit"
    assert fmhajit.attention.__doc__ == fmhajit._python_attention.__doc__
    assert inspect.signature(fmhajit.attention) == \
        inspect.signature(fmhajit._python_attention)


BINDING_ERRORS = {
    "missing v": lambda f, q: f(q, q),
    "missing all": lambda f, q: f(),
    "four positional": lambda f, q: f(q, q, q, q),
    "four with a keyword": lambda f, q: f(q, q, q, True, causal=True),
    "unknown keyword": lambda f, q: f(q, q, q, causal=True, foo=1),
    "q twice": lambda f, q: f(q, q, q, q=q),
    "v twice from a dict": lambda f, q: f(q, q, q, **{"v": q}),
    "a keyword that is not a str": lambda f, q: f(q, q, q, **{1: 2}),
}


@pytest.mark.parametrize("case", sorted(BINDING_ERRORS))
def test_binding_errors_are_pythons(case):
    """Python's own TypeError, worded as the def's."""
    q = arrays()[0]
    call = BINDING_ERRORS[case]
    assert raised(lambda: call(fmhajit.attention, q)) == \
        raised(lambda: call(fmhajit._python_attention, q))


def test_keywords_bind_by_name_however_made():
    """q, k and v by keyword, and keyword names that are not interned."""
    q, k, v = arrays()
    want = python_path(q, k, v, causal=True)
    np.testing.assert_array_equal(fmhajit.attention(v=v, k=k, q=q, causal=True), want)
    made = {"".join(["cau", "sal"]): True}  # a str built at run time
    np.testing.assert_array_equal(fmhajit.attention(q, k, v, **made), want)


def record_any_attention(monkeypatch):
    calls = []
    monkeypatch.setattr(fmhajit, "_any_attention", lambda *args: calls.append(args))
    return calls


def test_other_calls_reach_any_attention_with_every_argument(monkeypatch):
    """A declined call gives _any_attention the 24 arguments in the
    signature's order, defaults filled in, as the def does."""
    q, k, v = arrays()
    calls = record_any_attention(monkeypatch)
    keywords = dict(window=(4, 0), dropout_seed=7, dropout_offset=3, threads=1)
    fmhajit.attention(q, k, v, **keywords)
    fmhajit._python_attention(q, k, v, **keywords)
    assert len(calls) == 2 and len(calls[0]) == 24
    assert all(a is b for a, b in zip(*calls))


def test_a_compiling_call_takes_the_python_path(monkeypatch):
    """Where fmhajit._compiling answers true, even a common call goes to
    _any_attention (inside torch.compile it must become the op)."""
    q, k, v = arrays()
    calls = record_any_attention(monkeypatch)
    monkeypatch.setattr(fmhajit, "_compiling", lambda: True)
    assert fmhajit.attention(q, k, v) is None and len(calls) == 1


@pytest.fixture
def answer_compiling():
    """_fmhajit.answer_compiling for one test, and the package's own answer
    (fmhajit._torch's, where the glue is loaded) registered again after."""
    yield _fmhajit.answer_compiling
    glue = fmhajit._torch_glue
    if glue is not None and glue.FLAG_ANSWER is not None:
        _fmhajit.answer_compiling(glue.compiling, *glue.FLAG_ANSWER)


def test_a_compiling_answer_by_flag_is_read_not_called(monkeypatch, answer_compiling):
    """Where fmhajit._compiling has an answer registered (fmhajit._torch's
    compiling: outside a trace, torch.compiler.is_compiling's flag, or
    false), the C function reads it instead of calling _compiling: a true
    flag takes the Python path, a false one the common call, a missing one
    calls _compiling, and None answers false. Guards the shortcut that
    spares each call torch.compiler.is_compiling's two Python frames."""
    q, k, v = arrays()
    want = python_path(q, k, v)
    asked = []

    def ask():
        asked.append(True)
        return True
    monkeypatch.setattr(fmhajit, "_compiling", ask)
    flags = {"_is_compiling_flag": False}
    answer_compiling(ask, flags, "_is_compiling_flag")
    calls = record_any_attention(monkeypatch)
    np.testing.assert_array_equal(fmhajit.attention(q, k, v), want)
    flags["_is_compiling_flag"] = True
    assert fmhajit.attention(q, k, v) is None and len(calls) == 1
    del flags["_is_compiling_flag"]
    assert fmhajit.attention(q, k, v) is None and len(calls) == 2
    assert asked == [True]
    answer_compiling(ask, None, None)
    np.testing.assert_array_equal(fmhajit.attention(q, k, v), want)
    assert len(calls) == 2 and asked == [True]


def test_the_last_plan_is_the_plan_of_its_own_problem():
    """The C++ side keeps the last call's plan beside the cache
    (python/src/Calls.cpp, planFor): calls alternating between problems
    each run their own, and clear_plans forgets it with the rest."""
    q, k, v = arrays()
    short = tuple(x[:, :5] for x in (q, k, v))
    fmhajit.clear_plans()
    first = fmhajit.attention(q, k, v)
    other = fmhajit.attention(*short, causal=True)
    assert fmhajit.cached_plans() == 2
    for _ in range(2):
        np.testing.assert_array_equal(fmhajit.attention(q, k, v), first)
        np.testing.assert_array_equal(fmhajit.attention(*short, causal=True), other)
    assert not np.array_equal(first[:, :5], other)
    fmhajit.clear_plans()
    np.testing.assert_array_equal(fmhajit.attention(q, k, v), first)
    assert fmhajit.cached_plans() == 1
