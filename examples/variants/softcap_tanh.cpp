// Soft-capping (Gemma 2): squashes every score into (-30, 30).
float score_mod(float score, int b, int h, int q, int k) {
  const float cap = 30.0f;
  return cap * std::tanh(score / cap);
}
