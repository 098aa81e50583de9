// Definitions for hidet/runtime/tensor_print.hpp.
#pragma once

#include "hidet/runtime/tensor_print.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "hidet/util/float16.hpp"

#include "hidet/util/cold_begin.hpp"

namespace hidet {

HIDET_INLINE PrintOptions &print_options() {
  static PrintOptions opts;
  return opts;
}

HIDET_INLINE void set_print_options(int precision, std::int64_t threshold, int edgeitems,
                                    int linewidth) {
  print_options() = PrintOptions{precision, threshold, edgeitems, linewidth};
}

namespace runtime::detail {

HIDET_INLINE double element_as_double(const void *data, DataType dt, std::int64_t i) {
  auto at = [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, static_cast<const char *>(data) + i * std::int64_t(sizeof(T)), sizeof(T));
    return v;
  };
  switch (dt.code) {
  case DTypeCode::Bool:
    return at(std::uint8_t{}) != 0 ? 1.0 : 0.0;
  case DTypeCode::I8:
    return at(std::int8_t{});
  case DTypeCode::I16:
    return at(std::int16_t{});
  case DTypeCode::I32:
    return at(std::int32_t{});
  case DTypeCode::I64:
    return double(at(std::int64_t{}));
  case DTypeCode::U8:
    return at(std::uint8_t{});
  case DTypeCode::U16:
    return at(std::uint16_t{});
  case DTypeCode::U32:
    return at(std::uint32_t{});
  case DTypeCode::U64:
    return double(at(std::uint64_t{}));
  case DTypeCode::F16:
    return half_bits_to_float(at(std::uint16_t{}));
  case DTypeCode::BF16:
    return bf16_bits_to_float(at(std::uint16_t{}));
  case DTypeCode::F8E4M3:
    return f8e4m3_bits_to_float(at(std::uint8_t{}));
  case DTypeCode::F8E5M2:
    return f8e5m2_bits_to_float(at(std::uint8_t{}));
  case DTypeCode::F32:
    return at(float{});
  case DTypeCode::F64:
    return at(double{});
  }
  return 0;
}

/// Element i of an integer (or bool) host array, printed exactly.
HIDET_INLINE std::string integer_element_str(const void *data, DataType dt, std::int64_t i) {
  const char *p = static_cast<const char *>(data) + i * std::int64_t(dt.nbytes());
  auto get = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  };
  switch (dt.code) {
  case DTypeCode::I8:
    return std::to_string(get(std::int8_t{}));
  case DTypeCode::I16:
    return std::to_string(get(std::int16_t{}));
  case DTypeCode::I32:
    return std::to_string(get(std::int32_t{}));
  case DTypeCode::I64:
    return std::to_string(get(std::int64_t{}));
  case DTypeCode::U8:
    return std::to_string(get(std::uint8_t{}));
  case DTypeCode::U16:
    return std::to_string(get(std::uint16_t{}));
  case DTypeCode::U32:
    return std::to_string(get(std::uint32_t{}));
  case DTypeCode::U64:
    return std::to_string(get(std::uint64_t{}));
  default:
    return "?";
  }
}

/// The shortest decimal digits that round-trip |x| in dtype dt: x = d.ddd * 10^exp.
struct Digits {
  std::string digits; // no leading zeros (except "0" for zero)
  int exp = 0;
};

HIDET_INLINE Digits parse_scientific(const char *s) {
  Digits d;
  const char *e = std::strchr(s, 'e');
  for (const char *c = s; c != e; ++c)
    if (*c >= '0' && *c <= '9') d.digits += *c;
  d.exp = std::atoi(e + 1);
  while (d.digits.size() > 1 && d.digits.back() == '0')
    d.digits.pop_back();
  return d;
}

HIDET_INLINE Digits shortest_digits(double ax, DataType dt) {
  char buf[64];
  if (dt == dtypes::f64 || dt.is_integer() || dt.is_bool()) {
    auto r = std::to_chars(buf, buf + 63, ax, std::chars_format::scientific);
    *r.ptr = 0;
  } else if (dt == dtypes::f32) {
    auto r = std::to_chars(buf, buf + 63, float(ax), std::chars_format::scientific);
    *r.ptr = 0;
  } else {
    // f16 / bf16: the fewest significant digits that convert back to the same bits
    bool is_f16 = dt == dtypes::f16;
    std::uint16_t bits = is_f16 ? float_to_half_bits(float(ax)) : float_to_bf16_bits(float(ax));
    for (int p = 0; p < 17; ++p) {
      std::snprintf(buf, sizeof(buf), "%.*e", p, ax);
      float back = float(std::strtod(buf, nullptr));
      if ((is_f16 ? float_to_half_bits(back) : float_to_bf16_bits(back)) == bits) break;
    }
  }
  return parse_scientific(buf);
}

