#!/usr/bin/env python3
"""What api::plan picks for each row of a GPU decode grid, and how far it is
from the best pinned configuration the same run measured.

Reads a grid JSON of fmhajit-bench-decode --device cuda (every row's pinned
configurations and times, e.g. bench/results-decode-gpu-h100-grid-v2.json)
and the dispatch table (specs/dispatch/nvptx.json), applies the plan's split
rule with the same arithmetic as the C++ (runtime/api/SplitHeuristic.cpp
chooseNumSplits, runtime/api/SplitPlanner.cpp narrowSplit and the ring
twin's parts, runtime/api/DispatchTable.cpp), and prints for every row the predicted tile
and parts, that configuration's measured time, the best, and the ratio.

  --rule table     the rule as the table has it (split_tiles included)
  --rule wide      without split_tiles: the tile rows' pick only (the rule
                   before split_tiles)

Times: the row's own plan time where the prediction is the configuration
the run's plan took, else the pinned configuration's. The last line counts
the rows where the run's plan took the predicted tile and parts: all of
them when the rule is the one the run's library had (a check that the
script reproduces the C++). The best is the fastest of every pinned
configuration and the plan. The run's d, dtype and mask are given by
--d/--dtype/--mask (the grid's are d = 128, bf16, no mask); the SM count
is --sms (an H100's 132).
"""
import argparse
import json
import lzma
import math
import os
import sys

# runtime/api/SplitHeuristic.h
GPU_BLOCKS_PER_SM = 1.5
GPU_MAX_SPLITS = 128
PIPELINE = "wgmma"  # sm_90a's first pipeline (specs/arch/sm_90a.json)
RING_MIN_PAGE = 8  # the TMA ring reads pages of 8 rows or more (readsPagesOf)
MOST_NARROWED_PARTS = 64  # kMostNarrowedParts (SplitPlanner.cpp)
MOST_ROUNDED_UP_PARTS = 16  # kMostRoundedUpParts (SplitPlanner.cpp)
LEAST_KEY_TILES_FOR_TWO_PAGED_PARTS = 16  # kLeastKeyTilesForTwoPagedParts
MOST_KEY_ROWS_TILE_ROWS = 16  # kMostKeyRowsTileRows (SplitPlanner.cpp)
MOST_THIN_PACKED_ROWS = 8  # kMostThinPackedRows
LEAST_KEY_TILES_A_ROUNDED_UP_PART = 4  # kLeastKeyTilesARoundedUpPart
LEAST_KEY_TILES_FOR_ONE_THIN_RING_PART = 8  # kLeastKeyTilesForOneThinRingPart
LEAST_PAGED_KEY_TILES_FOR_ONE_THIN_RING_PART = 32  # kLeastPagedKeyTilesForOneThinRingPart


def pow2_ceil(x):
    return 1 << (max(1, x) - 1).bit_length()


def choose_num_splits(items, key_tiles, workers):
    """chooseNumSplits(items, keyTiles, workers), the GPU rule."""
    if workers == 0 or items <= 0:
        return 1
    wanted = math.ceil(GPU_BLOCKS_PER_SM * workers / items)
    if wanted <= 1:
        return 1
    return max(1, min(pow2_ceil(wanted), GPU_MAX_SPLITS, key_tiles))


def ring_parts(items, rows, paged, parts, workers, key_tiles):
    """ringParts (runtime/api/SplitPlanner.cpp): about half a block an SM;
    parts (the cp.async tile's count) is 2 or more."""
    short_paged = paged and key_tiles < LEAST_KEY_TILES_FOR_TWO_PAGED_PARTS
    least = 2 if paged and not short_paged else 1
    wanted = workers / (2.0 * items)
    up = pow2_ceil(math.ceil(wanted)) if wanted > 1 else 1
    # Paged rows round up: thin ones always, wider ones to kMostRoundedUpParts
    # where each part keeps enough key tiles; a short range not from about
    # one part to two.
    thin = rows <= MOST_THIN_PACKED_ROWS
    long_parts = key_tiles >= LEAST_KEY_TILES_A_ROUNDED_UP_PART * up
    round_up = (paged and (thin or (up <= MOST_ROUNDED_UP_PARTS and long_parts))
                and not (short_paged and up <= 2))
    if wanted <= 1:
        n = 1
    elif round_up:
        n = up
    else:
        n = 1 << (int(wanted).bit_length() - 1)  # the power of two below
    return max(least, min(n, parts))


