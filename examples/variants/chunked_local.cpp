// Chunked local attention (Llama 4): the sequence is cut into chunks of
// 128 tokens; a token sees the earlier tokens of its own chunk only.
bool mask_mod(int b, int h, int q, int k) {
  const int chunk = 128;
  return q / chunk == k / chunk && k <= q;
}
