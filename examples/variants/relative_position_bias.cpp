// A relative-position bias (T5-style, as a formula rather than a table):
// the score drops with log-distance between query and key, one rate per
// head, and stops dropping past 128 tokens.
float score_mod(float score, int b, int h, int q, int k) {
  float distance = std::fmin(float(abs(q - k)), 128.0f);
  float rate = 0.125f * float(h + 1);
  return score - rate * std::log2(1.0f + distance);
}
