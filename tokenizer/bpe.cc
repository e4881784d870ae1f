#include "tokenizer/bpe.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <climits>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "formats/sha256.h"
#include "lockstep/error.h"

namespace lockstep {
namespace {

// GPT-2's published files, as shipped in data/gpt2 (data/gpt2/SHA256SUMS).
constexpr std::string_view kEncoderJsonSha256 =
    "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783";
constexpr std::string_view kVocabBpeSha256 =
    "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5";
constexpr int kNumMerges = 50000;
// Offsets and symbol indices are 32-bit: inputs up to 2 GiB - 1 bytes.
constexpr size_t kMaxInput = 0x7FFFFFFF;

// The GPT-2 pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with \s spelled out as JavaScript's \s (ECMA-262 WhiteSpace and
// LineTerminator: TAB VT FF ZWNBSP (U+FEFF) and every Zs, LF CR U+2028
// U+2029), which is what gpt-3-encoder runs. PCRE2's own \s differs: it lacks
// U+FEFF and has U+0085 and U+180E (docs/tokenizer.md).
#define LS_JS_SPACE "\\t\\n\\x0B\\f\\r\\p{Zs}\\x{2028}\\x{2029}\\x{FEFF}"
// clang-format off
constexpr const char* kPattern =
    "'s|'t|'re|'ve|'m|'ll|'d"
    "| ?\\p{L}+"
    "| ?\\p{N}+"
    "| ?[^" LS_JS_SPACE "\\p{L}\\p{N}]+"
    "|[" LS_JS_SPACE "]+(?![^" LS_JS_SPACE "])"
    "|[" LS_JS_SPACE "]+";
// clang-format on
#undef LS_JS_SPACE

// What an ill-formed byte stands for in pre-tokenisation: U+FFFD, a
// character that is neither letter, number nor space (docs/tokenizer.md).
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// GPT-2's bytes_to_unicode: the code point that stands for each byte.
std::array<uint32_t, 256> ByteToCodePoint() {
  std::array<uint32_t, 256> cp{};
  uint32_t n = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) ||
                     (b >= 174 && b <= 255);
    cp[b] = printable ? b : 256 + n++;
  }
  return cp;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The length of the well-formed UTF-8 sequence (Unicode Table 3-7: no
// overlong forms, no surrogates, nothing above U+10FFFF) at s[i], or 0 if
// none starts there.
size_t Utf8SequenceLength(const unsigned char* s, size_t n, size_t i) {
  unsigned c = s[i];
  if (c < 0x80) return 1;
  auto cont = [&](size_t k, unsigned lo, unsigned hi) {
    return i + k < n && s[i + k] >= lo && s[i + k] <= hi;
  };
  if (c < 0xC2) return 0;
  if (c < 0xE0) return cont(1, 0x80, 0xBF) ? 2 : 0;
  if (c < 0xF0) {
    unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return cont(1, lo, hi) && cont(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (c < 0xF5) {
    unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return cont(1, lo, hi) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4
                                                                         : 0;
  }
  return 0;
}

bool IsValidUtf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size(), i = 0;
  while (i < n) {
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    size_t len = Utf8SequenceLength(s, n, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// Decodes well-formed UTF-8 (a vocabulary entry) to code points.
bool DecodeUtf8(std::string_view text, std::vector<uint32_t>& cps) {
  cps.clear();
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size(), i = 0;
  while (i < n) {
    size_t len = Utf8SequenceLength(s, n, i);
    if (len == 0) return false;
    uint32_t cp = len == 1   ? s[i]
                  : len == 2 ? s[i] & 0x1F
                  : len == 3 ? s[i] & 0x0F
                             : s[i] & 0x07;
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
    cps.push_back(cp);
    i += len;
  }
  return true;
}

// Reads a whole file and checks its pinned digest.
std::string ReadPinned(const std::string& path, std::string_view sha256_hex) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("tokenizer file '" + path +
                "' is missing or unreadable (GPT-2's encoder.json and "
                "vocab.bpe ship in data/gpt2)");
  }
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  if (in.bad()) throw Error("tokenizer file '" + path + "': read error");
  std::string got = to_hex(sha256(bytes.data(), bytes.size()));
  if (got != sha256_hex) {
    throw Error("tokenizer file '" + path + "' has SHA-256 " + got +
                ", expected " + std::string(sha256_hex) +
                " (GPT-2's published file; see data/gpt2/SHA256SUMS)");
  }
  return bytes;
}

struct Merge {
  int32_t rank;
  int32_t merged;
};

uint64_t PairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) |
         static_cast<uint32_t>(b);
}

struct Pcre2CodeDeleter {
  void operator()(pcre2_code* c) const { pcre2_code_free(c); }
};
struct Pcre2MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};

}  // namespace

