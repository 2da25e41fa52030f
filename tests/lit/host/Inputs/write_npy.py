#!/usr/bin/env python3
"""Writes a float32 .npy array of seeded uniform values in [-2, 2).

usage: write_npy.py OUT SHAPE [SEED]    SHAPE: "514", "2x257" or "0"

Pure Python (no NumPy), for the lit tests that give a variant its run-time
tensors (`fmhajit run --variant-tensor OUT`).
"""
import random
import struct
import sys


def header(shape):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    text = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % dims
    # Magic (6), version (2), length (2), dictionary and padding: 64 bytes.
    padded = text + " " * ((64 - (10 + len(text) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(padded)) + padded.encode()


def main():
    out, shape_text = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    shape = [int(d) for d in shape_text.split("x")]
    count = 1
    for d in shape:
        count *= d
    rng = random.Random(seed)
    values = [rng.uniform(-2.0, 2.0) for _ in range(count)]
    with open(out, "wb") as f:
        f.write(header(shape))
        f.write(struct.pack("<%df" % count, *values))


if __name__ == "__main__":
    main()
