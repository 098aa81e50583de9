// hidet::Dim: canonical forms (equality is structural after normalization), printing,
// simplification of division and modulo, evaluation against a brute-force reference over many
// symbol values, and the errors of unbound symbols, division by zero and bad names.
#include <doctest/doctest.h>

#include <random>

#include "hidet/error.hpp"
#include "hidet/runtime/dim.hpp"

using hidet::Dim;
using hidet::SymbolValues;

namespace {
std::int64_t fdiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
std::int64_t fmod(std::int64_t a, std::int64_t b) { return a - fdiv(a, b) * b; }

template <class F> std::string error_of(F &&f) {
  try {
    f();
  } catch (const hidet::Error &e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST_CASE("constants fold and print") {
  CHECK(Dim(3).is_constant());
  CHECK((Dim(3) + 4).value() == 7);
  CHECK(((Dim(224) + 2 * 3 - 7) / 2 + 1).value() == 112);
  CHECK((Dim(-7) / 2).value() == -4); // floor, like Python
  CHECK((Dim(-7) % 2).value() == 1);
  CHECK(Dim(0).str() == "0");
  CHECK(Dim(-5).str() == "-5");
  CHECK(hidet::max(Dim(3), Dim(9)).value() == 9);
  CHECK(hidet::min(Dim(3), Dim(9)).value() == 3);
}

TEST_CASE("canonical forms: equality and printing") {
  Dim n = Dim::symbol("n"), s = Dim::symbol("s");
  CHECK(n * s == s * n);
  CHECK((n * s).str() == "n*s");
  CHECK(2 * n - n == n);
  CHECK(n - n == Dim(0));
  CHECK((n - n).is_constant());
  CHECK((n + 1) * (n + 1) == n * n + 2 * n + 1);
  CHECK((2 * n + 1).str() == "2*n + 1");
  CHECK((1 - n).str() == "-n + 1");
  CHECK((768 * n * s).str() == "768*n*s");
  CHECK(n != s);
  CHECK(n != n + 1);
  CHECK((n * s).symbols() == std::vector<std::string>{"n", "s"});
  CHECK(!n.is_constant());
}

TEST_CASE("division and modulo simplify exactly when they may") {
  Dim n = Dim::symbol("n"), s = Dim::symbol("s");
  CHECK((4 * n) / 2 == 2 * n);
  CHECK((4 * n + 6) / 2 == 2 * n + 3);
  CHECK((2 * n + 1) / 2 == n); // floor((2n + 1) / 2) = n for every integer n
  CHECK((4 * n + 3) % 2 == Dim(1));
  CHECK((6 * n) % 3 == Dim(0));
  CHECK(n / n == Dim(1));
  CHECK(n % n == Dim(0));
  Dim h = (n + 1) / 2;
  CHECK(h.str() == "(n + 1) / 2");
  CHECK(!h.is_constant());
  CHECK((2 * h).str() == "2*((n + 1) / 2)");
  CHECK(h == (n + 1) / 2);
  CHECK((n / s).str() == "n / s");
  // A divisor of one term divides a multiple of it exactly (a reshape's -1: 768*s / (64*s)).
  CHECK((768 * s) / (64 * s) == Dim(12));
  CHECK((6 * n * s + 4 * s * h) / (2 * s) == 3 * n + 2 * h);
  CHECK((n * s) / s == n);
  CHECK((n * s) % s == Dim(0));
  CHECK(((3 * n * s) / (2 * s)).str() == "(3*n*s) / (2*s)"); // 3n/2 is not exact: an atom
  CHECK((n * s + 1) / s != n);
  CHECK(hidet::max(n, s) == hidet::max(s, n));
  CHECK(hidet::max(n, n) == n);
}

TEST_CASE("evaluation matches a brute-force reference") {
  Dim n = Dim::symbol("n"), s = Dim::symbol("s");
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<std::int64_t> val(-40, 40);
  for (int trial = 0; trial < 500; ++trial) {
    std::int64_t a = val(rng), b = val(rng), c = val(rng);
    if (c == 0) c = 3;
    SymbolValues env{{"n", a}, {"s", b}};
    CHECK((3 * n * s - 2 * n + 5).evaluate(env) == 3 * a * b - 2 * a + 5);
    CHECK(((n + c) / c).evaluate(env) == fdiv(a + c, c));
    CHECK(((2 * n + 7) / 2).evaluate(env) == fdiv(2 * a + 7, 2));
    CHECK(((4 * n + s) % c).evaluate(env) == fmod(4 * a + b, c));
    CHECK(((n * n + 1) / 3 * s).evaluate(env) == fdiv(a * a + 1, 3) * b);
    CHECK(hidet::max(n, s - 1).evaluate(env) == std::max(a, b - 1));
    CHECK(hidet::min(n * 2, s).evaluate(env) == std::min(2 * a, b));
    if (b != 0) CHECK((n / s).evaluate(env) == fdiv(a, b));
  }
}

TEST_CASE("substitute binds some symbols and keeps the others") {
  Dim n = Dim::symbol("n"), s = Dim::symbol("s");
  CHECK((n * s).substitute({{"s", 128}}) == 128 * n);
  CHECK((n * s).substitute({{"s", 128}}).str() == "128*n");
  CHECK((3 * n * s - 2 * n + 5).substitute({{"n", 2}}) == 6 * s + 1);
  CHECK((n * s + 1).substitute({{"n", 2}, {"s", 3}}).is_constant());
  CHECK((n + s).substitute({}) == n + s);
  // Division, modulo, max and min of what becomes constant fold; the rest stays symbolic.
  CHECK(((s - 1) / 2 + 1).substitute({{"s", 9}}) == Dim(5));
  CHECK(((n + s) % 7).substitute({{"s", 3}}) == (n + 3) % 7);
  CHECK(hidet::max(n, s).substitute({{"s", 4}}) == hidet::max(n, Dim(4)));
  // Substituting some symbols, then the rest, is evaluating.
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<std::int64_t> val(1, 40);
  for (int trial = 0; trial < 200; ++trial) {
    std::int64_t a = val(rng), b = val(rng);
    Dim d = (n * s + 3) / 4 + hidet::min(n, s * 2) - (n + 5) % (s + 1);
    CHECK(d.substitute({{"s", b}}).evaluate({{"n", a}}) == d.evaluate({{"n", a}, {"s", b}}));
    CHECK(d.substitute({{"n", a}}).substitute({{"s", b}}).value() == d.evaluate({{"n", a}, {"s", b}}));
  }
}

TEST_CASE("shapes") {
  Dim n = Dim::symbol("n");
  hidet::SymShape shape{n, 3, 2 * n};
  CHECK(hidet::sym_shape_str(shape) == "[n, 3, 2*n]");
  CHECK(!hidet::is_constant_shape(shape));
  CHECK(hidet::sym_numel(shape) == 6 * n * n);
  CHECK(hidet::evaluate_shape(shape, {{"n", 4}}) == std::vector<std::int64_t>{4, 3, 8});
  CHECK(hidet::constant_shape(hidet::to_sym_shape({2, 3})) == std::vector<std::int64_t>{2, 3});
  CHECK(error_of([&] { hidet::constant_shape(shape); }).find("dim 0 is n") != std::string::npos);
}

TEST_CASE("errors name the dimension and the symbol") {
  Dim n = Dim::symbol("n"), s = Dim::symbol("seq_len");
  auto e = error_of([&] { (n * s).evaluate({{"n", 2}}); });
  CHECK(e.find("n*seq_len") != std::string::npos);
  CHECK(e.find("'seq_len'") != std::string::npos);
  CHECK(error_of([&] { (n + 1).value(); }).find("n + 1 is symbolic") != std::string::npos);
  CHECK(error_of([&] { (void)(n / 0); }).find("division by zero") != std::string::npos);
  CHECK(error_of([&] { (void)(n % 0); }).find("modulo by zero") != std::string::npos);
  CHECK(error_of([&] { (n / s).evaluate({{"n", 2}, {"seq_len", 0}}); }).find("is 0") !=
        std::string::npos);
  CHECK(error_of([] { Dim::symbol("2n"); }).find("identifier") != std::string::npos);
  CHECK(error_of([] { Dim::symbol(""); }).find("identifier") != std::string::npos);
}