def serving_row(rows, packed_rows, d, dtype, mask):
    """The first row of a tile list that serves the problem (TileRow::serves)."""
    for row in rows:
        if (packed_rows <= row.get("max_seqlen_q", math.inf)
                and d <= row["max_d"]
                and dtype in row.get("dtypes", [dtype])
                and mask in row.get("masks", [mask])):
            return row
    return None


def plan_for(row, table, use_split_tiles, args):
    """(tile row, parts, packed) the plan takes for a grid row."""
    sq = row.get("seqlen_q", 1)
    ratio = row["heads_q"] // row["heads_kv"]
    pack = table["pack_gqa"]
    packed = sq <= pack["max_seqlen_q"] and ratio >= pack["min_ratio"]
    rows = sq * ratio if packed else sq
    heads = row["heads_kv"] if packed else row["heads_q"]
    tile = serving_row(table["tiles"][PIPELINE], rows, args.d, args.dtype,
                       args.mask)
    items = row["batch"] * heads * math.ceil(rows / tile["bm"])
    keys = row["seqlen_k"]
    n = choose_num_splits(items, math.ceil(keys / tile["bn"]), args.sms)
    # narrowSplit: the parts would hold one key tile each.
    split_rows = table.get("split_tiles", {}).get(PIPELINE, [])
    narrow = serving_row(split_rows, rows, args.d, args.dtype, args.mask)
    # ringTwin: a tile's TMA ring twin reads the problem.
    def has_ring_twin_of(t):
        return packed and t["stages"] == 1 and (
            not row["page_size"] or row["page_size"] >= RING_MIN_PAGE)
    has_ring_twin = has_ring_twin_of(tile)
    narrow_n = None
    if (use_split_tiles and narrow and narrow["bn"] < tile["bn"]
            and n >= math.ceil(keys / tile["bn"])):
        narrow_items = row["batch"] * heads * math.ceil(rows / narrow["bm"])
        narrow_n = choose_num_splits(narrow_items,
                                     math.ceil(keys / narrow["bn"]), args.sms)
        # kMostNarrowedParts: past 64 the wide tile's ring twin stays, and
        # paged rows keep it where an item has few packed rows (keys as rows)
        # or the narrowed blocks would outnumber the SMs.
        if narrow_n > MOST_NARROWED_PARTS and has_ring_twin:
            narrow_n = None
        elif (row["page_size"] and has_ring_twin
              and (rows <= MOST_KEY_ROWS_TILE_ROWS
                   or narrow_items * narrow_n > args.sms)):
            narrow_n = None
    if narrow_n is not None:
        tile = narrow
        items = row["batch"] * heads * math.ceil(rows / tile["bm"])
        n = narrow_n
        # Paged, the narrowed tile runs as its ring twin in as many parts.
        if row["page_size"] and has_ring_twin_of(tile):
            tile = dict(tile, stages=2)
    elif has_ring_twin and n > 1:
        tile = dict(tile, stages=2)  # ringTwin
        n = ring_parts(items, rows, row["page_size"] > 0, n, args.sms,
                       math.ceil(keys / tile["bn"]))
        # keyRowsTwin: few packed rows run with keys as the products' rows,
        # on m8 up to 8 rows or where m16 blocks leave half the SMs idle.
        if rows <= MOST_KEY_ROWS_TILE_ROWS:
            few_blocks = 2 * items * n <= args.sms
            tile = dict(tile, bm=8 if rows <= 8 or few_blocks else 16, warps=4)
    elif has_ring_twin and n == 1 and rows <= MOST_THIN_PACKED_ROWS:
        # oneThinRingPart: the cp.async tile fills the SMs in one part; thin
        # items with enough key tiles take the ring with keys as rows in one.
        least = (LEAST_PAGED_KEY_TILES_FOR_ONE_THIN_RING_PART
                 if row["page_size"] else LEAST_KEY_TILES_FOR_ONE_THIN_RING_PART)
        if math.ceil(keys / tile["bn"]) >= least:
            tile = dict(tile, stages=2, bm=8, warps=4)
    return tile, n, packed


def config_name(tile, packed):
    """The grid's configuration string for a tile row."""
    text = "pipeline=%s,bm=%d,bn=%d,warps=%d,stages=%d" % (
        PIPELINE, tile["bm"], tile["bn"], tile["warps"], tile["stages"])
    return text + (",pack_gqa=1" if packed else "")


