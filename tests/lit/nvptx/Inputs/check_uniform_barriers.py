"""Checks that every block barrier (bar.sync, barrier.sync) of a PTX kernel
is reached by every thread or none: no barrier may lie between a branch
whose predicate depends on the thread (%tid, %laneid, or a value computed
from them) and that branch's join (its immediate post-dominator). A barrier
there is reached by some warps and not others, and the block hangs.

Values are followed through registers to a fixed point (a register
reassigned in a loop keeps its taint); a load from a thread-dependent
address is thread-dependent, as is any shared-memory load. Prints one line
per barrier found inside a thread-dependent branch, then
"uniform barriers: N of M" (N barriers outside such branches, M in all).
Usage: check_uniform_barriers.py FILE.ptx"""
import re, sys

BARRIER = re.compile(r"^\s*(@!?%\w+\s+)?(bar\.sync|barrier\.sync|bar\.red|barrier\.red)\b")
LABEL = re.compile(r"^(\$?[\w$]+):")
BRANCH = re.compile(r"^\s*(@(!?)(%\w+)\s+)?bra(\.uni)?\s+(\$?[\w$]+);")
REG = re.compile(r"%[A-Za-z_]\w*")
THREAD_SPECIALS = {"%tid", "%laneid", "%warpid"}


def body_lines(text):
    """The kernel's instruction and label lines, without comments."""
    out = []
    for line in text.splitlines():
        line = line.split("//")[0].rstrip()
        if not line.strip() or line.strip().startswith("."):
            continue
        if line.strip() in ("{", "}"):
            continue
        out.append(line.strip())
    return out


def blocks_of(lines):
    """[(label, [instructions])] split at labels and after branches/returns."""
    blocks, current, label = [], [], "entry"
    for line in lines:
        m = LABEL.match(line)
        if m:
            if current or label == "entry":
                blocks.append((label, current))
            label, current = m.group(1), []
            continue
        current.append(line)
        if BRANCH.match(line) or line.startswith(("ret", "exit")) or \
                re.match(r"^@!?%\w+\s+(ret|exit)", line):
            blocks.append((label, current))
            label, current = "%s.%d" % (label, len(blocks)), []
    blocks.append((label, current))
    return blocks


def taint(lines):
    """Registers whose value may differ between the threads of a block."""
    tainted = set()
    changed = True
    while changed:
        changed = False
        for line in lines:
            if LABEL.match(line) or BRANCH.match(line):
                continue
            text = re.sub(r"^@!?%\w+\s+", "", line)
            parts = text.split(None, 1)
            if len(parts) < 2:
                continue
            op, args = parts
            regs = REG.findall(args)
            if not regs:
                continue
            # Destinations: the first operand, or a {..} group first.
            dests = REG.findall(args.split("}")[0]) if args.startswith("{") \
                else [regs[0]]
            sources = [r for r in regs if r not in dests] if \
                args.startswith("{") else regs[1:]
            dependent = any(s in tainted or s.split(".")[0] in THREAD_SPECIALS
                            for s in sources) or \
                any(s in THREAD_SPECIALS for s in
                    re.findall(r"%\w+", args))
            if op.startswith(("ld.shared", "ldmatrix", "atom", "shfl")):
                dependent = True
            if op.startswith("ld") and any(s in tainted for s in sources):
                dependent = True
            if dependent:
                for d in dests:
                    if d not in tainted:
                        tainted.add(d)
                        changed = True
    return tainted


def successors(blocks):
    index = {label: i for i, (label, _) in enumerate(blocks)}
    succ = []
    for i, (label, insts) in enumerate(blocks):
        s = []
        last = insts[-1] if insts else ""
        m = BRANCH.match(last)
        ends = last.startswith(("ret", "exit"))
        if m:
            s.append(index[m.group(5)])
            if m.group(1) and i + 1 < len(blocks):
                s.append(i + 1)
        elif not ends and i + 1 < len(blocks):
            s.append(i + 1)
        succ.append(s)
    return succ


def post_dominators(succ):
    n = len(succ)
    exits = [i for i in range(n) if not succ[i]]
    everything = set(range(n))
    pdom = [set([i]) if i in exits else set(everything) for i in range(n)]
    changed = True
    while changed:
        changed = False
        for i in reversed(range(n)):
            if i in exits:
                continue
            new = set.intersection(*(pdom[s] for s in succ[i])) | {i}
            if new != pdom[i]:
                pdom[i], changed = new, True
    return pdom


def region(start, join, succ):
    """Blocks reachable from \p start's successors before \p join."""
    seen, work = set(), list(succ[start])
    while work:
        b = work.pop()
        if b == join or b in seen:
            continue
        seen.add(b)
        work.extend(succ[b])
    return seen


def main():
    text = open(sys.argv[1]).read()
    lines = body_lines(text[text.index(".entry"):])
    tainted = taint(lines)
    blocks = blocks_of(lines)
    succ = successors(blocks)
    pdom = post_dominators(succ)
    barriers = [(i, k) for i, (_, insts) in enumerate(blocks)
                for k, line in enumerate(insts) if BARRIER.match(line)]
    bad = set()
    for i, (label, insts) in enumerate(blocks):
        m = BRANCH.match(insts[-1]) if insts else None
        if not m or not m.group(1) or m.group(3) not in tainted:
            continue
        # The join: the nearest strict post-dominator, which every other
        # post-dominates (so its own set is the largest).
        strict = pdom[i] - {i}
        join = max(strict, key=lambda b: len(pdom[b])) if strict else None
        for b in region(i, join, succ):
            for k, line in enumerate(blocks[b][1]):
                if BARRIER.match(line) and (b, k) not in bad:
                    bad.add((b, k))
                    print("barrier in %s inside the thread-dependent branch "
                          "on %s in %s" % (blocks[b][0], m.group(3), label))
    print("uniform barriers: %d of %d" % (len(barriers) - len(bad),
                                          len(barriers)))


main()