struct Tokenizer::Impl {
  std::vector<std::string> token_bytes;  // id -> bytes
  std::array<int32_t, 256> byte_id{};    // byte -> its one-byte token
  std::unordered_map<uint64_t, Merge> merges;
  std::unique_ptr<pcre2_code, Pcre2CodeDeleter> pattern;

  // Per-call state: the merge cache (pre-token bytes -> its ids, a span of
  // `pool`; lives for one encode call, so it is bounded by the number of
  // distinct pre-tokens of that input) and BPE scratch space.
  struct Work {
    std::unordered_map<std::string_view, std::pair<uint32_t, uint32_t>> cache;
    std::vector<int32_t> pool;
    struct Symbol {
      int32_t id, prev, next;
    };
    struct Candidate {
      int32_t rank, left, right, left_id, right_id, merged;
      bool operator>(const Candidate& o) const {
        return rank != o.rank ? rank > o.rank : left > o.left;
      }
    };
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
  };

  void Bpe(std::string_view piece, Work& w, std::vector<int32_t>& out) const;
  void EncodePiece(std::string_view piece, Work& w,
                   std::vector<int32_t>& out) const;
  // Calls fn(piece) for each pre-token of text, in order; the pieces tile
  // text.
  template <typename Fn>
  void ForEachPiece(std::string_view text, pcre2_match_data* match,
                    Fn&& fn) const;
  using MatchDataDeleter = Pcre2MatchDataDeleter;
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> NewMatchData() const;
};

// Byte-pair merging of one pre-token: repeatedly merge the adjacent pair of
// lowest rank, the leftmost first among equals. This equals GPT-2's
// encoder.py (lowest-rank pair, all its occurrences left to right, repeat)
// because every merge's parts are made by earlier merges (checked at load),
// so a merge never creates a pair that outranks the one being applied.
void Tokenizer::Impl::Bpe(std::string_view piece, Work& w,
                          std::vector<int32_t>& out) const {
  const int32_t n = static_cast<int32_t>(piece.size());
  auto& sym = w.symbols;
  auto& heap = w.heap;
  sym.resize(n);
  heap.clear();
  for (int32_t i = 0; i < n; ++i) {
    sym[i] = {byte_id[static_cast<unsigned char>(piece[i])], i - 1,
              i + 1 < n ? i + 1 : -1};
  }
  auto consider = [&](int32_t left, int32_t right) {
    auto it = merges.find(PairKey(sym[left].id, sym[right].id));
    if (it == merges.end()) return;
    heap.push_back({it->second.rank, left, right, sym[left].id, sym[right].id,
                    it->second.merged});
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i, i + 1);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    Work::Candidate c = heap.back();
    heap.pop_back();
    // Stale if either side was merged away or changed since it was pushed.
    if (sym[c.left].id != c.left_id || sym[c.left].next != c.right ||
        sym[c.right].id != c.right_id) {
      continue;
    }
    sym[c.left].id = c.merged;
    int32_t next = sym[c.right].next;
    sym[c.left].next = next;
    if (next >= 0) sym[next].prev = c.left;
    sym[c.right].id = -1;
    if (sym[c.left].prev >= 0) consider(sym[c.left].prev, c.left);
    if (next >= 0) consider(c.left, next);
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) out.push_back(sym[i].id);
}

void Tokenizer::Impl::EncodePiece(std::string_view piece, Work& w,
                                  std::vector<int32_t>& out) const {
  if (piece.size() == 1) {
    out.push_back(byte_id[static_cast<unsigned char>(piece[0])]);
    return;
  }
  auto [it, inserted] = w.cache.try_emplace(piece);
  if (inserted) {
    size_t start = w.pool.size();
    Bpe(piece, w, w.pool);
    it->second = {static_cast<uint32_t>(start),
                  static_cast<uint32_t>(w.pool.size() - start)};
  }
  const int32_t* p = w.pool.data() + it->second.first;
  out.insert(out.end(), p, p + it->second.second);
}

