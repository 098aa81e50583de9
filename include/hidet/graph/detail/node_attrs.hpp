// A recorded node's attributes read back from their printed form ("stride=[1, 1], groups=1"), and
// the operators that graph passes rebuild from them on other inputs (a convolution in another
// precision or layout, an attention with another scale). Internal: included by the graph layer's
// .ipp files and tests, not by public headers.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hidet/ops/attention.hpp"
#include "hidet/ops/conv.hpp"

namespace hidet::graph::detail {

/// The value of `key` in printed attributes "a=1, b=[2, 3], c=x" ("" when absent).
inline std::string attr_text(const std::string &attrs, const std::string &key) {
  std::size_t pos = 0;
  while (pos < attrs.size()) {
    std::size_t eq = attrs.find('=', pos);
    if (eq == std::string::npos) break;
    std::string name = attrs.substr(pos, eq - pos);
    std::size_t end = eq + 1;
    if (end < attrs.size() && attrs[end] == '[')
      end = attrs.find(']', end) + 1;
    else
      end = std::min(attrs.find(',', end), attrs.size());
    if (name == key) return attrs.substr(eq + 1, end - eq - 1);
    pos = attrs.find_first_not_of(", ", end);
    if (pos == std::string::npos) break;
  }
  return "";
}
/// "[2, 2]" -> {2, 2}.
inline std::vector<std::int64_t> attr_ints(const std::string &attrs, const std::string &key) {
  std::vector<std::int64_t> out;
  std::string t = attr_text(attrs, key);
  for (std::size_t i = 0; i < t.size();) {
    if (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '-') {
      std::size_t used = 0;
      out.push_back(std::stoll(t.substr(i), &used));
      i += used;
    } else {
      ++i;
    }
  }
  return out;
}

/// A recorded Conv2d's (or Conv2dNhwc's) attributes.
struct ConvAttrs {
  std::vector<std::int64_t> stride, padding, dilation;
  std::int64_t groups = 1;

  explicit ConvAttrs(const std::string &attrs)
      : stride(attr_ints(attrs, "stride")), padding(attr_ints(attrs, "padding")),
        dilation(attr_ints(attrs, "dilation")), groups(attr_ints(attrs, "groups").at(0)) {}

  /// The convolution with these attributes of other operands, channels-last when `nhwc`, with
  /// the epilogue `e` (and its `extras`) when given.
  Tensor apply(const Tensor &x, const Tensor &w, const std::optional<Tensor> &bias,
               bool nhwc = false, const std::shared_ptr<const ops::Epilogue> &e = nullptr,
               const std::vector<Tensor> &extras = {}) const {
    return nhwc ? ops::conv2d_nhwc(x, w, bias, stride, padding, dilation, groups, e, extras)
                : ops::conv2d(x, w, bias, stride, padding, dilation, groups, e, extras);
  }
};

/// An inference BatchNorm node (inputs x, running mean, running variance, then weight and bias as
/// its attributes say) as a per-channel affine map y = x * scale + shift, computed on the host in
/// double precision from its constant inputs (no kernel to compile per channel count); none when
/// an input is not a constant or the attributes do not match the inputs.
struct BatchNormFold {
  std::vector<double> scale, shift;
};
inline std::optional<BatchNormFold> batch_norm_fold(const Operator &bn) {
  const std::string &a = bn.attrs();
  const auto &in = bn.inputs();
  const bool has_w = attr_text(a, "weight") == "1", has_b = attr_text(a, "bias") == "1";
  if (in.size() != std::size_t(3 + has_w + has_b) || attr_text(a, "eps").empty()) return std::nullopt;
  for (std::size_t i = 1; i < in.size(); ++i)
    if (in[i].is_symbolic()) return std::nullopt;
  const double eps = std::stod(attr_text(a, "eps"));
  const std::vector<double> mean = in[1].to_double_vector(), var = in[2].to_double_vector();
  const std::vector<double> gamma = has_w ? in[3].to_double_vector() : std::vector<double>();
  const std::vector<double> beta = has_b ? in[3 + std::size_t(has_w)].to_double_vector() : std::vector<double>();
  BatchNormFold f{std::vector<double>(mean.size()), std::vector<double>(mean.size())};
  for (std::size_t c = 0; c < mean.size(); ++c) {
    f.scale[c] = 1.0 / std::sqrt(var[c] + eps) * (has_w ? gamma[c] : 1.0);
    f.shift[c] = (has_b ? beta[c] : 0.0) - mean[c] * f.scale[c];
  }
  return f;
}

/// An attention node rebuilt on other inputs from a recorded node's attributes (`attrs`:
/// is_causal, scale; the layout is `heads_last`), for passes that replace one.
inline Tensor attention_like(const std::string &attrs, const Tensor &q, const Tensor &k,
                             const Tensor &v, const std::optional<Tensor> &mask, bool heads_last,
                             std::optional<double> scale = std::nullopt) {
  if (std::string sc = attr_text(attrs, "scale"); !scale && !sc.empty()) scale = std::stod(sc);
  bool causal = attr_text(attrs, "is_causal") == "true";
  return heads_last ? ops::scaled_dot_product_attention_heads_last(q, k, v, mask, causal, scale)
                    : ops::scaled_dot_product_attention(q, k, v, mask, causal, scale);
}

} // namespace hidet::graph::detail
