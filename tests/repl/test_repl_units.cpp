// tests/repl/test_repl_units.cpp -- rlx-repl's parts that need no clang: cutting input into
// cells, planning how a cell runs, and the value printer of rlx_repl_prelude.hpp.
#include "cells.hpp"
#include "rlx_repl_prelude.hpp"

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

namespace {

using namespace rlx::repl;

/// Feed `lines` one at a time; return after which line the cell was first complete (1-based),
/// or 0 when it never was.
int complete_after(const std::vector<std::string>& lines) {
  CellSplitter s;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    s.add_line(lines[i]);
    if (s.complete()) return int(i + 1);
  }
  return 0;
}

} // namespace

TEST_CASE("a line with balanced brackets is a whole cell") {
  CHECK(complete_after({"Tensor x = ones({2, 3});"}) == 1);
  CHECK(complete_after({"x.sum(-1)"}) == 1);
  CHECK(complete_after({"int a[3] = {1, 2, 3};"}) == 1);
}

TEST_CASE("a cell goes on until every bracket is closed") {
  CHECK(complete_after({"auto f = rlx::jit([](Tensor t) {", "  return t * 2;", "});"}) == 3);
  CHECK(complete_after({"int g(int a,", "      int b) { return a + b; }"}) == 2);
  CHECK(complete_after({"std::vector<int> v = {", "1, 2,", "3", "};"}) == 4);
  CHECK(complete_after({"void f() {", "  if (true) {", "  }"}) == 0);
}

