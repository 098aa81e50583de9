// The operator library: compute definitions, the auto-scheduler and eager operators on
// hidet::Tensor. Aggregate header.
#pragma once

#include "hidet/ops/cache.hpp"
#include "hidet/ops/compute.hpp"
#include "hidet/ops/conv.hpp"
#include "hidet/ops/create.hpp"
#include "hidet/ops/elementwise.hpp"
#include "hidet/ops/epilogue.hpp"
#include "hidet/ops/fuse.hpp"
#include "hidet/ops/matmul.hpp"
#include "hidet/ops/norm.hpp"
#include "hidet/ops/op_kind.hpp"
#include "hidet/ops/pool.hpp"
#include "hidet/ops/reduce.hpp"
#include "hidet/ops/scatter.hpp"
#include "hidet/ops/schedule.hpp"
#include "hidet/ops/sort.hpp"
#include "hidet/ops/task.hpp"
#include "hidet/ops/tensor_methods.hpp"
#include "hidet/ops/transform.hpp"
#include "hidet/ops/tuning.hpp"
#include "hidet/ops/attention.hpp"