/// numpy's dragon4_positional(|x|, precision, unique=True, trim='.'): "int.frac" without sign.
HIDET_INLINE std::string positional_abs(double ax, DataType dt, int precision) {
  Digits d = shortest_digits(ax, dt);
  int n = int(d.digits.size());
  if (n - 1 - d.exp <= precision) {
    std::string ip, fp;
    if (d.exp >= 0) {
      ip = d.digits.substr(0, std::min(n, d.exp + 1));
      if (int(ip.size()) < d.exp + 1) ip += std::string(d.exp + 1 - ip.size(), '0');
      if (n > d.exp + 1) fp = d.digits.substr(d.exp + 1);
    } else {
      ip = "0";
      fp = std::string(-d.exp - 1, '0') + d.digits;
    }
    if (fp == "0") fp.clear();
    return ip + "." + fp;
  }
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%.*f", precision, ax);
  std::string s = buf;
  if (s.find('.') == std::string::npos) s += '.';
  while (s.back() == '0')
    s.pop_back();
  return s;
}

/// numpy's dragon4_scientific(|x|, precision, unique=True, trim='.'): mantissa parts and exponent.
HIDET_INLINE void scientific_abs(double ax, DataType dt, int precision, std::string &ip,
                                 std::string &fp, int &exp) {
  Digits d = shortest_digits(ax, dt);
  if (int(d.digits.size()) - 1 > precision) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*e", precision, ax);
    d = parse_scientific(buf);
  }
  ip = d.digits.substr(0, 1);
  fp = d.digits.substr(1);
  exp = d.exp;
}

/// Formats floats like numpy's FloatingFormat (floatmode 'maxprec', sign '-').
class FloatFormatter {
public:
  FloatFormatter(const std::vector<double> &shown, DataType dt, int precision)
      : dt_(dt), precision_(precision) {
    std::vector<double> finite;
    bool has_nonfinite = false, neginf = false;
    double max_val = 0, min_val = 0;
    bool any_nonzero = false;
    for (double v : shown) {
      if (!std::isfinite(v)) {
        has_nonfinite = true;
        if (std::isinf(v) && v < 0) neginf = true;
        continue;
      }
      finite.push_back(v);
      double a = std::fabs(v);
      if (a == 0) continue;
      max_val = any_nonzero ? std::max(max_val, a) : a;
      min_val = any_nonzero ? std::min(min_val, a) : a;
      any_nonzero = true;
    }
    if (any_nonzero && (max_val >= 1e8 || min_val < 1e-4 || max_val / min_val > 1000.0))
      exp_format_ = true;
    if (finite.empty()) {
      pad_left_ = pad_right_ = 0;
      exp_format_ = false;
    } else if (exp_format_) {
      int max_frac = 0, max_exp_len = 0;
      for (double v : finite) {
        std::string ip, fp;
        int e;
        scientific_abs(std::fabs(v), dt, precision, ip, fp, e);
        max_frac = std::max(max_frac, int(fp.size()));
        max_exp_len = std::max(max_exp_len, std::max(2, int(std::to_string(std::abs(e)).size())));
        pad_left_ = std::max(pad_left_, int(ip.size()) + (std::signbit(v) ? 1 : 0));
      }
      exp_precision_ = max_frac;
      exp_size_ = max_exp_len;
      pad_right_ = exp_size_ + 2 + exp_precision_;
    } else {
      for (double v : finite) {
        std::string s = positional_abs(std::fabs(v), dt, precision);
        auto dot = s.find('.');
        pad_left_ = std::max(pad_left_, int(dot) + (std::signbit(v) ? 1 : 0));
        pad_right_ = std::max(pad_right_, int(s.size() - dot - 1));
      }
    }
    if (has_nonfinite) {
      int offset = pad_right_ + 1;
      pad_left_ = std::max({pad_left_, 3 - offset, 3 + (neginf ? 1 : 0) - offset});
    }
  }

  std::string operator()(double v) const {
    if (!std::isfinite(v)) {
      std::string r = std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
      int width = pad_left_ + pad_right_ + 1;
      return std::string(std::max(0, width - int(r.size())), ' ') + r;
    }
    std::string sign = std::signbit(v) ? "-" : "";
    if (exp_format_) {
      std::string ip, fp;
      int e;
      scientific_abs(std::fabs(v), dt_, exp_precision_, ip, fp, e);
      fp += std::string(exp_precision_ - int(fp.size()), '0');
      std::string es = std::to_string(std::abs(e));
      es = std::string(std::max(0, exp_size_ - int(es.size())), '0') + es;
      std::string head = sign + ip;
      return std::string(std::max(0, pad_left_ - int(head.size())), ' ') + head + "." + fp + "e" +
             (e < 0 ? "-" : "+") + es;
    }
    std::string s = sign + positional_abs(std::fabs(v), dt_, precision_);
    auto dot = s.find('.');
    std::string left(std::max(0, pad_left_ - int(dot)), ' ');
    std::string right(std::max(0, pad_right_ - int(s.size() - dot - 1)), ' ');
    return left + s + right;
  }

private:
  DataType dt_;
  int precision_;
  bool exp_format_ = false;
  int pad_left_ = 0, pad_right_ = 0, exp_precision_ = 0, exp_size_ = 0;
};

