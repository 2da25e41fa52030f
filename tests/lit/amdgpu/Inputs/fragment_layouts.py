"""A lane-by-lane model of AmdgpuMatrixTileOps' products, checked against
plain matrix products.

Each instruction is modelled from its ISA operand layout (lane l, group
h = l // m: A row l % m, B column l % m, the k each element holds, and the
row of each accumulator element); the data flow is the one the C++ emits:
S^T = K Q^T from K rows and Q rows, then O^T += V^T P^T with P^T built from
S^T's accumulators by accumulatorOperand and V^T's A operand gathered by
transposedOperand (AmdgpuMfmaTileOps.cpp, AmdgpuWmmaTileOps.cpp). If the
key orders of the two operands disagreed, O would be wrong here. The gfx11
model also checks that both lane groups hold identical A/B operands, as
that instruction requires.
"""
import math
import random

random.seed(1)


def randm(rows, cols):
    return [[random.gauss(0, 1) for _ in range(cols)] for _ in range(rows)]


def matmul(a, b):
    return [[sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))]
            for i in range(len(a))]


class Instr:
    def __init__(self, name, m, k, kl, acc, k0, acc_row, p_operand, v_operand):
        self.name, self.m, self.k, self.kl, self.acc = name, m, k, kl, acc
        self.k0, self.acc_row = k0, acc_row
        self.p_operand, self.v_operand = p_operand, v_operand

    def run(self, a, b, c):
        """The hardware: D = A B + C from per-lane operands."""
        m, k = self.m, self.k
        am = [[None] * k for _ in range(m)]
        bm = [[None] * m for _ in range(k)]
        for lane in range(2 * m):
            for e in range(self.kl):
                kk = self.k0(lane // m) + e
                for mat, i, j, x in ((am, lane % m, kk, a[lane][e]), (bm, kk, lane % m, b[lane][e])):
                    assert mat[i][j] is None or mat[i][j] == x, self.name + ": lane groups disagree"
                    mat[i][j] = x
        assert all(x is not None for row in am + bm for x in row), self.name + ": k not covered"
        d = matmul(am, bm)
        return [[c[lane][r] + d[self.acc_row(lane // m, r)][lane % m] for r in range(self.acc)]
                for lane in range(2 * m)]


def mfma(kl):
    def p_operand(acc, step, lane, everyone):
        return [acc[step * kl + e] for e in range(kl)]

    def v_operand(row, step, h):
        keys = []
        for run in range(kl // 4):
            first = 4 * h + 8 * (step * kl // 4 + run)
            keys += row[first:first + 4]
        return keys

    return Instr("mfma_32x32x%d" % (2 * kl), 32, 2 * kl, kl, 16, lambda h: h * kl,
                 lambda h, r: 8 * (r // 4) + 4 * h + r % 4, p_operand, v_operand)


def wmma(gfx12):
    def p_operand(acc, step, lane, everyone):
        if gfx12:
            return list(acc)
        partner = everyone[lane ^ 16]
        h = lane // 16
        return (list(partner) + list(acc)) if h else (list(acc) + list(partner))

    def v_operand(row, step, h):
        if gfx12:
            return row[8 * h:8 * h + 8]
        return [row[2 * (e % 8) + e // 8] for e in range(16)]

    return Instr("wmma_gfx%d" % (12 if gfx12 else 11), 16, 16, 8 if gfx12 else 16, 8,
                 (lambda h: 8 * h) if gfx12 else (lambda h: 0),
                 (lambda h, r: r + 8 * h) if gfx12 else (lambda h, r: 2 * r + h),
                 p_operand, v_operand)


def check(instr, keys, d, dv, queries):
    m, lanes = instr.m, 2 * instr.m
    q, kmat, v = randm(queries, d), randm(keys, d), randm(keys, dv)
    tiles, key_blocks, dv_blocks = queries // m, keys // m, -(-dv // m)
    zero = lambda: [[0.0] * instr.acc for _ in range(lanes)]
    s = {(i, j): zero() for i in range(key_blocks) for j in range(tiles)}
    for step in range(d // instr.k):
        col = lambda lane: step * instr.k + instr.k0(lane // m)
        for i in range(key_blocks):
            a = [[kmat[i * m + l % m][col(l) + e] for e in range(instr.kl)] for l in range(lanes)]
            for j in range(tiles):
                b = [[q[j * m + l % m][col(l) + e] for e in range(instr.kl)] for l in range(lanes)]
                s[i, j] = instr.run(a, b, s[i, j])
    want = matmul(q, [list(r) for r in zip(*kmat)])
    for (i, j), acc in s.items():
        for l in range(lanes):
            for r in range(instr.acc):
                got = acc[l][r]
                assert abs(got - want[j * m + l % m][i * m + instr.acc_row(l // m, r)]) < 1e-9
    o = {(i, j): zero() for i in range(dv_blocks) for j in range(tiles)}
    for ki in range(key_blocks):
        for step in range(m // instr.k):
            p_b = {j: [instr.p_operand(s[ki, j][l], step, l, s[ki, j]) for l in range(lanes)]
                   for j in range(tiles)}
            for i in range(dv_blocks):
                a = []
                for l in range(lanes):
                    row = min(i * m + l % m, dv - 1)  # clamped, as the C++ does
                    a.append(instr.v_operand([v[ki * m + t][row] for t in range(m)], step, l // m))
                for j in range(tiles):
                    o[i, j] = instr.run(a, p_b[j], o[i, j])
    want = matmul(want, v)
    for (i, j), acc in o.items():
        for l in range(lanes):
            for r in range(instr.acc):
                c = i * m + instr.acc_row(l // m, r)
                if c < dv:
                    assert abs(acc[l][r] - want[j * m + l % m][c]) < 1e-8, (instr.name, l, i, j, r)
    print("%s keys=%d d=%d dv=%d: ok" % (instr.name, keys, d, dv))


for instr in (mfma(4), mfma(8), wmma(False), wmma(True)):
    check(instr, 2 * instr.m, 2 * instr.k, 80, 2 * instr.m)
    check(instr, instr.m, instr.k, 48, instr.m)