def short(config):
    """'wgmma m64n64w4+pk', as docs/results.md writes configurations."""
    keys = dict(kv.split("=") for kv in config.split(","))
    ring = "s" + keys["stages"] if keys.get("stages", "1") != "1" else ""
    return "%s m%sn%sw%s%s%s" % (keys["pipeline"], keys["bm"], keys["bn"],
                                 keys["warps"], ring,
                                 "+pk" if keys.get("pack_gqa") == "1" else "")


def run_plan_config(row):
    """The configuration string of the plan the run itself timed."""
    parts = row["plan_kernel"].split("_")
    tile = next(p for p in parts if p.startswith("m") and "n" in p)
    bm, rest = tile[1:].split("n")
    bn, rest = rest.split("w")
    warps, stages = rest.split("s")
    text = "pipeline=%s,bm=%s,bn=%s,warps=%s,stages=%s" % (
        parts[-2], bm, bn, warps, stages)
    return text + (",pack_gqa=1" if "pgqa" in parts else "")


def measured(row, config, parts, pinned_first=False):
    """The run's time of a configuration: its plan's, or a pinned one's
    (with pinned_first, the pinned twin's where the run timed one)."""
    pinned = [c["ms"] for c in row["configs"]
              if c["config"] == config and c["num_splits"] == parts]
    is_plan = config == run_plan_config(row) and parts == row["plan_splits"]
    if is_plan and not (pinned_first and pinned):
        return row["plan_ms"]
    return pinned[0] if pinned else None


def label(row):
    kib = row["seqlen_k"] // 1024
    paged = "paged %d" % row["page_size"] if row["page_size"] else "contig"
    sq = row.get("seqlen_q", 1)
    return "%d/%d b%d %dk%s %s" % (row["heads_q"], row["heads_kv"],
                                   row["batch"], kib,
                                   " Sq%d" % sq if sq > 1 else "", paged)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("grid", help="a decode grid JSON with 'configs' "
                        "(or .json.xz)")
    parser.add_argument("--table", default=os.path.join(
        here, "..", "..", "specs", "dispatch", "nvptx.json"))
    parser.add_argument("--rule", choices=["table", "wide"], default="table")
    parser.add_argument("--sms", type=int, default=132)
    parser.add_argument("--d", type=int, default=128)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--mask", default="none")
    parser.add_argument("--within", type=float, default=1.05)
    parser.add_argument("--pinned-times", action="store_true",
                        help="time the plan's configuration by its pinned "
                        "twin where the run has one: before the bench's 2 ms "
                        "warm-up, the plan, timed first in each row, ran 5-20%% "
                        "slow on 8-10 us calls")
    args = parser.parse_args()
    opener = lzma.open if args.grid.endswith(".xz") else open
    grid = json.load(opener(args.grid, "rt"))
    table = json.load(open(args.table))

    print("| row | MiB | plan: tile, parts | µs | best configuration | µs "
          "| plan/best |")
    print("|---|---|---|---|---|---|---|")
    good = same = 0
    for row in grid["rows"]:
        tile, n, packed = plan_for(row, table, args.rule == "table", args)
        config = config_name(tile, packed)
        same += config == run_plan_config(row) and n == row["plan_splits"]
        ms = measured(row, config, n, args.pinned_times)
        times = [(c["ms"], c["config"], c["num_splits"])
                 for c in row["configs"]]
        times.append((row["plan_ms"], run_plan_config(row),
                      row["plan_splits"]))
        best_ms, best_config, best_n = min(times)
        ratio = ms / best_ms if ms else math.inf
        good += ratio <= args.within
        print("| %s | %g | %s n%d | %s | %s n%d | %.1f | %.2f%s |" % (
            label(row), row["kv_mib"], short(config), n,
            "%.1f" % (ms * 1e3) if ms else "not measured",
            short(best_config), best_n, best_ms * 1e3, ratio,
            "" if ratio <= args.within else " **miss**"))
    print("\nrule '%s': %d of %d rows within %.0f%% of the best" % (
        args.rule, good, len(grid["rows"]), (args.within - 1) * 100))
    # A check of the arithmetic: on a run of the same rule every row agrees.
    print("the run's own plan took this rule's tile and parts on %d of %d "
          "rows" % (same, len(grid["rows"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
