// libhidet: the transforms layer's definitions (compiled mode).