/// numpy's _formatArray: nested brackets, summarization and line wrapping.
class ArrayFormatter {
public:
  ArrayFormatter(const void *data, DataType dt, const std::vector<std::int64_t> &shape,
                 const PrintOptions &opts)
      : data_(data), dt_(dt), shape_(shape), opts_(opts) {
    std::int64_t numel = 1;
    for (auto s : shape)
      numel *= s;
    summarize_ = numel > opts.threshold;
    strides_.assign(shape.size(), 1);
    for (int i = int(shape.size()) - 2; i >= 0; --i)
      strides_[i] = strides_[i + 1] * shape[i + 1];
  }

  std::string format() {
    std::vector<std::int64_t> shown;
    collect(0, 0, shown);
    if (dt_.is_float()) {
      std::vector<double> vals;
      for (auto i : shown)
        vals.push_back(element_as_double(data_, dt_, i));
      float_fmt_ = std::make_unique<FloatFormatter>(vals, dt_, opts_.precision);
    } else if (dt_.is_integer()) {
      for (auto i : shown)
        int_width_ = std::max(int_width_, integer_element_str(data_, dt_, i).size());
    }
    if (shape_.empty()) {
      if (dt_.is_bool()) return element_as_double(data_, dt_, 0) != 0 ? "True" : "False";
      return element(0);
    }
    return recurse(0, 0, " ", opts_.linewidth);
  }

private:
  std::string element(std::int64_t i) const {
    if (dt_.is_float()) return (*float_fmt_)(element_as_double(data_, dt_, i));
    if (dt_.is_bool()) return element_as_double(data_, dt_, i) != 0 ? " True" : "False";
    std::string s = integer_element_str(data_, dt_, i);
    return std::string(int_width_ - std::min(int_width_, s.size()), ' ') + s;
  }

  bool summarized(int axis) const { return summarize_ && 2 * opts_.edgeitems < shape_[axis]; }

  /// The item indices shown along `axis`, in order; -1 marks the "..." position.
  std::vector<std::int64_t> items(int axis) const {
    std::vector<std::int64_t> r;
    std::int64_t n = shape_[axis];
    if (summarized(axis)) {
      for (std::int64_t i = 0; i < opts_.edgeitems; ++i)
        r.push_back(i);
      r.push_back(-1);
      for (std::int64_t i = n - opts_.edgeitems; i < n; ++i)
        r.push_back(i);
    } else {
      for (std::int64_t i = 0; i < n; ++i)
        r.push_back(i);
    }
    return r;
  }

  void collect(int axis, std::int64_t offset, std::vector<std::int64_t> &out) const {
    if (axis == int(shape_.size())) return out.push_back(offset);
    for (auto i : items(axis))
      if (i >= 0) collect(axis + 1, offset + i * strides_[axis], out);
  }

  static void extend_line(std::string &s, std::string &line, const std::string &word, int width,
                          const std::string &prefix) {
    bool wrap = int(line.size() + word.size()) > width && line.size() > prefix.size();
    if (wrap) {
      auto end = line.find_last_not_of(' ');
      s += line.substr(0, end == std::string::npos ? 0 : end + 1) + "\n";
      line = prefix;
    }
    line += word;
  }

  std::string recurse(int axis, std::int64_t offset, const std::string &indent, int width) const {
    int axes_left = int(shape_.size()) - axis;
    if (axes_left == 0) return element(offset);
    std::string next_indent = indent + " ";
    int next_width = width - 1;
    std::vector<std::int64_t> idx = items(axis);
    std::string s;
    if (axes_left == 1) {
      int elem_width = width - 1;
      std::string line = indent;
      for (std::size_t k = 0; k < idx.size(); ++k) {
        std::string word = idx[k] < 0 ? "..."
                                      : recurse(axis + 1, offset + idx[k] * strides_[axis],
                                                next_indent, next_width);
        extend_line(s, line, word, elem_width, indent);
        if (k + 1 != idx.size()) line += " ";
      }
      s += line;
    } else {
      std::string line_sep(axes_left - 1, '\n');
      for (std::size_t k = 0; k < idx.size(); ++k) {
        std::string nested = idx[k] < 0 ? "..."
                                        : recurse(axis + 1, offset + idx[k] * strides_[axis],
                                                  next_indent, next_width);
        s += indent + nested;
        if (k + 1 != idx.size()) s += line_sep;
      }
    }
    return "[" + s.substr(indent.size()) + "]";
  }

  const void *data_;
  DataType dt_;
  std::vector<std::int64_t> shape_, strides_;
  PrintOptions opts_;
  bool summarize_ = false;
  std::unique_ptr<FloatFormatter> float_fmt_;
  std::size_t int_width_ = 0;
};

} // namespace runtime::detail

HIDET_INLINE std::string format_array(const void *host_data, DataType dtype,
                                      const std::vector<std::int64_t> &shape,
                                      const PrintOptions &opts) {
  std::int64_t numel = 1;
  for (auto s : shape)
    numel *= s;
  if (numel == 0) return "[]";
  return runtime::detail::ArrayFormatter(host_data, dtype, shape, opts).format();
}

} // namespace hidet

#include "hidet/util/cold_end.hpp"
