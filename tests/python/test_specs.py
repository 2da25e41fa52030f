"""The spec-level calls answer what the fmhajit command line answers, and
the kernel cache is one for both."""

import json
import os
import subprocess

import numpy as np
import pytest

import fmhajit
from conftest import cli_binary


def cli(*args, env=None):
    run = subprocess.run([cli_binary(), *args], capture_output=True,
                         text=True, env=env)
    return run.returncode, run.stdout, run.stderr


def test_name_decode_validate():
    spec = "family=fwd,dtype=bf16,d=128,mask=causal,target=sm_90a"
    name = fmhajit.name(spec)
    assert name == cli("name", spec)[1].strip()
    assert fmhajit.decode(name) == json.loads(cli("decode", name)[1])
    valid = fmhajit.validate({"dtype": "fp16", "d": 192, "dv": 128, "mask": "window",
                              "lse": 1, "target": "gfx942"})
    assert valid["name"] == "fmha_fwd_fp16_d192v128_window_lse_m128n32w4s1_mfma_gfx942"
    assert valid["spec"]["dv"] == 128 and "dv=128" in valid["resolved"]


def test_invalid_spec_lists_every_problem():
    spec = "dtype=fp8_e4m3,d=72,pipeline=wgmma,target=gfx1100"
    with pytest.raises(ValueError) as e:
        fmhajit.validate(spec)
    code, _, err = cli("validate", spec)
    assert code == 1
    assert str(e.value).splitlines() == [line.removeprefix("error: ") for line in err.splitlines()]
    with pytest.raises(ValueError, match="fmha_nonsense"):
        fmhajit.decode("fmha_nonsense")


def test_compile_stages():
    ir = fmhajit.compile("dtype=fp32,d=64", "llvm")
    assert "define" in ir and fmhajit.name("dtype=fp32,d=64") in ir
    ptx = fmhajit.compile("dtype=bf16,d=64", emit="asm", target="sm_90a")
    assert ".target sm_90a" in ptx
    obj = fmhajit.compile("dtype=fp32,d=64", "obj")
    assert isinstance(obj, bytes) and obj[:4] == b"\x7fELF"
    with pytest.raises(ValueError, match="emit wasm: use llvm, opt, asm or obj"):
        fmhajit.compile("dtype=fp32,d=64", "wasm")


def test_plan_describes_as_the_cli():
    q = np.empty((1, 1, 2, 128), np.uint16)  # bf16 bits; shapes only
    k = np.empty((1, 16384, 2, 128), np.uint16)
    p = fmhajit.plan(q, k, k, causal=True, threads=8)
    assert [s["role"] for s in p["steps"]] == ["split-KV forward", "combine"]
    assert p["workspace_bytes"] > 0 and not p["loaded"]
    _, text, _ = cli("plan", "--d", "128", "--heads", "2", "--seqlen-q", "1", "--seqlen-k",
                     "16384", "--mask", "causal_br", "--threads", "8")
    assert p["describe"].strip() == text.strip()


def test_plan_for_a_gpu_from_host_arrays():
    q = np.empty((2, 1000, 8, 128), np.uint16)
    p = fmhajit.plan(q, q, q, device="cuda", target="sm_90a")
    assert p["device"] == "cuda" and p["steps"][0]["kernel"].endswith("_sm90a")
    b = fmhajit.plan(q, q, q, backward=True)
    assert b["steps"][0]["role"] == "bwd_dot_do_o"


def test_kernel_cache_is_shared_with_the_cli(tmp_path):
    """Kernels the module compiles load from disk in the CLI, and back."""
    env = dict(os.environ, FMHAJIT_CACHE_DIR=str(tmp_path))
    q = np.zeros((1, 40, 2, 96), np.float32)
    p = fmhajit.plan(q, q, q, softcap=3.0, load=True, cache_dir=str(tmp_path))
    assert p["steps"][0]["load"]["origin"] == "compiled"
    spec = fmhajit.decode(p["steps"][0]["kernel"])
    code, out, err = cli("run", json.dumps(spec), "--heads", "2", "--seqlen-q", "40",
                         "--softcap", "3", "--iters", "1", env=env)
    assert code == 0, err
    assert "(disk)" in out.splitlines()[1], out
    cli_spec = "family=fwd,dtype=fp16,d=96,mask=window,bm=64"
    code, out, err = cli("run", cli_spec, "--heads", "2", "--seqlen-q", "40",
                         "--window", "5,5", "--iters", "1", env=env)
    assert code == 0 and "(compiled)" in out, out + err
    q16 = q.astype(np.float16)
    p = fmhajit.plan(q16, q16, q16, window=(5, 5), kernel=cli_spec, load=True,
                     cache_dir=str(tmp_path))
    assert p["steps"][0]["load"]["origin"] == "disk"


def test_warmup_fills_the_cache_the_cli_reads(tmp_path):
    """fmhajit.warmup compiles a profile into the cache; the CLI then loads
    one of its kernels from disk. Several profiles may be named at once. An
    unknown profile or target is a ValueError naming it."""
    fmhajit.warmup("smoke", "host", cache_dir=str(tmp_path))
    env = dict(os.environ, FMHAJIT_CACHE_DIR=str(tmp_path))
    code, out, err = cli("run", "family=fwd,dtype=bf16,d=64,mask=causal,target=host",
                         "--seqlen-q", "50", "--iters", "1", env=env)
    assert code == 0, err
    assert "(disk)" in out, out
    with pytest.raises(ValueError, match="unknown profile"):
        fmhajit.warmup("nope", "host", cache_dir=str(tmp_path))
    # Several profiles, a,b; each named, so a bad one is refused by name.
    assert fmhajit.warmup("smoke, smoke", "host", cache_dir=str(tmp_path)) is None
    with pytest.raises(ValueError, match="profile=nope"):
        fmhajit.warmup("smoke,nope", "host", cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="target sm_12 is unknown"):
        fmhajit.warmup("smoke", "sm_12", cache_dir=str(tmp_path))