TEST_CASE("brackets inside strings, characters and comments do not count") {
  CHECK(complete_after({R"(std::string s = "{[(";)"}) == 1);
  CHECK(complete_after({R"(char c = '{';)"}) == 1);
  CHECK(complete_after({R"(char c = '\'';  int x = (1);)"}) == 1);
  CHECK(complete_after({R"(std::string s = "a \" { b";)"}) == 1);
  CHECK(complete_after({"int x = 1; // {"}) == 1);
  CHECK(complete_after({"int x = /* { */ 1;"}) == 1);
  CHECK(complete_after({"/* a comment", " { still a comment", "*/ int y = 2;"}) == 3);
}

TEST_CASE("raw string literals may span lines and hold anything") {
  CHECK(complete_after({R"T(auto s = R"x(one { two)x";)T"}) == 1);
  CHECK(complete_after({R"T(auto s = R"(line one {)T", R"T(line ")" two)";)T"}) == 2);
  CHECK(complete_after({R"T(auto s = u8R"--(a)" b)--";)T"}) == 1);
}

TEST_CASE("digit separators are not character literals") {
  CHECK(complete_after({"long n = 1'000'000; int v[2] = {1, 2};"}) == 1);
  CHECK(complete_after({"double d = 0x1'0p+1'0; auto f = [] { return 1; };"}) == 1);
}

TEST_CASE("preprocessor lines are whole cells and their brackets do not count") {
  CHECK(complete_after({"#include <vector>"}) == 1);
  CHECK(complete_after({"#define OPEN {"}) == 1);
  CHECK(complete_after({"#define TWICE(x) \\", "  ((x) * 2)"}) == 2);
}

TEST_CASE("a backslash at the end of a line continues the cell") {
  CHECK(complete_after({"int x = 1 + \\", "2;"}) == 2);
}

TEST_CASE("a closer that matches nothing ends the cell so that clang reports it") {
  CHECK(complete_after({"int x = (1 + 2));"}) == 1);
  CHECK(complete_after({"}"}) == 1);
  CHECK(complete_after({"int y = (1 + 2];"}) == 1);
}

TEST_CASE("an unclosed cell says what is open, and where") {
  CellSplitter s;
  s.add_line("void f() {");
  s.add_line("  int a = (1 +");
  CHECK_FALSE(s.complete());
  CHECK(s.unclosed() == "'(' opened on line 2 of the cell is not closed");
  s.clear();
  s.add_line("/* never closed");
  CHECK(s.unclosed() == "a block comment is not closed");
  s.clear();
  s.add_line(R"T(auto s = R"(never closed)T");
  CHECK(s.unclosed() == "a raw string literal is not closed");
}

TEST_CASE("blank and comment-only text is a blank cell") {
  CellSplitter s;
  s.add_line("   ");
  CHECK(s.blank());
  s.add_line("// only a comment");
  CHECK(s.blank());
  CHECK(s.complete());
  s.add_line("x");
  CHECK_FALSE(s.blank());
}

TEST_CASE("a cell ending in an expression prints it; statements and assignments do not") {
  CHECK(plan_cell("x").expression == "x");
  CHECK(plan_cell("x.sum(-1)").expression == "x.sum(-1)");
  CHECK(plan_cell("a == b").expression == "a == b");
  CHECK(plan_cell("a <= b").expression == "a <= b");
  CHECK(plan_cell("a != b").expression == "a != b");
  CHECK(plan_cell("x;").expression.empty());
  CHECK(plan_cell("void f() {}").expression.empty());
  CHECK(plan_cell("y = x * 2").expression.empty());
  CHECK(plan_cell("y += 2").expression.empty());
  CHECK(plan_cell("n <<= 2").expression.empty());
  CHECK(plan_cell("#include <cmath>").expression.empty());
  CHECK(plan_cell("f([](int a = 1) { return a; })").expression == "f([](int a = 1) { return a; })");
}

TEST_CASE("statements before a trailing expression run first") {
  CellPlan p = plan_cell("Tensor y = x * 2; y.sum()");
  CHECK(p.statements == "Tensor y = x * 2;");
  CHECK(p.expression == " y.sum()");
  p = plan_cell("#include <cmath>\nstd::sqrt(2.0)");
  CHECK(p.statements == "#include <cmath>");
  CHECK(p.expression == "\nstd::sqrt(2.0)");
  p = plan_cell("int a = 1; // the answer\na + 41 // printed");
  CHECK(p.expression == " // the answer\na + 41 // printed");
}

TEST_CASE("a cell without its final semicolon gets one") {
  CHECK(terminated("int x = 3") == "int x = 3;");
  CHECK(terminated("int x = 3 // three") == "int x = 3; // three");
  CHECK(terminated("int x = 3; // three") == "int x = 3; // three");
  CHECK(terminated("struct A {}\n") == "struct A {};\n");
  CHECK(terminated("#include <vector>") == "#include <vector>");
}

TEST_CASE("variables declared with auto are found at the start of top-level statements") {
  CHECK(auto_declarations("auto f = rlx::jit([](Tensor t) { return t; });") ==
        std::vector<std::size_t>{0});
  CHECK(auto_declarations("int a = 1; auto b = 2;\n  auto c = [] { auto d = 1; };") ==
        std::vector<std::size_t>{11, 25});
  CHECK(auto_declarations("#include <map>\nauto m = std::map<int, int>{};") ==
        std::vector<std::size_t>{15});
  CHECK(auto_declarations("auto [a, b] = std::pair{1, 2};").empty());
  CHECK(auto_declarations("automatic = 1; x = auto_thing;").empty());
  CHECK(auto_declarations("f(auto_x); // auto y = 1;").empty());
}

TEST_CASE("meta commands start with a colon and a letter; :: is C++") {
  CHECK(is_meta_command(":help"));
  CHECK(is_meta_command("  :timing on"));
  CHECK_FALSE(is_meta_command("::rlx::ones({2})"));
  CHECK_FALSE(is_meta_command("x ? 1 : 2"));
}

TEST_CASE("a notebook cell's text is cut into cells, each with its first line") {
  std::string unclosed;
  int unclosed_line = 0;
  std::vector<InputCell> cells =
      split_cells("int a = 1;\n\n// a comment\nvoid f()\n{\n  a = 2;\n}\n"
                  ":timing on\nf(); a\n",
                  unclosed, unclosed_line);
  REQUIRE(cells.size() == 4);
  CHECK(cells[0].text == "int a = 1;");
  CHECK(cells[0].line == 1);
  CHECK(cells[1].text == "void f()\n{\n  a = 2;\n}"); // the comment alone was a blank cell
  CHECK(cells[1].line == 4);
  CHECK(cells[2].meta);
  CHECK(cells[2].text == ":timing on");
  CHECK(cells[2].line == 8);
  CHECK(cells[3].text == "f(); a");
  CHECK(cells[3].line == 9);
  CHECK(unclosed.empty());
}

TEST_CASE("a notebook cell that ends inside a cell says what is open and where it began") {
  std::string unclosed;
  int unclosed_line = 0;
  std::vector<InputCell> cells =
      split_cells("int b = 2;\nint g() {\n  return b;", unclosed, unclosed_line);
  REQUIRE(cells.size() == 1);
  CHECK(cells[0].text == "int b = 2;");
  CHECK(unclosed == "'{' opened on line 1 of the cell is not closed");
  CHECK(unclosed_line == 2);
}

TEST_CASE("values print as rlx and Python would print them") {
  CHECK(repr(rlx::tensor({1.f, 2.5f})) == "tensor([1.0000, 2.5000], f32[2])");
  CHECK(repr(42) == "42");
  CHECK(repr(-7L) == "-7");
  CHECK(repr(0.1) == "0.1");
  CHECK(repr(2.0) == "2.0");
  CHECK(repr(1e20) == "1e+20");
  CHECK(repr(0.1f) == "0.1");
  CHECK(repr(true) == "true");
  CHECK(repr('a') == "'a'");
  CHECK(repr('\'') == R"('\'')");
  CHECK(repr(std::string("say \"hi\"\n")) == R"("say \"hi\"\n")");
  CHECK(repr("text") == R"("text")");
  CHECK(repr(nullptr) == "nullptr");
  CHECK(repr(static_cast<const char*>(nullptr)) == "nullptr");
  int i = 0;
  CHECK(repr(&i).starts_with("(int *) 0x"));
  CHECK(repr(std::vector<int64_t>{2, 3}) == "[2, 3]");
  CHECK(repr(std::pair<int, double>{1, 0.5}) == "(1, 0.5)");
  CHECK(repr(std::map<std::string, int>{{"a", 1}}) == R"({"a": 1})");
  CHECK(repr(std::optional<int>{}) == "nullopt");
  CHECK(repr(rlx::ones({2, 3}).shape()) == "f32[2,3]");
  CHECK(repr(rlx::DType::F32) == "f32");
  CHECK(repr(rlx::Backend::Jit) == "rlx::Backend::Jit");
}

TEST_CASE("a value of a type without a printer prints its type") {
  struct Opaque {};
  CHECK(repr(Opaque{}).starts_with("<"));
  CHECK(repr(Opaque{}).find("Opaque") != std::string::npos);
}

TEST_CASE("the comma trick wraps values and leaves void expressions empty") {
  int v = 5;
  auto shown = (v, NoValue{});
  CHECK(&shown.value == &v);
  auto nothing = (void(), NoValue{});
  CHECK(std::is_same_v<decltype(nothing), NoValue>);
}

TEST_CASE("statements with a lambda are moved into a function called at once, whole") {
  // Each cell, as it is wrapped (function numbers count from 0).
  const std::pair<const char*, const char*> cases[] = {
      {"std::sort(b, e, [](int x, int y) { return x < y; });",
       "void __rlx_repl_stmt_0() { std::sort(b, e, [](int x, int y) { return x < y; }); } "
       "__rlx_repl_stmt_0();"},
      {"rlx::jit([](Tensor t) { return t; })(x);",
       "void __rlx_repl_stmt_1() { rlx::jit([](Tensor t) { return t; })(x); } "
       "__rlx_repl_stmt_1();"},
      {"[] { f(); }();", "void __rlx_repl_stmt_2() { [] { f(); }(); } __rlx_repl_stmt_2();"},
      {"v = g([](int a) { return a; });",
       "void __rlx_repl_stmt_3() { v = g([](int a) { return a; }); } __rlx_repl_stmt_3();"},
      // control statements: a lambda's body does not end them; else and do's while belong
      {"for (int& o : v) o = [o] { return o * 10; }();",
       "void __rlx_repl_stmt_4() { for (int& o : v) o = [o] { return o * 10; }(); } "
       "__rlx_repl_stmt_4();"},
      {"if (a) { f([] {}); } else { g(); }",
       "void __rlx_repl_stmt_5() { if (a) { f([] {}); } else { g(); } } __rlx_repl_stmt_5();"},
      {"do { f([] {}); } while (a);",
       "void __rlx_repl_stmt_6() { do { f([] {}); } while (a); } __rlx_repl_stmt_6();"},
  };
  int id = 0;
  for (const auto& [cell, wrapped] : cases) CHECK(wrap_lambda_statements(cell, id) == wrapped);
  CHECK(id == 7);
}

TEST_CASE("declarations, statements without lambdas and unfinished expressions stay as they are") {
  int id = 0;
  for (const char* cell : {
           "auto f = rlx::jit([](Tensor t) { return t; });",
           "Tensor y = rlx::grad([](Tensor t) { return t.sum(); })(x);",
           "int g(int a) { return [a] { return a; }(); }",
           "std::vector<int> v = {1, 2}; v.push_back(3);",
           "x[0] = 1; f(a[1]);",
           "[[maybe_unused]] int u = [] { return 1; }();",
           "rlx::jit([](Tensor t) { return t; })(x)",
           "struct S { int operator()() { return [] { return 1; }(); } };",
       })
    CHECK(wrap_lambda_statements(cell, id) == cell);
  CHECK(id == 0);
}

TEST_CASE("only the statements with lambdas of a cell are wrapped, on their own lines") {
  int id = 5;
  CHECK(wrap_lambda_statements("int a = 1;\nf([] {});\nint b = 2;", id) ==
        "int a = 1;\nvoid __rlx_repl_stmt_5() { f([] {}); } __rlx_repl_stmt_5();\nint b = 2;");
}
