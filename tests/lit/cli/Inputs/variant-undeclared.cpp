float score_mod(float s, int b, int h, int q, int k) { return s + nope; }
