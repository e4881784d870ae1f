// A direct transcription of GPT-2's encoder.py (bytes_to_unicode,
// get_pairs, bpe), sharing nothing with tokenizer/bpe.cc: the reference for
// the BPE stage, used by tests/tokenizer_test.cc and the tokenizer fuzz
// harness (fuzz/fuzz_tokenizer.cc). Slow (strings and a std::map), cached
// per pre-token.
#ifndef LOCKSTEP_TESTS_REFERENCE_BPE_H_
#define LOCKSTEP_TESTS_REFERENCE_BPE_H_

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace lockstep::test {

class ReferenceBpe {
 public:
  // Reads data_dir/encoder.json and data_dir/vocab.bpe.
  explicit ReferenceBpe(const std::string& data_dir) {
    std::vector<int> bs;
    for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
    for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
    for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
    std::vector<int> cs = bs;
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      if (std::find(bs.begin(), bs.end(), b) == bs.end()) {
        bs.push_back(b);
        cs.push_back(256 + n++);
      }
    }
    for (size_t i = 0; i < bs.size(); ++i) {
      std::string u;
      int c = cs[i];
      if (c < 0x80) {
        u.push_back(static_cast<char>(c));
      } else {
        u.push_back(static_cast<char>(0xC0 | (c >> 6)));
        u.push_back(static_cast<char>(0x80 | (c & 0x3F)));
      }
      byte_encoder_[bs[i]] = u;
    }
    auto enc = nlohmann::json::parse(Read(data_dir + "/encoder.json"));
    for (auto& [k, v] : enc.items()) encoder_[k] = v.get<int32_t>();
    std::istringstream lines(Read(data_dir + "/vocab.bpe"));
    std::string line;
    std::getline(lines, line);  // #version
    int rank = 0;
    while (std::getline(lines, line)) {
      if (line.empty()) continue;
      size_t sp = line.find(' ');
      ranks_[{line.substr(0, sp), line.substr(sp + 1)}] = rank++;
    }
  }

  // The ids of one pre-token.
  std::vector<int32_t> Encode(std::string_view piece) {
    auto hit = cache_.find(std::string(piece));
    if (hit != cache_.end()) return hit->second;
    std::vector<std::string> word;
    for (unsigned char b : piece) word.push_back(byte_encoder_[b]);
    while (word.size() > 1) {
      int best = INT_MAX;
      std::pair<std::string, std::string> bigram;
      for (size_t i = 0; i + 1 < word.size(); ++i) {
        auto it = ranks_.find({word[i], word[i + 1]});
        if (it != ranks_.end() && it->second < best) {
          best = it->second;
          bigram = it->first;
        }
      }
      if (best == INT_MAX) break;
      std::vector<std::string> merged;
      for (size_t i = 0; i < word.size();) {
        if (i + 1 < word.size() && word[i] == bigram.first &&
            word[i + 1] == bigram.second) {
          merged.push_back(bigram.first + bigram.second);
          i += 2;
        } else {
          merged.push_back(word[i]);
          i += 1;
        }
      }
      word = std::move(merged);
    }
    std::vector<int32_t> ids;
    for (const auto& w : word) ids.push_back(encoder_.at(w));
    cache_[std::string(piece)] = ids;
    return ids;
  }

  // Forgets the pre-tokens seen (a long fuzzing run would grow it).
  void ClearCache() { cache_.clear(); }

 private:
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    return std::string((std::istreambuf_iterator<char>(in)),
                       std::istreambuf_iterator<char>());
  }

  std::array<std::string, 256> byte_encoder_;
  std::unordered_map<std::string, int32_t> encoder_;
  std::map<std::pair<std::string, std::string>, int> ranks_;
  std::unordered_map<std::string, std::vector<int32_t>> cache_;
};

}  // namespace lockstep::test

#endif  // LOCKSTEP_TESTS_REFERENCE_BPE_H_
