int f(int n) { return n <= 0 ? 0 : 1 + f(n - 1); }
bool mask_mod(int b, int h, int q, int k) { return f(q) > k; }
