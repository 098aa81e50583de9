// Hidet Script: write CUDA kernels as C++ code. Aggregate header.
#pragma once

#include "hidet/lang/builder.hpp"
#include "hidet/lang/control.hpp"
#include "hidet/lang/cuda.hpp"
#include "hidet/lang/expr.hpp"
#include "hidet/lang/mapping.hpp"
#include "hidet/lang/module.hpp"
#include "hidet/lang/types.hpp"
#include "hidet/lang/var.hpp"
#include "hidet/lang/primitives/half.hpp"
#include "hidet/lang/primitives/hopper.hpp"
#include "hidet/lang/primitives/memory.hpp"
#include "hidet/lang/primitives/mma.hpp"
