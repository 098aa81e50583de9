// hidet for C++: the whole library. Aggregate header.
#pragma once

#include "hidet/lang.hpp"
#include "hidet/runtime/compiled_module.hpp"
#include "hidet/runtime/device.hpp"
#include "hidet/runtime/device_errors.hpp"
#include "hidet/runtime/dim.hpp"
#include "hidet/runtime/operator.hpp"
#include "hidet/runtime/stream.hpp"
#include "hidet/runtime/tensor.hpp"
