// tests/test_text_errors.cpp -- malformed text IR gives rlx::Error with line:column, never a crash.
#include "support/check_error.hpp"

#include <rlx/all.hpp>

#include <string>

using namespace rlx;
using namespace rlx::ir;

namespace {

struct BadText {
  const char* what;
  std::string text;
  std::string message; ///< expected substring, including the position where it matters
};

const std::string kHead = "graph @g {\n  %0 = input(\"x\") : [2, 3] f32\n";

std::vector<BadText> bad_texts() {
  return {
      {"empty input", "", "<text>:1:1: expected 'graph', found end of input"},
      {"only whitespace", "  \n\t ", "expected 'graph'"},
      {"wrong keyword", "grph @g { return }", "1:1: expected 'graph', found identifier 'grph'"},
      {"missing @", "graph g { return }", "1:7: expected '@' after 'graph'"},
      {"missing name", "graph @ { return }", "expected the graph name after '@'"},
      {"missing brace", "graph @g return }", "expected '{' to open the graph body"},
      {"truncated after a node", kHead,
       "3:1: expected a node (%N = ...) or 'return', found end of input"},
      {"truncated inside a node", "graph @g {\n  %0 = input(\"x\") : [2,",
       "2:24: expected a dimension (a size or ?symbol), found end of input"},
      {"missing closing brace", kHead + "  return %0\n", "expected '}' to close the graph body"},
      {"trailing garbage", kHead + "  return %0\n}\n}", "5:1: unexpected '}' after the graph"},
      {"unknown op with a suggestion", kHead + "  %1 = relux(%0) : [2, 3] f32\n  return %1\n}",
       "3:8: unknown op 'relux' (did you mean 'relu'?)"},
      {"unknown op without a suggestion",
       kHead + "  %1 = frobnicate(%0) : [2, 3] f32\n  return %1\n}", "unknown op 'frobnicate'"},
      {"too few operands", kHead + "  %1 = add(%0) : [2, 3] f32\n  return %1\n}",
       "3:8: add takes 2 operands, got 1"},
      {"too many operands", kHead + "  %1 = relu(%0, %0) : [2, 3] f32\n  return %1\n}",
       "relu takes 1 operand, got 2"},
      {"variadic with none", kHead + "  %1 = concat(axis=0) : [2, 3] f32\n  return %1\n}",
       "concat takes at least one operand"},
      {"use before definition (cycle)",
       kHead + "  %1 = add(%0, %2) : [2, 3] f32\n  %2 = relu(%1) : [2, 3] f32\n  return %2\n}",
       "3:16: use of undefined value %2 (values must be defined before use; cycles are not "
       "allowed)"},
      {"self reference", kHead + "  %1 = relu(%1) : [2, 3] f32\n  return %1\n}",
       "use of undefined value %1"},
      {"redefinition", kHead + "  %0 = relu(%0) : [2, 3] f32\n  return %0\n}",
       "3:3: redefinition of %0"},
      {"undefined output", kHead + "  return %5\n}", "3:10: use of undefined value %5"},
      {"negative dimension", "graph @g {\n  %0 = input(\"x\") : [2, -3] f32\n  return %0\n}",
       "2:25: dimension -3 is negative"},
      {"huge dimension", "graph @g {\n  %0 = input(\"x\") : [281474976710657] f32\n  return %0\n}",
       "dimension 281474976710657 is too large"},
      {"integer beyond 64 bits",
       "graph @g {\n  %0 = input(\"x\") : [99999999999999999999] f32\n  return %0\n}",
       "integer 99999999999999999999 is out of range (64-bit)"},
      {"float beyond double", kHead + "  %1 = clamp(%0, max=1e999) : [2, 3] f32\n  return %1\n}",
       "number 1e999 is out of range"},
      {"unknown dtype", "graph @g {\n  %0 = input(\"x\") : [2] f31\n  return %0\n}",
       "unknown dtype 'f31'"},
      {"missing dtype", "graph @g {\n  %0 = input(\"x\") : [2]\n  return %0\n}",
       "3:3: unknown dtype 'return' (expected one of f32"},
      {"dims without commas", "graph @g {\n  %0 = input(\"x\") : [2 3] f32\n  return %0\n}",
       "expected ',' between dimensions, found number 3"},
      {"bad dynamic dim", "graph @g {\n  %0 = input(\"x\") : [?] f32\n  return %0\n}",
       "expected a symbol name or number after '?'"},
      {"missing type", kHead + "  %1 = relu(%0)\n  return %1\n}",
       "expected ':' before the result type"},
      {"unknown attribute", kHead + "  %1 = reduce_sum(%0, axis=[1]) : [2] f32\n  return %1\n}",
       "reduce_sum: attribute axis: unknown attribute (expected one of axes, keep_dim)"},
      {"attribute on an op without any",
       kHead + "  %1 = relu(%0, alpha=1) : [2, 3] f32\n  return %1\n}",
       "attribute alpha: unknown attribute (this op has none)"},
      {"wrong attribute type",
       kHead + "  %1 = reduce_sum(%0, axes=[\"a\"]) : [2] f32\n  return %1\n}",
       "reduce_sum: attribute axes[0]: expected an integer, got a string"},
      {"boolean expected", kHead + "  %1 = reduce_sum(%0, keep_dim=1) : [2] f32\n  return %1\n}",
       "attribute keep_dim: expected true or false, got an integer"},
      {"bad enum value",
       kHead + "  %1 = attention(%0, %0, %0, mask=Diagonal) : [2, 3] f32\n  return %1\n}",
       "unknown value 'Diagonal' (expected one of None, Causal, SlidingWindow, Custom, Bias)"},
      {"duplicate attribute",
       kHead + "  %1 = reduce_sum(%0, axes=[0], axes=[1]) : [3] f32\n  return %1\n}",
       "attribute axes: attribute given twice"},
      {"array of the wrong length",
       kHead + "  %1 = conv2d(%0, %0, stride=[1]) : [2, 3] f32\n  return %1\n}",
       "attribute stride: expected a list of 2 values, got 1"},
      {"integer attribute out of its range",
       kHead + "  %1 = clamp(%0) : [2, 3] f32\n  %2 = cast(%1, to=q8) : [2, 3] f32\n  return %2\n}",
       "unknown dtype 'q8'"},
      {"f32 attribute overflow",
       kHead + "  %1 = layer_norm(%0, %0, %0, eps=1e39) : [2, 3] f32\n  return %1\n}",
       "attribute eps: number is out of range for f32"},
      {"operand after attribute", kHead + "  %1 = add(%0, axes=1, %0) : [2, 3] f32\n  return %1\n}",
       "operands must come before attributes"},
      {"unterminated string", "graph @g {\n  %0 = input(\"x) : [2] f32\n  return %0\n}",
       "2:14: unterminated string"},
      {"unknown escape", "graph @g {\n  %0 = input(\"\\q\") : [2] f32\n  return %0\n}",
       "unknown escape '\\q'"},
      {"invalid UTF-8 in a string", "graph @g {\n  %0 = input(\"\xff\") : [2] f32\n  return %0\n}",
       "2:15: invalid UTF-8 in a string"},
      {"overlong UTF-8", "graph @g {\n  %0 = input(\"\xc0\xaf\") : [2] f32\n  return %0\n}",
       "invalid UTF-8"},
      {"UTF-8 surrogate", "graph @g {\n  %0 = input(\"\xed\xa0\x80\") : [2] f32\n  return %0\n}",
       "invalid UTF-8"},
      {"truncated UTF-8", "graph @g {\n  %0 = input(\"\xe4\xb8\") : [2] f32\n  return %0\n}",
       "invalid UTF-8"},
      {"invalid UTF-8 outside strings", "graph @g \xfe{ return }", "1:10: invalid UTF-8"},
      {"control character", "graph @g {\x01 return }", "unexpected character (byte 0x01)"},
      {"NUL byte", std::string("graph @g {\0 return }", 20), "unexpected character (byte 0x00)"},
      {"stray character", "graph @g { $ }", "1:12: unexpected character '$'"},
      {"bad value reference", "graph @g {\n  %x = input(\"x\") : [2] f32\n}",
       "expected a number after '%'"},
      {"reference beyond 32 bits", "graph @g {\n  %99999999999 = input(\"x\") : [2] f32\n}",
       "is not a valid node number"},
      {"odd hex bytes", kHead + "  %1 = constant(data=x\"abc\") : [] u8\n  return %1\n}",
       "bytes literal needs an even number of hex digits"},
      {"non-hex bytes", kHead + "  %1 = constant(data=x\"zz\") : [] u8\n  return %1\n}",
       "bytes literal x\"...\" must hold hex digits only"},
      {"label without string", kHead + "  %1 = relu(%0) : [2, 3] f32 #lbl\n  return %1\n}",
       "expected a quoted label after '#'"},
      {"deeply nested list",
       kHead + "  %1 = reduce_sum(%0, axes=" + std::string(500, '[') +
           ") : [2] f32\n  return %1\n}",
       "attribute lists are nested too deeply"},
      {"number glued to a name", "graph @g {\n  %0 = input(\"x\") : [2abc] f32\n}",
       "unexpected character after a number"},
      {"missing comma in return", kHead + "  return %0 %0\n}",
       "expected '}' to close the graph body"},
  };
}

} // namespace