template <typename Fn>
void Tokenizer::Impl::ForEachPiece(std::string_view text,
                                   pcre2_match_data* match, Fn&& fn) const {
  // The regex runs on `subject`: the text itself when it is valid UTF-8,
  // else a copy with each ill-formed byte replaced by U+FFFD, with
  // `origin[k]` the offset in `text` of subject byte k.
  if (text.size() > kMaxInput) {
    throw Error("tokenizer: input of " + std::to_string(text.size()) +
                " bytes exceeds the limit of 2 GiB - 1");
  }
  std::string_view subject = text;
  std::string replaced;
  std::vector<uint32_t> origin;
  if (!IsValidUtf8(text)) {
    const auto* s = reinterpret_cast<const unsigned char*>(text.data());
    size_t n = text.size();
    for (size_t i = 0; i < n;) {
      size_t len = Utf8SequenceLength(s, n, i);
      if (len == 0) {
        replaced.append(kReplacement);
        origin.insert(origin.end(), kReplacement.size(),
                      static_cast<uint32_t>(i));
        i += 1;
      } else {
        replaced.append(text.substr(i, len));
        for (size_t k = 0; k < len; ++k) {
          origin.push_back(static_cast<uint32_t>(i + k));
        }
        i += len;
      }
    }
    origin.push_back(static_cast<uint32_t>(n));
    subject = replaced;
  }
  auto* subj = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t pos = 0;
  while (pos < subject.size()) {
    int rc = pcre2_match(pattern.get(), subj, subject.size(), pos,
                         PCRE2_NO_UTF_CHECK, match, nullptr);
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(std::string("tokenizer: PCRE2 match failed: ") +
                  reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
    // Every character matches one alternative, so matches tile the text.
    if (ov[0] != pos || ov[1] <= pos) {
      throw Error(
          "tokenizer: internal error: pre-tokens do not tile the text at "
          "byte " +
          std::to_string(pos));
    }
    size_t begin = pos, end = ov[1];
    if (!origin.empty()) begin = origin[begin], end = origin[end];
    fn(text.substr(begin, end - begin));
    pos = ov[1];
  }
}

std::unique_ptr<pcre2_match_data, Tokenizer::Impl::MatchDataDeleter>
Tokenizer::Impl::NewMatchData() const {
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> m(
      pcre2_match_data_create_from_pattern(pattern.get(), nullptr));
  if (!m) throw Error("tokenizer: out of memory");
  return m;
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& dir) {
  auto impl = std::make_unique<Impl>();
  const std::string enc_path = dir + "/encoder.json";
  const std::string bpe_path = dir + "/vocab.bpe";
  const std::string enc_text = ReadPinned(enc_path, kEncoderJsonSha256);
  const std::string bpe_text = ReadPinned(bpe_path, kVocabBpeSha256);

  const std::array<uint32_t, 256> byte_cp = ByteToCodePoint();
  std::unordered_map<uint32_t, unsigned char> cp_byte;
  for (int b = 0; b < 256; ++b) {
    cp_byte[byte_cp[b]] = static_cast<unsigned char>(b);
  }

  // encoder.json: token text (bytes spelled through bytes_to_unicode) -> id.
  nlohmann::json enc;
  try {
    enc = nlohmann::json::parse(enc_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("tokenizer file '" + enc_path + "': " + e.what());
  }
  if (!enc.is_object() || enc.size() != static_cast<size_t>(kVocabSize)) {
    throw Error("tokenizer file '" + enc_path + "': expected an object of " +
                std::to_string(kVocabSize) + " entries");
  }
  std::unordered_map<std::string, int32_t> id_of;
  id_of.reserve(kVocabSize);
  impl->token_bytes.assign(kVocabSize, {});
  std::vector<bool> seen(kVocabSize, false);
  std::vector<uint32_t> cps;
  for (const auto& [text, value] : enc.items()) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() >= kVocabSize || seen[value.get<int64_t>()]) {
      throw Error("tokenizer file '" + enc_path + "': bad or repeated id for " +
                  nlohmann::json(text).dump());
    }
    const int32_t id = value.get<int32_t>();
    seen[id] = true;
    if (!DecodeUtf8(text, cps)) {
      throw Error("tokenizer file '" + enc_path + "': entry " +
                  std::to_string(id) + " is not UTF-8");
    }
    std::string bytes;
    for (uint32_t cp : cps) {
      auto it = cp_byte.find(cp);
      if (it == cp_byte.end()) {
        throw Error("tokenizer file '" + enc_path + "': entry " +
                    std::to_string(id) +
                    " has a character outside bytes_to_unicode");
      }
      bytes.push_back(static_cast<char>(it->second));
    }
    impl->token_bytes[id] = std::move(bytes);
    id_of.emplace(text, id);
  }
  if (impl->token_bytes[kEndOfText] != kEndOfTextText) {
    throw Error("tokenizer file '" + enc_path + "': id " +
                std::to_string(kEndOfText) + " is not <|endoftext|>");
  }
  // The rank of the merge that makes each token: -1 for the byte tokens,
  // INT_MAX for tokens not made (yet).
  std::vector<int32_t> made_at(kVocabSize, INT_MAX);
  for (int b = 0; b < 256; ++b) {
    std::string s;
    AppendUtf8(s, byte_cp[b]);
    auto it = id_of.find(s);
    if (it == id_of.end()) {
      throw Error("tokenizer file '" + enc_path + "': no token for byte " +
                  std::to_string(b));
    }
    impl->byte_id[b] = it->second;
    made_at[it->second] = -1;
  }

  // vocab.bpe: a version line, then one merge "A B" per line, by rank.
  std::istringstream lines(bpe_text);
  std::string line;
  if (!std::getline(lines, line) || line.rfind("#version", 0) != 0) {
    throw Error("tokenizer file '" + bpe_path +
                "': first line is not '#version ...'");
  }
  impl->merges.reserve(kNumMerges * 2);
  int32_t rank = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    auto bad = [&](const std::string& why) {
      return Error("tokenizer file '" + bpe_path + "': line " +
                   std::to_string(rank + 2) + ": " + why);
    };
    size_t sp = line.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == line.size() ||
        line.find(' ', sp + 1) != std::string::npos) {
      throw bad("expected two tokens separated by one space");
    }
    auto a = id_of.find(line.substr(0, sp));
    auto b = id_of.find(line.substr(sp + 1));
    auto ab = id_of.find(line.substr(0, sp) + line.substr(sp + 1));
    if (a == id_of.end() || b == id_of.end() || ab == id_of.end()) {
      throw bad("a part or the merged token is not in encoder.json");
    }
    // Makes the heap order of Impl::Bpe equal to GPT-2's encoder.py.
    if (made_at[a->second] >= rank || made_at[b->second] >= rank ||
        made_at[ab->second] != INT_MAX) {
      throw bad("merge order is not the order its tokens are made in");
    }
    made_at[ab->second] = rank;
    if (!impl->merges
             .emplace(PairKey(a->second, b->second), Merge{rank, ab->second})
             .second) {
      throw bad("repeated merge");
    }
    ++rank;
  }
  if (rank != kNumMerges) {
    throw Error("tokenizer file '" + bpe_path + "': " + std::to_string(rank) +
                " merges, expected " + std::to_string(kNumMerges));
  }

  int err = 0;
  PCRE2_SIZE err_offset = 0;
  impl->pattern.reset(pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
      PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr));
  if (!impl->pattern) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(std::string("tokenizer: PCRE2 cannot compile the GPT-2 "
                            "pattern: ") +
                reinterpret_cast<const char*>(msg));
  }
  // JIT where PCRE2 supports it; pcre2_match falls back to the interpreter
  // otherwise, with the same results.
  pcre2_jit_compile(impl->pattern.get(), PCRE2_JIT_COMPLETE);
  return Tokenizer(std::move(impl));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text,
                                       bool special_endoftext) const {
  Impl::Work w;
  auto match = impl_->NewMatchData();
  std::vector<int32_t> out;
  out.reserve(text.size() / 4 + 16);
  auto encode_segment = [&](std::string_view segment) {
    impl_->ForEachPiece(segment, match.get(), [&](std::string_view piece) {
      impl_->EncodePiece(piece, w, out);
    });
  };
  if (!special_endoftext) {
    encode_segment(text);
    return out;
  }
  for (;;) {
    size_t at = text.find(kEndOfTextText);
    encode_segment(text.substr(0, std::min(at, text.size())));
    if (at == std::string_view::npos) break;
    out.push_back(kEndOfText);
    text.remove_prefix(at + kEndOfTextText.size());
  }
  return out;
}

std::vector<std::string_view> Tokenizer::pretokenize(
    std::string_view text) const {
  auto match = impl_->NewMatchData();
  std::vector<std::string_view> pieces;
  impl_->ForEachPiece(text, match.get(),
                      [&](std::string_view piece) { pieces.push_back(piece); });
  return pieces;
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= kVocabSize) {
    throw Error("token id " + std::to_string(id) + " is outside [0, " +
                std::to_string(kVocabSize) + ")");
  }
  return impl_->token_bytes[id];
}

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  size_t total = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= kVocabSize) {
      throw Error("token id " + std::to_string(ids[i]) + " at position " +
                  std::to_string(i) + " is outside [0, " +
                  std::to_string(kVocabSize) + ")");
    }
    total += impl_->token_bytes[ids[i]].size();
  }
  std::string out;
  out.reserve(total);
  for (int32_t id : ids) out += impl_->token_bytes[id];
  return out;
}

}  // namespace lockstep
