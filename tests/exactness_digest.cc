// The exactness digests (docs/arm64.md): one program, built for x86-64 and
// for AArch64, that runs
//   - the three shipped tiny models (binary64) on seeded inputs,
//   - Hugging Face's GPT-2 fixture (tests/data/hf-gpt2-A), both cases,
//   - small seeded random GPT-2 configs (the shapes of the backend tests),
// the GPT-2 cases through every backend this machine can create (the
// reference, then cpu-<isa> for every supported ISA, 1 and 2 threads) and
// every path: cached steps, the full-prefix pass over every prefix, batched
// prefill (whole, chunked after a partly filled cache, every position's
// logits) and Gpt2Session::prefill in small chunks mixed with steps. It
// checks that all of them give the reference's cached steps bit for bit
// (memcmp; on a difference, the first differing index and both values in
// hex), then prints one SHA-256 per case of the logits and cache words, and
// one over them all.
//
//   exactness_digest                 print the digests
//   exactness_digest --check FILE    and compare them with FILE's (exit 1
//                                    on any difference)
//   exactness_digest --write FILE    write them to FILE (from an x86-64
//                                    build: tests/data/exactness_digests.txt)
//   --source DIR                     the source tree (default: the one it
//                                    was built from)
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_isa.h"
#include "formats/gpt2_checkpoint.h"
#include "formats/sha256.h"
#include "lockstep/error.h"
#include "lockstep/gpt2.h"
#include "lockstep/tiny.h"
#include "ls_gpt2.h"

namespace {

// A failed comparison: the message says where and what.
struct Mismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// SplitMix64: the inputs depend on nothing but the seed.
uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<int32_t> seeded_tokens(int n, int32_t vocab, uint64_t seed) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = int32_t(splitmix64(seed) % uint64_t(vocab));
  return t;
}

template <typename T>
void expect_bytes(const T* got, const T* want, size_t n,
                  const std::string& what) {
  if (std::memcmp(got, want, n * sizeof(T)) == 0) return;
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0) {
      uint64_t gb = 0, wb = 0;
      std::memcpy(&gb, &got[i], sizeof(T));
      std::memcpy(&wb, &want[i], sizeof(T));
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "first difference at index %zu of %zu: got %a (0x%0*" PRIx64
                    "), reference %a (0x%0*" PRIx64 ")",
                    i, n, double(got[i]), int(2 * sizeof(T)), gb,
                    double(want[i]), int(2 * sizeof(T)), wb);
      throw Mismatch(what + ": " + buf);
    }
  }
}

void expect_ok(ls_status s, const std::string& what) {
  if (s != LS_OK) {
    throw Mismatch(what + ": status " + std::to_string(int(s)));
  }
}

// What every path must reproduce: the reference's cached steps.
struct Trace {
  std::vector<float> logits;  // n * n_vocab, position t at t * n_vocab
  std::vector<float> cache;   // n rows
};

Trace run_steps(lockstep::Gpt2Backend& b, const ls_gpt2_config& c,
                const std::vector<int32_t>& tokens, const std::string& what) {
  const size_t V = size_t(c.n_vocab), row = ls_gpt2_cache_row_floats(&c);
  const size_t n = tokens.size();
  Trace t;
  t.logits.resize(n * V);
  std::vector<float> cache(ls_gpt2_cache_floats(&c));
  for (size_t p = 0; p < n; ++p) {
    expect_ok(b.step(cache.data(), cache.size(), p * row, tokens[p], int32_t(p),
                     t.logits.data() + p * V),
              what + " step " + std::to_string(p));
  }
  t.cache.assign(cache.begin(), cache.begin() + std::ptrdiff_t(n * row));
  return t;
}

