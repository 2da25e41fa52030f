//===- HostAmx.cpp - The host products on AMX tiles (AMX-BF16) ------------===//
#include "ir/targets/HostAmx.h"
#include "ir/Loops.h"
#include "ir/targets/HostTranspose.h"
#include "llvm/IR/IntrinsicsX86.h"

using namespace fmhajit;
using namespace llvm;

namespace {
/// Every tile register holds 16 rows of 64 bytes: 16 x 16 fp32
/// accumulators, 16 x 32 bf16 of A', or 16 pairs of rows of 16 columns of
/// B'. One shape keeps LLVM's one tile configuration per kernel valid for
/// every product in it; K is padded to a multiple of 32 with zeros for that.
constexpr unsigned kRows = 16;
constexpr unsigned kRowBytes = 64;
constexpr unsigned kLanes = 16;    ///< fp32 per AVX-512 vector
constexpr unsigned kKPerStep = 32; ///< bf16 of K per tdpbf16ps

class AmxEmitter {
public:
  AmxEmitter(IRBuilderBase &b, const AmxProduct &p)
      : b(b), p(p), kPadded(alignTo(p.K, kKPerStep)),
        f32Vec(FixedVectorType::get(b.getFloatTy(), kLanes)),
        bf16Vec(FixedVectorType::get(b.getBFloatTy(), kLanes)) {}

  Value *leftBuffer() {
    return entryAlloca(b, b.getBFloatTy(), "amx.a", 64, p.M * kPadded);
  }
  Value *rightBuffer() {
    return entryAlloca(b, b.getBFloatTy(), "amx.b", 64, kPadded * p.N);
  }
  void packLeft(Value *left);
  void packRight(Value *right);
  void packLeftFromRows(Value *left, AmxRowFn row);
  void packRightFromRows(Value *right, AmxRowFn row);
  void multiply(Value *left, Value *right);

private:
  Value *i16(unsigned v) { return b.getInt16(static_cast<uint16_t>(v)); }
  Value *i64(uint64_t v) { return b.getInt64(v); }
  Value *f32At(Value *base, Value *index) {
    return b.CreateInBoundsGEP(b.getFloatTy(), base, index);
  }
  Value *bf16At(Value *base, Value *index) {
    return b.CreateInBoundsGEP(b.getBFloatTy(), base, index);
  }
  Value *loadF32(Value *base, Value *index) {
    return b.CreateAlignedLoad(f32Vec, f32At(base, index), Align(4));
  }
  void storeBf16(Value *base, Value *index, Value *x) {
    b.CreateAlignedStore(x, bf16At(base, index), Align(2));
  }
  Value *toBf16(Value *x) { return b.CreateFPTrunc(x, bf16Vec); }
  /// kLanes bf16 at element \p index of the bf16 row at \p row.
  Value *loadBf16(Value *row, Value *index) {
    return b.CreateAlignedLoad(bf16Vec, bf16At(row, index), Align(2));
  }
  /// Zero rows of K past p.K, up to kPadded, in B' (pairs of N).
  void padRightRows(Value *right);
  /// (x0, y0, x1, y1, ...): the pairs of one row of B'.
  Value *interleave(Value *x, Value *y) {
    SmallVector<int, 32> mask;
    for (unsigned l = 0; l < kLanes; ++l) {
      mask.push_back(l);
      mask.push_back(l + kLanes);
    }
    return b.CreateShuffleVector(x, y, mask);
  }
  Value *tileLoad(Value *ptr, uint64_t strideBytes) {
    return b.CreateIntrinsic(
        Intrinsic::x86_tileloadd64_internal, {},
        {i16(kRows), i16(kRowBytes), ptr, i64(strideBytes)});
  }

  IRBuilderBase &b;
  const AmxProduct &p;
  unsigned kPadded;
  FixedVectorType *f32Vec, *bf16Vec;
};
} // namespace