TEST_CASE("text errors: every malformed input is a parse error with its position") {
  auto cases = bad_texts();
  CHECK(cases.size() >= 30);
  for (const BadText& c : cases) {
    INFO("case: " << std::string(c.what));
    test::check_error([&] { parse_text(c.text); }, ErrorKind::Parse, c.message);
  }
}

TEST_CASE("text errors: every prefix of a valid graph is rejected cleanly or accepted") {
  // Truncation at every byte must never crash or throw anything but rlx::Error.
  Graph g("trunc");
  auto x = g.input("x", Shape({Dim::dynamic(sym::kBatch), 3}, DType::F32));
  auto y = g.add_node(Op(OpKind::ReduceSum, ReduceAttrs{{1}, true}), {x},
                      Shape({Dim::dynamic(sym::kBatch), 1}, DType::F32));
  g.set_outputs({y});
  std::string text = to_text(g);
  for (std::size_t n = 0; n < text.size(); ++n) {
    INFO("prefix length " << n);
    bool threw = false;
    try {
      parse_text(std::string_view(text).substr(0, n));
    } catch (const Error& e) {
      threw = e.kind() == ErrorKind::Parse;
    }
    // Only prefixes ending inside the final whitespace after '}' may parse.
    CHECK((threw || text.substr(n).find_first_not_of(" \n") == std::string::npos));
  }
}

TEST_CASE("text errors: the source name given by the caller appears in messages") {
  test::check_error([] { parse_text("graph @g {", "model.rlx"); }, ErrorKind::Parse,
                    "model.rlx:1:11: expected a node");
}
