// Printing: the expected strings are numpy's str(array) under np.set_printoptions(precision=2)
// (Hidet prints through numpy), written out by hand from numpy's documented rules.
#include <doctest/doctest.h>

#include <cmath>
#include <numeric>
#include <sstream>

#include "hidet/runtime/tensor.hpp"

using namespace hidet;

namespace {
std::string body(const Tensor &t) {
  std::string s = t.str();
  return s.substr(s.find('\n') + 1);
}
} // namespace

TEST_CASE("print: Hidet's tutorial example") {
  Tensor a = asarray({-0.13f, 0.24f, 0.23f, -1.3f, 0.61f, -0.54f}, {2, 3}, "cpu");
  CHECK(a.str() == "Tensor(shape=(2, 3), dtype='float32', device='cpu')\n"
                   "[[-0.13  0.24  0.23]\n"
                   " [-1.3   0.61 -0.54]]");
  std::ostringstream os;
  os << a;
  CHECK(os.str() == a.str());
}

TEST_CASE("print: the emulated device says so") {
  REQUIRE(cuda_emulated());
  Tensor a = asarray({1, 2}, {2}, "cuda");
  CHECK(a.str() == "Tensor(shape=(2,), dtype='int32', device='cuda:0 (emulator)')\n[1 2]");
  CHECK(Tensor().str() == "Tensor(undefined)");
}

TEST_CASE("print: floats round to two digits and trim zeros") {
  CHECK(body(asarray({1.0f, 2.5f, 3.14159f, -0.125f}, {4}, "cpu")) == "[ 1.    2.5   3.14 -0.12]");
  CHECK(body(asarray({1.0f, 2.0f}, {2}, "cpu")) == "[1. 2.]");
  CHECK(body(asarray({0.0f, -0.0f}, {2}, "cpu")) == "[ 0. -0.]");
  CHECK(body(asarray({0.375, 0.625, 0.005}, {3}, "cpu")) == "[0.38 0.62 0.01]");
  CHECK(body(asarray({12.5, 100.25, 7.0}, {3}, "cpu")) == "[ 12.5  100.25   7.  ]");
  CHECK(body(full({}, 2.5, dtypes::f32, "cpu")) == "2.5");
  CHECK(body(asarray({0.1, 1.0, -2.0}, {3}, dtypes::f16, "cpu")) == "[ 0.1  1.  -2. ]");
  CHECK(body(asarray({0.1, 3.0}, {2}, dtypes::bf16, "cpu")) == "[0.1 3. ]");
}

TEST_CASE("print: scientific notation for wide ranges") {
  CHECK(body(asarray({1e-5f, 1.0f}, {2}, "cpu")) == "[1.e-05 1.e+00]");
  CHECK(body(asarray({123456789.0, 1.5}, {2}, "cpu")) == "[1.23e+08 1.50e+00]");
  CHECK(body(asarray({-2e-5, 3.0}, {2}, "cpu")) == "[-2.e-05  3.e+00]");
  CHECK(body(asarray({1e100, 1e-5}, {2}, "cpu")) == "[1.e+100 1.e-005]");
}

TEST_CASE("print: nan and inf") {
  CHECK(body(asarray({NAN, 1.5f, -INFINITY}, {3}, "cpu")) == "[ nan  1.5 -inf]");
  CHECK(body(asarray({INFINITY, NAN}, {2}, "cpu")) == "[inf nan]");
}

TEST_CASE("print: integers and bools") {
  CHECK(body(asarray({1, -20, 300, 4}, {2, 2}, "cpu")) == "[[  1 -20]\n [300   4]]");
  CHECK(body(asarray({true, false, true}, {3}, "cpu")) == "[ True False  True]");
  CHECK(body(asarray({true, true}, {1, 2}, "cpu")) == "[[ True  True]]");
  CHECK(body(asarray(std::vector<std::uint64_t>{18446744073709551615ull, 0}, {2}, "cpu")) ==
        "[18446744073709551615                    0]");
  CHECK(body(asarray(std::vector<std::int8_t>{-128, 5}, {2}, "cpu")) == "[-128    5]");
  CHECK(body(asarray({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}, "cpu")) ==
        "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]");
  CHECK(body(zeros({0, 3}, dtypes::i32, "cpu")) == "[]");
}

TEST_CASE("print: long rows wrap at 75 columns") {
  std::vector<std::int32_t> v(30);
  std::iota(v.begin(), v.end(), 0);
  CHECK(body(asarray(v, {30}, "cpu")) ==
        "[ 0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 19 20 21 22 23\n"
        " 24 25 26 27 28 29]");
}

TEST_CASE("print: large tensors are summarized") {
  std::vector<std::int32_t> v(10000);
  std::iota(v.begin(), v.end(), 0);
  CHECK(body(asarray(v, {10000}, "cpu")) == "[   0    1    2 ... 9997 9998 9999]");
  Tensor m = asarray(v, {100, 100}, "cpu");
  CHECK(m.str() == "Tensor(shape=(100, 100), dtype='int32', device='cpu')\n"
                   "[[   0    1    2 ...   97   98   99]\n"
                   " [ 100  101  102 ...  197  198  199]\n"
                   " [ 200  201  202 ...  297  298  299]\n"
                   " ...\n"
                   " [9700 9701 9702 ... 9797 9798 9799]\n"
                   " [9800 9801 9802 ... 9897 9898 9899]\n"
                   " [9900 9901 9902 ... 9997 9998 9999]]");
  // The formatter only looks at the items shown: the huge middle value does not widen columns.
  v[5000] = 123456789;
  CHECK(body(asarray(v, {10000}, "cpu")) == "[   0    1    2 ... 9997 9998 9999]");
  // Exactly the threshold is not summarized; one more is.
  std::vector<float> f(1001, 0.5f);
  CHECK(body(asarray(f, {1001}, "cpu")).find("...") != std::string::npos);
  f.pop_back();
  CHECK(body(asarray(f, {1000}, "cpu")).find("...") == std::string::npos);
}

TEST_CASE("print: options") {
  Tensor a = asarray({3.14159, 2.0}, {2}, "cpu");
  set_print_options(4);
  CHECK(body(a) == "[3.1416 2.    ]");
  set_print_options(2, 3, 1);
  CHECK(body(asarray({1, 2, 3, 4, 5}, {5}, "cpu")) == "[1 ... 5]");
  set_print_options();
  CHECK(body(a) == "[3.14 2.  ]");
}