// Every path of one backend against the reference trace.
void check_backend(lockstep::Gpt2Backend& b, const ls_gpt2_config& c,
                   const std::vector<int32_t>& tokens, const Trace& want,
                   const std::string& who) {
  const size_t V = size_t(c.n_vocab), row = ls_gpt2_cache_row_floats(&c);
  const int n = int(tokens.size());
  // Cached steps.
  const Trace steps = run_steps(b, c, tokens, who);
  expect_bytes(steps.logits.data(), want.logits.data(), want.logits.size(),
               who + " step logits");
  expect_bytes(steps.cache.data(), want.cache.data(), want.cache.size(),
               who + " step cache");
  // The full-prefix pass: its last position's logits, over every prefix
  // of a short sequence, over 1, 2, 3, 7, n/2 + 1 and n tokens of a
  // longer one (each pass is n positions: every prefix would be n^2).
  std::vector<float> logits(V);
  std::vector<int> prefixes;
  if (n <= 16) {
    for (int p = 1; p <= n; ++p) prefixes.push_back(p);
  } else {
    prefixes = {1, 2, 3, 7, n / 2 + 1, n};
  }
  for (int p : prefixes) {
    expect_ok(b.infer(tokens.data(), p, logits.data()),
              who + " infer " + std::to_string(p));
    expect_bytes(logits.data(), want.logits.data() + size_t(p - 1) * V, V,
                 who + " infer over " + std::to_string(p) + " tokens");
  }
  // Batched prefill: the whole sequence at once, every position's logits.
  std::vector<float> cache(ls_gpt2_cache_floats(&c));
  std::vector<float> all(size_t(n) * V);
  expect_ok(b.prefill(cache.data(), cache.size(), 0, tokens.data(), n, 0,
                      /*all_positions=*/true, all.data()),
            who + " prefill");
  expect_bytes(all.data(), want.logits.data(), all.size(),
               who + " prefill logits");
  expect_bytes(cache.data(), want.cache.data(), want.cache.size(),
               who + " prefill cache");
  // Chunked: a step, a prefill of a third (last logits only), then the
  // rest with every position's logits, after the partly filled cache.
  std::fill(cache.begin(), cache.end(), 0.0f);
  expect_ok(b.step(cache.data(), cache.size(), 0, tokens[0], 0, logits.data()),
            who + " chunked step");
  const int k = n > 2 ? 1 + (n - 1) / 3 : 1;
  if (k > 1) {
    expect_ok(b.prefill(cache.data(), cache.size(), row, tokens.data() + 1,
                        k - 1, 1, /*all_positions=*/false, logits.data()),
              who + " chunked prefill 1");
    expect_bytes(logits.data(), want.logits.data() + size_t(k - 1) * V, V,
                 who + " chunked prefill to " + std::to_string(k));
  }
  if (k < n) {
    expect_ok(b.prefill(cache.data(), cache.size(), size_t(k) * row,
                        tokens.data() + k, n - k, k, /*all_positions=*/true,
                        all.data()),
              who + " chunked prefill 2");
    expect_bytes(all.data(), want.logits.data() + size_t(k) * V,
                 size_t(n - k) * V, who + " chunked prefill logits");
  }
  expect_bytes(cache.data(), want.cache.data(), want.cache.size(),
               who + " chunked prefill cache");
}

// Gpt2Session::prefill in chunks of max_prefix = 4, mixed with steps.
void check_session(const lockstep::Gpt2View& view, const std::string& backend,
                   int threads, const std::vector<int32_t>& tokens,
                   const Trace& want, const std::string& who) {
  const ls_gpt2_config& c = view.config;
  const size_t V = size_t(c.n_vocab);
  const int n = int(tokens.size());
  lockstep::Gpt2Session s(view, {backend, threads, /*max_prefix=*/4});
  const int a = n / 2, b = a + (n - a) / 3;
  if (a > 0) {
    const auto got = s.prefill(std::span(tokens.data(), size_t(a)), true);
    expect_bytes(got.data(), want.logits.data(), size_t(a) * V,
                 who + " session prefill");
  }
  for (int p = a; p < b; ++p) {
    const auto got = s.step(tokens[size_t(p)]);
    expect_bytes(got.data(), want.logits.data() + size_t(p) * V, V,
                 who + " session step " + std::to_string(p));
  }
  if (b < n) {
    const auto got =
        s.prefill(std::span(tokens.data() + b, size_t(n - b)), false);
    expect_bytes(got.data(), want.logits.data() + size_t(n - 1) * V, V,
                 who + " session prefill (last)");
  }
  const auto cache = s.cache();
  if (cache.size() != want.cache.size()) {
    throw Mismatch(who + " session cache: " + std::to_string(cache.size()) +
                   " words, want " + std::to_string(want.cache.size()));
  }
  expect_bytes(cache.data(), want.cache.data(), want.cache.size(),
               who + " session cache");
}

struct Variant {
  std::string name;
  int threads;
};

std::vector<Variant> variants() {
  std::vector<Variant> out;
  for (const auto& name : lockstep::backends::available_gpt2_backends()) {
    if (name == "reference") {
      out.push_back({name, 1});
    } else {
      out.push_back({name, 1});
      out.push_back({name, 2});
    }
  }
  return out;
}

