// Law tests for the data layouts of hidet/ir/layouts.hpp: every law is checked over the whole
// domain against an independent reference written here with plain integer arithmetic.
#include <doctest/doctest.h>

#include <functional>
#include <set>

#include "hidet/ir/layouts.hpp"
#include "hidet/lang/types.hpp"

using namespace hidet;
using namespace hidet::ir;
using Index = std::vector<std::int64_t>;

namespace {

/// Calls f(index) for every index of `shape`, row-major.
void for_each_index(const Index &shape, const std::function<void(const Index &)> &f) {
  Index idx(shape.size(), 0);
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  for (std::int64_t c = 0; c < n; ++c) {
    std::int64_t r = c;
    for (std::size_t k = shape.size(); k-- > 0;) idx[k] = r % shape[k], r /= shape[k];
    f(idx);
  }
}

std::int64_t numel(const Index &s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

/// Checks that `l` maps its domain one-to-one onto [0, numel).
void check_bijection(const Layout &l) {
  auto shape = const_shape(l);
  std::set<std::int64_t> seen;
  for_each_index(shape, [&](const Index &i) {
    auto o = offset_of(l, i);
    CHECK(o >= 0);
    CHECK(o < numel(shape));
    seen.insert(o);
  });
  CHECK(std::int64_t(seen.size()) == numel(shape));
}

const std::vector<Index> kShapes = {{1}, {7}, {3, 5}, {1, 6}, {4, 1}, {2, 3, 4}, {2, 1, 3, 2}};

} // namespace

TEST_CASE("row_major and column_major are bijections with the reference strides") {
  for (auto &s : kShapes) {
    CAPTURE(s.size());
    auto rm = row_major(s), cm = column_major(s);
    check_bijection(rm);
    check_bijection(cm);
    CHECK(storage_size_of(rm) == numel(s));
    CHECK(storage_size_of(cm) == numel(s));
    for_each_index(s, [&](const Index &i) {
      std::int64_t r = 0, c = 0;
      for (std::size_t k = 0; k < s.size(); ++k) r = r * s[k] + i[k];
      for (std::size_t k = s.size(); k-- > 0;) c = c * s[k] + i[k];
      CHECK(offset_of(rm, i) == r);
      CHECK(offset_of(cm, i) == c);
    });
  }
}

TEST_CASE("strided is the dot product; its size covers the largest offset") {
  Index shape{3, 4, 2}, st{1, 5, 40};
  auto l = strided(shape, st);
  std::int64_t max_off = 0;
  for_each_index(shape, [&](const Index &i) {
    std::int64_t dot = i[0] * st[0] + i[1] * st[1] + i[2] * st[2];
    CHECK(offset_of(l, i) == dot);
    max_off = std::max(max_off, dot);
  });
  CHECK(storage_size_of(l) == max_off + 1);
  CHECK(storage_size_of(strided(Index{0, 3}, Index{3, 1})) == 0);
}

TEST_CASE("composition: h(c) = a(c / shape_b) * size_b + b(c mod shape_b)") {
  std::vector<std::pair<Layout, Layout>> cases = {
      {row_major(2, 3), row_major(4, 2)},
      {column_major(3, 2), row_major(2, 5)},
      {row_major(2, 2), column_major(3, 4)},
      {local(2, 3), row_major(2, 2)},
      {strided(Index{2, 2}, Index{1, 7}), column_major(2, 3)},
  };
  for (auto &[a, b] : cases) {
    auto h = a * b;
    auto sa = const_shape(a), sb = const_shape(b);
    CHECK(const_shape(h) == Index{sa[0] * sb[0], sa[1] * sb[1]});
    CHECK(storage_size_of(h) == storage_size_of(a) * storage_size_of(b));
    auto nb = storage_size_of(b);
    for_each_index(const_shape(h), [&](const Index &c) {
      Index q{c[0] / sb[0], c[1] / sb[1]}, r{c[0] % sb[0], c[1] % sb[1]};
      CHECK(offset_of(h, c) == offset_of(a, q) * nb + offset_of(b, r));
    });
  }
}

TEST_CASE("composition of row-majors is the row-major of the interleaved product shape") {
  // (row_major(a0, a1) * row_major(b0, b1))(i, j) = row_major(a0, a1, b0, b1)(i/b0, j/b1, i%b0, j%b1)
  for (Index ab : {Index{2, 3, 4, 5}, Index{1, 4, 3, 1}, Index{3, 3, 2, 2}}) {
    auto h = row_major(ab[0], ab[1]) * row_major(ab[2], ab[3]);
    auto flat = row_major(ab);
    check_bijection(h);
    for_each_index(const_shape(h), [&](const Index &c) {
      Index p{c[0] / ab[2], c[1] / ab[3], c[0] % ab[2], c[1] % ab[3]};
      CHECK(offset_of(h, c) == offset_of(flat, p));
    });
  }
}

TEST_CASE("composition is associative") {
  auto a = row_major(2, 1), b = column_major(2, 3), c = row_major(3, 2);
  auto l = (a * b) * c, r = a * (b * c);
  CHECK(const_shape(l) == const_shape(r));
  CHECK(storage_size_of(l) == storage_size_of(r));
  for_each_index(const_shape(l), [&](const Index &i) { CHECK(offset_of(l, i) == offset_of(r, i)); });
}

TEST_CASE("local: every worker keeps its own copy; local * row_major is a register tile") {
  auto l = local(4, 8);
  CHECK(storage_size_of(l) == 1);
  for_each_index({4, 8}, [&](const Index &i) { CHECK(offset_of(l, i) == 0); });
  // A warp-tile view: 2x2 workers each holding a 4x4 tile; every worker's tile has 16 slots.
  auto tile = local(2, 2) * row_major(4, 4);
  CHECK(const_shape(tile) == Index{8, 8});
  CHECK(storage_size_of(tile) == 16);
  for_each_index({8, 8}, [&](const Index &i) { CHECK(offset_of(tile, i) == (i[0] % 4) * 4 + i[1] % 4); });
}

TEST_CASE("concatenation: (a + b)(i, j) = a(i) * size_b + b(j)") {
  auto a = column_major(2, 3), b = row_major(4);
  auto c = a + b;
  CHECK(const_shape(c) == Index{2, 3, 4});
  CHECK(storage_size_of(c) == 24);
  check_bijection(c);
  for_each_index({2, 3, 4}, [&](const Index &i) {
    CHECK(offset_of(c, i) == offset_of(a, {i[0], i[1]}) * 4 + offset_of(b, {i[2]}));
  });
  // row_major(a) + row_major(b) == row_major(a ++ b)
  auto rr = row_major(2, 3) + row_major(4, 5);
  for_each_index({2, 3, 4, 5}, [&](const Index &i) { CHECK(offset_of(rr, i) == offset_of(row_major(2, 3, 4, 5), i)); });
}

TEST_CASE("swizzle: the reference formula, a permutation of each row, and of the base offsets") {
  struct Case {
    Index shape;
    int dim, regards, log_step;
  };
  for (auto cs : {Case{{8, 8}, 1, 0, 0}, Case{{8, 8}, 0, 1, 0}, Case{{16, 4}, 1, 0, 1}, Case{{32, 8}, 1, 0, 2},
                  Case{{4, 2, 8}, 2, 0, 0}}) {
    auto base = row_major(cs.shape);
    auto s = swizzle(base, cs.dim, cs.regards, cs.log_step);
    CHECK(storage_size_of(s) == storage_size_of(base));
    check_bijection(s);
    for_each_index(cs.shape, [&](const Index &i) {
      Index j = i;
      std::int64_t r = i[std::size_t(cs.regards)] >> cs.log_step;
      j[std::size_t(cs.dim)] = i[std::size_t(cs.dim)] ^ (r % cs.shape[std::size_t(cs.dim)]);
      CHECK(offset_of(s, i) == offset_of(base, j));
    });
    if (cs.shape.size() == 2 && cs.dim == 1) {
      // every row keeps its own offsets: a permutation within the row
      for (std::int64_t row = 0; row < cs.shape[0]; ++row) {
        std::set<std::int64_t> offs;
        for (std::int64_t col = 0; col < cs.shape[1]; ++col) offs.insert(offset_of(s, {row, col}));
        CHECK(*offs.begin() == row * cs.shape[1]);
        CHECK(*offs.rbegin() == row * cs.shape[1] + cs.shape[1] - 1);
      }
    }
  }
}

TEST_CASE("swizzled f16 tile: 16-byte vectors stay contiguous and 8 rows hit 8 distinct bank groups") {
  // A 64x64 f16 tile: 8 vectors of 8 halves (16 bytes) per row. Swizzle the vector grid, then
  // compose with one vector.
  auto tile = swizzle(row_major(64, 8), 1) * row_major(1, 8);
  CHECK(const_shape(tile) == Index{64, 64});
  check_bijection(tile);
  for (std::int64_t r = 0; r < 64; ++r)
    for (std::int64_t v = 0; v < 8; ++v) {
      auto first = offset_of(tile, {r, v * 8});
      CHECK(first % 8 == 0); // aligned to 16 bytes
      for (std::int64_t k = 1; k < 8; ++k) CHECK(offset_of(tile, {r, v * 8 + k}) == first + k);
    }
  // ldmatrix reads one vector column from 8 consecutive rows: a row of 128 bytes spans all 32
  // banks, so vectors land in 8 distinct 16-byte bank groups exactly when (offset / 8) % 8 differ.
  for (std::int64_t r0 = 0; r0 < 64; r0 += 8)
    for (std::int64_t v = 0; v < 8; ++v) {
      std::set<std::int64_t> groups;
      for (std::int64_t r = r0; r < r0 + 8; ++r) groups.insert(offset_of(tile, {r, v * 8}) / 8 % 8);
      CHECK(groups.size() == 8);
    }
  // Without the swizzle, the same access is an 8-way conflict.
  auto plain = row_major(64, 64);
  std::set<std::int64_t> groups;
  for (std::int64_t r = 0; r < 8; ++r) groups.insert(offset_of(plain, {r, 0}) / 8 % 8);
  CHECK(groups.size() == 1);
}

TEST_CASE("constant indices give constant offsets; symbolic ones give index arithmetic") {
  auto l = swizzle(row_major(8, 8), 1) * row_major(1, 8);
  auto c = l->offset({int32(3), int32(17)});
  std::int64_t v;
  REQUIRE(as_const_int(c, v));
  CHECK(v == offset_of(l, {3, 17}));
  auto i = make_var(scalar_type(dtypes::i32), "i"), j = make_var(scalar_type(dtypes::i32), "j");
  auto e = row_major(4, 8)->offset({i, j});
  CHECK(e.is<BinaryNode>());
  CHECK(dtype_of(e->type) == dtypes::i32);
  VarBindings env{{i.get(), 3.0}, {j.get(), 5.0}};
  CHECK(*try_evaluate(e, env) == 29.0);
  // i64 indices give i64 offsets
  auto k = make_var(scalar_type(dtypes::i64), "k");
  auto e64 = (row_major(4, 8) * column_major(2, 2))->offset({k, i});
  CHECK(dtype_of(e64->type) == dtypes::i64);
  // index 0 on a row_major drops out entirely
  CHECK(row_major(4, 8)->offset({int32(0), j}).same_as(j));
}

TEST_CASE("symbolic dims: row_major over a variable") {
  auto n = make_var(scalar_type(dtypes::i32), "n");
  auto l = row_major(std::vector<Expr>{int32(4), n});
  CHECK(l->str() == "row_major(4, n)");
  auto i = make_var(scalar_type(dtypes::i32), "i"), j = make_var(scalar_type(dtypes::i32), "j");
  VarBindings env{{n.get(), 10.0}, {i.get(), 2.0}, {j.get(), 7.0}};
  CHECK(*try_evaluate(l->offset({i, j}), env) == 27.0);
  CHECK(*try_evaluate(l->storage_size(), env) == 40.0);
  CHECK_THROWS_AS(offset_of(l, {1, 1}), Error);
}

TEST_CASE("equality and hash are consistent") {
  std::vector<Layout> ls = {row_major(4, 8),
                            column_major(4, 8),
                            strided(Index{4, 8}, Index{8, 1}),
                            local(4, 8),
                            row_major(2, 2) * row_major(2, 4),
                            row_major(2, 2) * row_major(2, 4),
                            row_major(4) + row_major(8),
                            swizzle(row_major(4, 8), 0),
                            swizzle(row_major(4, 8), 0, 1, 1)};
  for (auto &a : ls)
    for (auto &b : ls) {
      if (a->equals(*b)) CHECK(a->hash() == b->hash());
      CHECK(a->equals(*b) == b->equals(*a));
    }
  CHECK(ls[0]->equals(*ls[2])); // row_major(4, 8) is strided([4, 8], [8, 1])
  CHECK(!ls[0]->equals(*ls[1]));
  CHECK(!ls[0]->equals(*ls[3]));
  CHECK(ls[4]->equals(*ls[5]));
  CHECK(!ls[4]->equals(*ls[0])); // same shape, different layout
  CHECK(!ls[7]->equals(*ls[8]));
  CHECK(!row_major(4, 8)->equals(*row_major(8, 4)));
}

TEST_CASE("str() is readable") {
  CHECK(row_major(4, 8)->str() == "row_major(4, 8)");
  CHECK(column_major(2, 3)->str() == "column_major(2, 3)");
  CHECK(strided(Index{3, 4}, Index{1, 3})->str() == "strided([3, 4], [1, 3])");
  CHECK(local(2, 2)->str() == "local(2, 2)");
  CHECK((local(2, 2) * row_major(4, 4))->str() == "local(2, 2) * row_major(4, 4)");
  CHECK((row_major(2) + column_major(3, 4))->str() == "row_major(2) + column_major(3, 4)");
  CHECK(((row_major(2) + row_major(3)) * row_major(2, 2))->str() == "(row_major(2) + row_major(3)) * row_major(2, 2)");
  CHECK(swizzle(row_major(8, 8), 1)->str() == "swizzle(row_major(8, 8), dim=1, regards_dim=0, log_step=0)");
  CHECK(offset_table(column_major(2, 3)) == "0 2 4\n1 3 5\n");
  CHECK(offset_table(swizzle(row_major(4, 4), 1)) == " 0  1  2  3\n 5  4  7  6\n10 11  8  9\n15 14 13 12\n");
}

TEST_CASE("bad layouts are user errors at the caller's line") {
  CHECK_THROWS_WITH_AS(row_major(2, 3) * row_major(4), doctest::Contains("ranks differ (2 vs 1)"), DSLError);
  int line = 0;
  try {
    line = __LINE__, (void)swizzle(row_major(4, 6), 1);
    FAIL("expected a DSLError");
  } catch (const DSLError &e) {
    CHECK(std::string(e.what()).find("extent 6, which is not a power of two") != std::string::npos);
    CHECK(e.loc().line == unsigned(line));
  }
  CHECK_THROWS_WITH_AS(swizzle(row_major(2, 4, 8), 1), doctest::Contains("regards_dim can only be omitted"), DSLError);
  CHECK_THROWS_WITH_AS(swizzle(row_major(4, 4), 1, 1), doctest::Contains("must be distinct"), DSLError);
  CHECK_THROWS_WITH_AS(strided(Index{2, 2}, Index{1}), doctest::Contains("2 but 1 strides"), DSLError);
  CHECK_THROWS_WITH_AS(row_major(Index{3, -1}), doctest::Contains("dimension -1 is negative"), DSLError);
  CHECK_THROWS_AS(offset_of(row_major(2, 2), {1}), Error);
}

TEST_CASE("TensorSpec::with_layout rejects a layout of another shape, at the user's line") {
  auto ok = f16[64][64].with_layout(swizzle(row_major(64, 8), 1) * row_major(1, 8));
  CHECK(ok.layout());
  int line = 0;
  try {
    line = __LINE__, (void)f32[4][8].with_layout(row_major(8, 4));
    FAIL("expected a DSLError");
  } catch (const DSLError &e) {
    std::string m = e.what();
    CHECK(m.find("layout row_major(8, 4) has shape [8, 4] but the tensor (f32) has shape [4, 8]") != std::string::npos);
    CHECK(m.find("test_layouts.cpp:") != std::string::npos);
    CHECK(e.loc().line == unsigned(line));
  }
  CHECK_THROWS_WITH_AS(f32[4][8].with_layout(row_major(4, 8, 1)), doctest::Contains("has shape [4, 8, 1]"), DSLError);
}