// A'[m][k] from rows of K (strideK 1, as loaded), or from a buffer whose
// rows run along m (a transposed Scores tile): 16 x 16 blocks transposed in
// registers. K's padding is zero.
void AmxEmitter::packLeft(Value *left) {
  auto rowStart = [&](Value *m) { return b.CreateMul(m, i64(kPadded)); };
  if (p.strideK == 1) {
    emitFor(b, i64(0), p.mEnd, i64(1), "amx.a", [&](Value *m) {
      Value *from = b.CreateMul(m, i64(p.strideM));
      emitFor(b, i64(0), i64(p.K), i64(kLanes), "amx.a.k", [&](Value *k0) {
        storeBf16(left, b.CreateAdd(rowStart(m), k0),
                  toBf16(loadF32(p.a, b.CreateAdd(from, k0))));
      });
    });
  } else {
    assert(p.strideM == 1 && "A' is either k- or m-contiguous");
    emitFor(b, i64(0), p.mEnd, i64(kLanes), "amx.at", [&](Value *m0) {
      emitFor(b, i64(0), i64(p.K), i64(kLanes), "amx.at.k", [&](Value *k0) {
        SmallVector<Value *, 16> rows;
        for (unsigned l = 0; l < kLanes; ++l) {
          Value *k = b.CreateAdd(k0, i64(l));
          rows.push_back(
              loadF32(p.a, b.CreateAdd(b.CreateMul(k, i64(p.strideK)), m0)));
        }
        SmallVector<Value *, 16> cols = transposeSquare(b, rows);
        for (unsigned l = 0; l < kLanes; ++l)
          storeBf16(left, b.CreateAdd(rowStart(b.CreateAdd(m0, i64(l))), k0),
                    toBf16(cols[l]));
      });
    });
  }
  if (kPadded == p.K)
    return;
  Value *zero = Constant::getNullValue(bf16Vec);
  emitFor(b, i64(0), p.mEnd, i64(1), "amx.a.pad", [&](Value *m) {
    for (unsigned k = p.K; k < kPadded; k += kLanes)
      storeBf16(left, b.CreateAdd(rowStart(m), i64(k)), zero);
  });
}

// B'[k][n] as pairs: row kp holds (B'[2kp][n], B'[2kp+1][n]) for each n, the
// two rows rounded and interleaved; padding rows of K are zero.
void AmxEmitter::packRight(Value *right) {
  Value *pairRow = i64(2 * p.N);
  emitFor(b, i64(0), i64(p.K / 2), i64(1), "amx.b", [&](Value *kp) {
    Value *even = b.CreateMul(b.CreateMul(kp, i64(2)), i64(p.N));
    Value *odd = b.CreateAdd(even, i64(p.N));
    emitFor(b, i64(0), p.nEnd, i64(kLanes), "amx.b.n", [&](Value *n0) {
      Value *pair = interleave(toBf16(loadF32(p.bRows, b.CreateAdd(even, n0))),
                               toBf16(loadF32(p.bRows, b.CreateAdd(odd, n0))));
      storeBf16(right,
                b.CreateAdd(b.CreateMul(kp, pairRow), b.CreateMul(n0, i64(2))),
                pair);
    });
  });
  padRightRows(right);
}

void AmxEmitter::padRightRows(Value *right) {
  Value *zero = Constant::getNullValue(bf16Vec);
  for (unsigned kp = p.K / 2; kp < kPadded / 2; ++kp)
    emitFor(b, i64(0), i64(2 * p.N), i64(kLanes), "amx.b.pad", [&](Value *e) {
      storeBf16(right, b.CreateAdd(i64(kp * 2 * p.N), e), zero);
    });
}

// Each row of A' is a row in memory, copied, then K's zero padding.
void AmxEmitter::packLeftFromRows(Value *left, AmxRowFn row) {
  Value *zero = Constant::getNullValue(bf16Vec);
  emitFor(b, i64(0), i64(p.M), i64(1), "amx.a.rows", [&](Value *m) {
    Value *from = row(m);
    Value *to = bf16At(left, b.CreateMul(m, i64(kPadded)));
    for (unsigned k = 0; k < p.K; k += kLanes)
      storeBf16(to, i64(k), loadBf16(from, i64(k)));
    for (unsigned k = p.K; k < kPadded; k += kLanes)
      storeBf16(to, i64(k), zero);
  });
}

// Row kp of B' interleaves rows 2kp and 2kp + 1 in memory.
void AmxEmitter::packRightFromRows(Value *right, AmxRowFn row) {
  emitFor(b, i64(0), i64(p.K / 2), i64(1), "amx.b.rows", [&](Value *kp) {
    Value *even = row(b.CreateMul(kp, i64(2)));
    Value *odd = row(b.CreateAdd(b.CreateMul(kp, i64(2)), i64(1)));
    Value *to = bf16At(right, b.CreateMul(kp, i64(2 * p.N)));
    for (unsigned n = 0; n < p.N; n += kLanes)
      storeBf16(to, i64(2 * n),
                interleave(loadBf16(even, i64(n)), loadBf16(odd, i64(n))));
  });
  padRightRows(right);
}

