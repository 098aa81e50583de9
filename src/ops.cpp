// libhidet: the ops layer's definitions (compiled mode).
