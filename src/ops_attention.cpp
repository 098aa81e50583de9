// libhidet: scaled dot-product attention (the flash-attention template and the composition).
#include "hidet/ops/impl/attention.ipp"
