// libhidet: the backend layer's definitions (compiled mode).
