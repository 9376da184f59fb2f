// src/formats/text_lexer.hpp -- tokens of the text IR, with line/column positions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rlx::ir::detail {

struct Token {
  enum class Kind : uint8_t {
    End,
    Ident,  ///< names, keywords, enum values, dtypes; also inf, -inf, nan
    Int,    ///< integer literal (may be negative)
    Float,  ///< literal with '.' or an exponent
    String, ///< "..." with escapes resolved
    Bytes,  ///< x"00ff" (text holds the hex digits)
    Ref,    ///< %N (i holds N)
    At,
    Question,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Equals,
    Colon,
    Hash,
  };
  Kind kind = Kind::End;
  std::string text; ///< identifier, decoded string, or the literal's spelling
  int64_t i = 0;
  double f = 0;
  uint32_t line = 1, col = 1;
};

std::string_view token_kind_name(Token::Kind k);
/// A short description of a token for messages: `'='`, `identifier 'foo'`, `end of input`.
std::string describe(const Token& t);

class Lexer {
public:
  Lexer(std::string_view text, std::string_view source) : text_(text), source_(source) {}
  Token next();
  std::string_view source() const { return source_; }
  /// Throw rlx::Error(Parse) "<source>:<line>:<col>: <message>".
  [[noreturn]] void error_at(uint32_t line, uint32_t col, const std::string& message) const;

private:
  char peek(std::size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  void advance(std::size_t n = 1);
  void skip_space_and_comments();
  Token lex_number(Token t);
  Token lex_string(Token t);

  std::string_view text_;
  std::string_view source_;
  std::size_t pos_ = 0;
  uint32_t line_ = 1, col_ = 1;
};

/// Length of the valid UTF-8 sequence starting at s (1-4), or 0 when invalid or truncated.
std::size_t utf8_sequence_length(std::string_view s);
/// Whether the whole string is valid UTF-8.
bool is_valid_utf8(std::string_view s);
/// "..." with \" \\ \n \t \r and \xNN escapes (bytes of invalid UTF-8 and control characters).
std::string quote_string(std::string_view s);
/// The shortest text that reads back as v (as an f32 when `f32`), kept recognisable as a float:
/// "1.0", "0.125", "nan", "-inf" (src/formats/text_print.cpp).
std::string format_number(double v, bool f32);

} // namespace rlx::ir::detail
