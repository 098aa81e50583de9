// libhidet: the C ABI (hidet/c_api.h) over hidet::Model.
#include "hidet/impl/c_api.ipp"