// Blocks of rb x cb accumulator tiles; the block's operand tiles are loaded
// just before the products that use them, so at most 8 tiles are live.
void AmxEmitter::multiply(Value *left, Value *right) {
  unsigned rb = amxBlockRows(p.M) / kRows, cb = amxBlockCols(p.N) / kLanes;
  uint64_t accStride = p.N * 4, leftStride = kPadded * 2, rightStride = p.N * 4;
  emitFor(b, i64(0), p.nEnd, i64(cb * kLanes), "amx.n", [&](Value *n0) {
    emitFor(b, i64(0), p.mEnd, i64(rb * kRows), "amx.m", [&](Value *m0) {
      auto accPtr = [&](unsigned r, unsigned c) {
        Value *m = b.CreateAdd(m0, i64(r * kRows));
        Value *n = b.CreateAdd(n0, i64(c * kLanes));
        return f32At(p.acc, b.CreateAdd(b.CreateMul(m, i64(p.N)), n));
      };
      SmallVector<Value *, 4> acc;
      for (unsigned r = 0; r < rb; ++r)
        for (unsigned c = 0; c < cb; ++c)
          acc.push_back(p.accumulate ? tileLoad(accPtr(r, c), accStride)
                                     : b.CreateIntrinsic(
                                           Intrinsic::x86_tilezero_internal, {},
                                           {i16(kRows), i16(kRowBytes)}));
      for (unsigned k0 = 0; k0 < kPadded; k0 += kKPerStep) {
        SmallVector<Value *, 2> a, bt;
        for (unsigned r = 0; r < rb; ++r) {
          Value *m = b.CreateAdd(m0, i64(r * kRows));
          a.push_back(tileLoad(
              bf16At(left, b.CreateAdd(b.CreateMul(m, i64(kPadded)), i64(k0))),
              leftStride));
        }
        for (unsigned c = 0; c < cb; ++c) {
          Value *n = b.CreateAdd(n0, i64(c * kLanes));
          Value *index =
              b.CreateAdd(i64(k0 / 2 * 2 * p.N), b.CreateMul(n, i64(2)));
          bt.push_back(tileLoad(bf16At(right, index), rightStride));
        }
        for (unsigned r = 0; r < rb; ++r)
          for (unsigned c = 0; c < cb; ++c)
            acc[r * cb + c] =
                b.CreateIntrinsic(Intrinsic::x86_tdpbf16ps_internal, {},
                                  {i16(kRows), i16(kRowBytes), i16(kRowBytes),
                                   acc[r * cb + c], a[r], bt[c]});
      }
      for (unsigned r = 0; r < rb; ++r)
        for (unsigned c = 0; c < cb; ++c)
          b.CreateIntrinsic(Intrinsic::x86_tilestored64_internal, {},
                            {i16(kRows), i16(kRowBytes), accPtr(r, c),
                             i64(accStride), acc[r * cb + c]});
    });
  });
}

unsigned fmhajit::amxBlockRows(unsigned M) {
  return M % (2 * kRows) == 0 ? 2 * kRows : kRows;
}

unsigned fmhajit::amxBlockCols(unsigned N) {
  return N % (2 * kLanes) == 0 ? 2 * kLanes : kLanes;
}

Value *fmhajit::amxLeftBuffer(IRBuilderBase &b, const AmxProduct &p) {
  return AmxEmitter(b, p).leftBuffer();
}

Value *fmhajit::amxRightBuffer(IRBuilderBase &b, const AmxProduct &p) {
  return AmxEmitter(b, p).rightBuffer();
}

void fmhajit::emitAmxPackLeft(IRBuilderBase &b, const AmxProduct &p,
                              Value *left) {
  AmxEmitter(b, p).packLeft(left);
}

void fmhajit::emitAmxPackRight(IRBuilderBase &b, const AmxProduct &p,
                               Value *right) {
  AmxEmitter(b, p).packRight(right);
}

void fmhajit::emitAmxPackLeftFromRows(IRBuilderBase &b, const AmxProduct &p,
                                      Value *left, AmxRowFn row) {
  AmxEmitter(b, p).packLeftFromRows(left, row);
}

void fmhajit::emitAmxPackRightFromRows(IRBuilderBase &b, const AmxProduct &p,
                                       Value *right, AmxRowFn row) {
  AmxEmitter(b, p).packRightFromRows(right, row);
}

void fmhajit::emitAmxMultiply(IRBuilderBase &b, const AmxProduct &p,
                              Value *left, Value *right) {
  assert(p.M % kRows == 0 && p.N % kLanes == 0 && p.K % kLanes == 0 &&
         "AMX products take multiples of 16");
  AmxEmitter(b, p).multiply(left, right);
}
