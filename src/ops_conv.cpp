// libhidet: conv2d (templates, tuning, the auto-scheduled fallback).
#include "hidet/ops/impl/conv.ipp"
