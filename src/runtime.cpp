// libhidet: the runtime layer's definitions (compiled mode).