std::string hex_digest(const std::vector<uint8_t>& bytes) {
  return lockstep::to_hex(lockstep::sha256(bytes.data(), bytes.size()));
}

template <typename T>
void append(std::vector<uint8_t>& out, const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  out.insert(out.end(), p, p + v.size() * sizeof(T));
}

// One GPT-2 case: the reference's steps, then every variant and path
// against them; the digest of the step logits and the cache words.
std::string gpt2_case(const ls_gpt2_config& c, const float* w, size_t words,
                      ls_gpt2_layout layout,
                      const std::vector<std::vector<int32_t>>& sequences,
                      const std::string& name) {
  std::vector<uint8_t> bytes;
  auto ref =
      lockstep::make_gpt2_backend("reference", c, w, words, 1, 0, layout);
  const lockstep::Gpt2View view{c, w, words, layout};
  for (size_t si = 0; si < sequences.size(); ++si) {
    const auto& tokens = sequences[si];
    const std::string seq = name + " sequence " + std::to_string(si);
    const Trace want = run_steps(*ref, c, tokens, seq + " reference");
    for (const Variant& v : variants()) {
      auto b = lockstep::make_gpt2_backend(v.name, c, w, words, v.threads, 0,
                                           layout);
      check_backend(*b, c, tokens, want, seq + " " + b->name());
      check_session(view, v.name, v.threads, tokens, want,
                    seq + " " + b->name());
    }
    append(bytes, want.logits);
    append(bytes, want.cache);
  }
  return hex_digest(bytes);
}

std::string tiny_case(const std::string& path) {
  const lockstep::TinyModel m = lockstep::load_tiny(path);
  std::vector<uint8_t> bytes;
  // A line of the play, then seeded byte strings of lengths 1 .. n_ctx.
  const std::string text =
      "ROMEO:\nBut, soft! what light through yonder window";
  std::vector<std::vector<int32_t>> inputs;
  {
    std::vector<int32_t> t;
    for (unsigned char ch : text) {
      if (int(t.size()) == m.n_ctx) break;
      t.push_back(int32_t(ch));
    }
    inputs.push_back(t);
  }
  const int lengths[] = {1, 2, 3, m.n_ctx / 2 + 1, m.n_ctx - 1, m.n_ctx};
  uint64_t seed = 7;
  for (int len : lengths) {
    if (len < 1) continue;
    inputs.push_back(seeded_tokens(len, 256, ++seed));
  }
  for (const auto& t : inputs) {
    for (double bound : {10.0, 0.25}) {
      const lockstep::TinyLogits l = lockstep::tiny_logits(m, t, bound);
      const auto* p = reinterpret_cast<const uint8_t*>(l.data());
      bytes.insert(bytes.end(), p, p + sizeof l);
    }
  }
  return hex_digest(bytes);
}

// Progress on stderr: the case and its seconds.
void progress(const std::string& name) {
  using Clock = std::chrono::steady_clock;
  static Clock::time_point last = Clock::now();
  const Clock::time_point now = Clock::now();
  std::fprintf(stderr, "  %-36s %6.2f s\n", name.c_str(),
               std::chrono::duration<double>(now - last).count());
  last = now;
}

