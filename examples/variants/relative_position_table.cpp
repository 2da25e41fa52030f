// A learned relative-position bias (T5, Swin): each head adds a bias that
// depends on the distance q - k, looked up in a table the run gives
// (tensor slot 0). Row h of the table holds 2 * 128 + 1 biases, for
// q - k = -128 .. 128; farther keys share the row's ends. A head past the
// table's last row reads 0 (an index outside a tensor reads 0).
float score_mod(float score, int b, int h, int q, int k) {
  const int maxDistance = 128;
  const long rowLength = 2 * maxDistance + 1;
  int distance = min(max(q - k, -maxDistance), maxDistance);
  return score + fmhajit_tensor(0, h * rowLength + distance + maxDistance);
}
