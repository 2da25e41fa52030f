// Packed sequences: 8 documents of 2048 tokens each share one sequence of
// 16384 tokens, and a token sees only the earlier tokens of its document.
static int document(int token) { return token / 2048; }

bool mask_mod(int b, int h, int q, int k) {
  return document(q) == document(k) && k <= q;
}
