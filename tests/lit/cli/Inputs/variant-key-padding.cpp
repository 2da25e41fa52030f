// A key-padding mask read from a run-time tensor: sequence b sees key k
// where element b * 1100 + k of tensor slot 0 is above 0.5.
bool mask_mod(int b, int h, int q, int k) {
  return fmhajit_tensor(0, b * 1100L + k) > 0.5f;
}
