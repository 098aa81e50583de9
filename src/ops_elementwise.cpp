// libhidet: the ops layer's definitions (compiled mode): the element-wise operators.
#include "hidet/ops/impl/elementwise.ipp"
