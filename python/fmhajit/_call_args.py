"""The checks of a call's variant= and dropout= arguments, before the
C++ API sees them (fmhajit.attention and fmhajit.plan)."""

import numbers as _numbers
import os as _os

import numpy as _np


# The largest seed: the CLI's --dropout-seed's, and what a torch.library
# int (int64) carries.
_MAX_DROPOUT_SEED = (1 << 63) - 1


# fmhajit_tensor's slots, 0 to 3 (docs/variants.md#run-time-tensors).
_MAX_VARIANT_TENSORS = 4


def _variant_call(variant, tensors):
    """(source, name, tensors) of a call with variant= or variant_tensors=:
    what python/src/Calls.h takes. The C++ side checks the tensors (and
    refuses tensors without a variant); run() checks their count against
    the plan's."""
    source, name = ("", "") if variant is None else _variant_source(variant)
    if tensors is None:
        return source, name, ()
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"variant_tensors: expected a list or tuple of float32 "
                        f"arrays in slot order ([table] for one); got "
                        f"{type(tensors).__name__}")
    if len(tensors) > _MAX_VARIANT_TENSORS:
        raise ValueError(f"variant_tensors: {len(tensors)} given; a variant reads "
                         f"at most {_MAX_VARIANT_TENSORS} (fmhajit_tensor's slots "
                         f"0 to {_MAX_VARIANT_TENSORS - 1})")
    return source, name, tuple(tensors)


# What a str that names a file ends with: a source never does (it ends
# with a function's closing brace).
_SOURCE_FILE_SUFFIXES = (".cpp", ".cc", ".cxx", ".h", ".hpp")


def _variant_source(variant):
    """(source, name in clang's messages): a str is the source itself ("":
    the API names it variant.cpp); a path is read now and names it."""
    if isinstance(variant, str):
        source, name = variant, ""
        if "\n" not in source and source.rstrip().endswith(_SOURCE_FILE_SUFFIXES):
            raise ValueError(f"variant: {source!r} looks like a file name, but a "
                             f"str is the C++ source itself: pass "
                             f"pathlib.Path({source!r}) to read the file")
    elif isinstance(variant, _os.PathLike):
        name = _os.fsdecode(variant)
        with open(name, encoding="utf-8") as f:
            source = f.read()
    else:
        raise TypeError(f"variant: expected C++ source as a str, or a "
                        f"pathlib.Path of a file holding it; got "
                        f"{type(variant).__name__}")
    if not source or source.isspace():
        raise ValueError(f"variant{' ' + name if name else ''}: the source is "
                         f"empty; define score_mod and/or mask_mod "
                         f"(docs/variants.md)")
    return source, name


def _dropout(p, seed, offset, torch):
    """(p, seed, offset) of a call with dropout_p != 0: the seed drawn when
    None (from torch's generator for tensors, else NumPy's global one, so
    torch.manual_seed or np.random.seed repeats it). The API checks p."""
    if isinstance(p, bool) or not isinstance(p, _numbers.Real):
        raise TypeError(f"dropout_p: expected a number in [0, 1); got "
                        f"{type(p).__name__}")
    if seed is None:
        if torch is not None:
            seed = int(torch.randint(0, _MAX_DROPOUT_SEED, (), dtype=torch.int64))
        else:
            seed = int(_np.random.randint(0, _MAX_DROPOUT_SEED, dtype=_np.int64))
    elif isinstance(seed, bool) or not isinstance(seed, _numbers.Integral):
        raise TypeError(f"dropout_seed: expected an int or None; got "
                        f"{type(seed).__name__}")
    elif not 0 <= seed <= _MAX_DROPOUT_SEED:
        raise ValueError(f"dropout_seed {seed}: give a seed from 0 to 2^63-1, "
                         f"or None for a random one")
    if isinstance(offset, bool) or not isinstance(offset, _numbers.Integral):
        raise TypeError(f"dropout_offset: expected an int; got "
                        f"{type(offset).__name__}")
    if not 0 <= offset <= 0xFFFFFFFF:
        raise ValueError(f"dropout_offset {offset}: give an offset from 0 to "
                         f"2^32-1 (one of the seed's streams)")
    return float(p), int(seed), int(offset)
