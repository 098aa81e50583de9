// Formats the values of a host array the way numpy's array2string does with its default 'maxprec'
// float mode (which is what Hidet prints, with precision 2):
//   * floats: the shortest representation that round-trips in the element's own type, cut to
//     `precision` fractional digits (rounded half to even on the exact value), trailing zeros
//     trimmed, columns aligned on the decimal point; scientific notation when a nonzero |value|
//     is >= 1e8 or < 1e-4, or when max/min of the nonzero magnitudes exceeds 1000;
//   * integers right-aligned, bools as " True"/"False";
//   * more than `threshold` elements: only `edgeitems` items at each end of every axis, with
//     "..." between; rows wrap at `linewidth` columns.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hidet/config.hpp"
#include "hidet/ir/dtype.hpp"

namespace hidet {

/// How tensors print.
struct PrintOptions {
  int precision = 2;             ///< fractional digits of floats at most
  std::int64_t threshold = 1000; ///< summarize tensors with more elements than this
  int edgeitems = 3;             ///< items kept at each end of an axis when summarizing
  int linewidth = 75;            ///< characters per line before wrapping a row
};

/// The process-wide print options.
PrintOptions &print_options();

/// Sets the print options (Hidet's defaults: precision 2, threshold 1000, edgeitems 3).
void set_print_options(int precision = 2, std::int64_t threshold = 1000, int edgeitems = 3,
                       int linewidth = 75);

namespace runtime::detail {

/// Element i of a host array as a double.
double element_as_double(const void *data, DataType dt, std::int64_t i);

} // namespace runtime::detail

/// Formats a contiguous row-major host array of `dtype` like numpy's str(array).
std::string format_array(const void *host_data, DataType dtype,
                         const std::vector<std::int64_t> &shape,
                         const PrintOptions &opts = print_options());

} // namespace hidet

#if HIDET_HEADER_ONLY
#include "hidet/runtime/impl/tensor_print.ipp"
#endif
