float score_mod(float s, int b, int h, int q, int k) {
  float biased = s + 1.0f;
  return biased + nope;
}