std::vector<std::pair<std::string, std::string>> compute(
    const std::string& src) {
  progress("start");
  std::vector<std::pair<std::string, std::string>> out;
  for (int n : {4, 64, 128}) {
    const std::string name = "tiny" + std::to_string(n);
    out.emplace_back(name, tiny_case(src + "/models/" + name + ".lockstep"));
    progress(name);
  }
  {
    const std::string dir = src + "/tests/data/hf-gpt2-A";
    const lockstep::Gpt2Weights w = lockstep::load_gpt2(dir);
    std::ifstream in(dir + "/cases.json");
    const auto cases = nlohmann::json::parse(in)["cases"];
    std::vector<std::vector<int32_t>> seqs;
    for (const auto& cs : cases) {
      seqs.push_back(cs["input_ids"].get<std::vector<int32_t>>());
    }
    out.emplace_back("hf-gpt2-A", gpt2_case(w.config, w.data(), w.words(),
                                            w.layout, seqs, "hf-gpt2-A"));
    progress("hf-gpt2-A");
  }
  // The backend tests' small shapes: widths not multiples of 16 (the
  // sequential §2.1 branch), head widths 16, 20, 64, 8, 48, and head
  // panels with a narrow last one. {n_vocab, n_ctx, n_embd, n_head,
  // n_layer}.
  const ls_gpt2_config configs[] = {
      {300, 24, 48, 3, 2}, {301, 20, 40, 2, 2}, {257, 18, 64, 4, 3},
      {97, 70, 128, 2, 1}, {131, 16, 24, 3, 1}, {250, 12, 48, 3, 1},
      {200, 10, 96, 2, 1},
  };
  uint64_t seed = 100;
  for (const auto& c : configs) {
    ++seed;
    const std::vector<float> w = lockstep::random_gpt2_weights(c, seed);
    const std::vector<std::vector<int32_t>> seqs = {
        seeded_tokens(c.n_ctx, c.n_vocab, seed)};
    char name[96];
    std::snprintf(name, sizeof name, "gpt2-v%d-ctx%d-e%d-h%d-l%d-seed%" PRIu64,
                  c.n_vocab, c.n_ctx, c.n_embd, c.n_head, c.n_layer, seed);
    out.emplace_back(name, gpt2_case(c, w.data(), w.size(),
                                     LS_GPT2_LAYOUT_PLAIN, seqs, name));
    progress(name);
  }
  std::string all;
  for (const auto& [name, digest] : out) all += name + " " + digest + "\n";
  out.emplace_back("all",
                   lockstep::to_hex(lockstep::sha256(all.data(), all.size())));
  return out;
}

std::map<std::string, std::string> read_digests(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw lockstep::Error("cannot read '" + path + "'");
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name, digest;
    if (!(ls >> name >> digest)) {
      throw lockstep::Error("'" + path + "': bad line '" + line + "'");
    }
    out[name] = digest;
  }
  return out;
}

int usage() {
  std::fprintf(stderr,
               "usage: exactness_digest [--check FILE | --write FILE] "
               "[--source DIR]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string check, write, src = LOCKSTEP_SOURCE_DIR;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    if (a == "--check") {
      check = argv[++i];
    } else if (a == "--write") {
      write = argv[++i];
    } else if (a == "--source") {
      src = argv[++i];
    } else {
      return usage();
    }
  }
  try {
    std::string who;
    for (const Variant& v : variants()) {
      who += " " + v.name + " x" + std::to_string(v.threads);
    }
#if defined(__x86_64__)
    const char* arch = "x86-64";
#elif defined(__aarch64__)
    const char* arch = "aarch64";
#else
    const char* arch = "other";
#endif
    std::printf("exactness_digest on %s; backends:%s\n", arch, who.c_str());
    std::fflush(stdout);
    const auto got = compute(src);
    std::printf("every backend and path gave the reference's bits\n");
    for (const auto& [name, digest] : got) {
      std::printf("%s %s\n", name.c_str(), digest.c_str());
    }
    if (!write.empty()) {
      std::ofstream out(write);
      out << "# The exactness digests (docs/arm64.md): SHA-256 of the tiny\n"
             "# models' logits and of GPT-2's logits and cache words, as\n"
             "# recorded by an x86-64 build with `exactness_digest --write\n"
             "# FILE`. The x86-64 test exactness_digest and\n"
             "# scripts/test-arm64.sh (AArch64 under qemu) compare against\n"
             "# them.\n";
      for (const auto& [name, digest] : got)
        out << name << " " << digest << "\n";
      if (!out.flush()) throw lockstep::Error("cannot write '" + write + "'");
      std::printf("written to %s\n", write.c_str());
    }
    if (!check.empty()) {
      const auto want = read_digests(check);
      int passed = 0, failed = 0;
      for (const auto& [name, digest] : got) {
        const auto it = want.find(name);
        if (it == want.end()) {
          std::printf("FAIL %s: not in %s\n", name.c_str(), check.c_str());
          ++failed;
        } else if (it->second != digest) {
          std::printf("FAIL %s: got %s, recorded %s\n", name.c_str(),
                      digest.c_str(), it->second.c_str());
          ++failed;
        } else {
          ++passed;
        }
      }
      for (const auto& [name, digest] : want) {
        bool found = false;
        for (const auto& g : got) found = found || g.first == name;
        if (!found) {
          std::printf("FAIL %s: recorded in %s, not computed\n", name.c_str(),
                      check.c_str());
          ++failed;
        }
      }
      std::printf("digests against %s: %d passed, %d failed\n", check.c_str(),
                  passed, failed);
      return failed == 0 ? 0 : 1;
    }
    return 0;
  } catch (const Mismatch& e) {
    std::printf("MISMATCH %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}
