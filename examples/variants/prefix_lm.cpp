// Prefix-LM (T5, PaliGemma): the first 256 tokens of every sequence (the
// prompt) see each other in both directions; the rest is causal.
bool mask_mod(int b, int h, int q, int k) {
  const int prefix = 256;
  return k <= q || k < prefix;
}
