#!/usr/bin/env python3
"""Damages the one cache file (`*.bin`) in a kernel cache directory.

usage: damage.py HOW DIR, HOW one of
  truncate  keep the first half of the file (a torn write)
  flip      invert one byte in the middle of the payload (a flipped bit)
  magic     overwrite the header's magic (not a cache file at all)
  empty     truncate to zero bytes
  garbage   replace it with a few bytes of text
"""
import glob
import os
import sys


def main(how, directory):
    files = glob.glob(os.path.join(directory, "*.bin"))
    if len(files) != 1:
        sys.exit("expected one .bin file in %s, found %d" % (directory, len(files)))
    path = files[0]
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if how == "truncate":
        data = data[: len(data) // 2]
    elif how == "flip":
        data[len(data) * 3 // 4] ^= 0xFF
    elif how == "magic":
        data[0:8] = b"NOTCACHE"
    elif how == "empty":
        data = bytearray()
    elif how == "garbage":
        data = bytearray(b"hello\n")
    else:
        sys.exit("unknown damage " + how)
    with open(path, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
