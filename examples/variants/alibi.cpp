// ALiBi (Press et al.) for 8 heads, causal: head h's slope is
// 2^(-8 (h + 1) / 8), and the score drops linearly with distance.
float score_mod(float score, int b, int h, int q, int k) {
  float slope = std::exp2(-float(h + 1));
  return score - slope * float(q - k);
}

bool mask_mod(int b, int h, int q, int k) { return k <= q; }
