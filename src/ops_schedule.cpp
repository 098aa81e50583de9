// libhidet: the ops layer's definitions (compiled mode): the auto-scheduler.
#include "hidet/ops/impl/schedule_common.ipp"
#include "hidet/ops/impl/schedule_transpose.ipp"
#include "hidet/ops/impl/schedule_injective.ipp"
#include "hidet/ops/impl/schedule_reduce.ipp"
#include "hidet/ops/impl/schedule_row.ipp"
#include "hidet/ops/impl/schedule_matmul.ipp"
#include "hidet/ops/impl/schedule.ipp"
