// libhidet: the ir layer's definitions (compiled mode).
