// GPT-2's byte-level BPE tokenizer (docs/tokenizer.md): the GPT-2
// pre-tokenisation pattern (run by PCRE2 with JavaScript's \s), the
// byte-to-unicode mapping and the merge ranks of encoder.json / vocab.bpe
// (Hugging Face's vocab.json / merges.txt). Ids match the npm package
// gpt-3-encoder@1.1.4 and Hugging Face `tokenizers` on the tested inputs.
#ifndef LOCKSTEP_TOKENIZER_BPE_H_
#define LOCKSTEP_TOKENIZER_BPE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep {

class Tokenizer {
 public:
  // GPT-2's vocabulary: 256 byte tokens, 50,000 merges, <|endoftext|>.
  static constexpr int32_t kVocabSize = 50257;
  static constexpr int32_t kEndOfText = 50256;
  static constexpr std::string_view kEndOfTextText = "<|endoftext|>";

  // Loads dir/encoder.json and dir/vocab.bpe. Both files' SHA-256 digests
  // are pinned (GPT-2's published files); a missing, unreadable, altered or
  // malformed file throws lockstep::Error naming the file.
  static Tokenizer load(const std::string& dir);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // Token ids of any bytes (total: invalid UTF-8 is accepted, see
  // docs/tokenizer.md; decode(encode(s)) == s for every s). With
  // special_endoftext, each literal "<|endoftext|>" becomes token 50256 and
  // the text between occurrences is encoded separately; without it (the
  // default) the literal is encoded as plain text (7 tokens). Thread-safe.
  // Inputs over 2 GiB - 1 bytes throw lockstep::Error.
  std::vector<int32_t> encode(std::string_view text,
                              bool special_endoftext = false) const;

  // The pre-tokens of text (the GPT-2 pattern's matches; views into text,
  // which they tile). encode() is byte-level BPE applied to each of them.
  std::vector<std::string_view> pretokenize(std::string_view text) const;

  // The bytes of the tokens, concatenated (not necessarily valid UTF-8 for
  // an arbitrary id sequence). Throws lockstep::Error for an id outside
  // [0, 50257), naming its position.
  std::string decode(std::span<const int32_t> ids) const;

  // The bytes of one token; throws lockstep::Error outside [0, 50257).
  const std::string& token_bytes(int32_t id) const;

  int32_t vocab_size() const { return kVocabSize; }

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_TOKENIZER_BPE_H_
