// Causal attention restated through mask_mod, for bench/sparsity: the key is
// visible when it is not after the query (the built-in mask=causal).
bool mask_mod(int b, int h, int q, int k) { return k <= q; }
