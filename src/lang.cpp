// libhidet: the lang layer's definitions (compiled mode).
