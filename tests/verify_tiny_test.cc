// lockstep verify on the tiny binary64 models (docs/verify.md "Tiny
// models"): the contexts, the run's counts and digests against values
// computed here from the checked entry, the comparer's first mismatch, the
// record and bundle, --against and bisect on an edited record, and the
// command's output and errors.
#include "lib/verify_tiny.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "formats/sha256.h"
#include "hosts/native/wasm_host.h"
#include "lib/verify.h"
#include "lib/verify_bundle.h"
#include "lockstep/error.h"
#include "lockstep/tiny.h"

extern "C" {
#include "ls_tiny.h"
}

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kSource = LOCKSTEP_SOURCE_DIR;
const std::string kBinary = LOCKSTEP_BINARY;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TinyModel shipped(const std::string& name) {
  return load_tiny(kSource + "/models/" + name + ".lockstep");
}

const std::string& shakespeare() {
  static const std::string text =
      read_text(kSource + "/data/tinyshakespeare.txt");
  return text;
}

bool node_on_path() {
  const char* path = std::getenv("PATH");
  std::stringstream in(path ? path : "");
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (!dir.empty() && access((dir + "/node").c_str(), X_OK) == 0) {
      return true;
    }
  }
  return false;
}

bool wasm_available() {
  return wasm_module_sha256() != "(not built)" &&
         fs::exists(wasm_module_path()) && node_on_path();
}

// A folder under the build's temporary directory, removed afterwards.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("lockstep-verify-tiny-" + name + "-" +
                                          std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The command's status and its standard output and error together.
struct CmdResult {
  int status;
  std::string out;
};
CmdResult run_cli(const std::string& args) {
  const std::string cmd = kBinary + " verify " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  CmdResult r{-1, ""};
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// What the run must compute, from the checked entry directly: every
// position's logits of every context (each prefix's last row).
std::string expected_logits_digest(const TinyModel& m, double bound,
                                   const std::vector<VerifyContext>& ctxs) {
  Sha256Hasher h;
  for (const auto& c : ctxs) {
    for (size_t t = 1; t <= c.tokens.size(); ++t) {
      const TinyLogits l =
          tiny_logits(m, std::span<const int32_t>(c.tokens.data(), t), bound);
      h.update(l.data(), sizeof l);
    }
  }
  return to_hex(h.finish());
}

VerifyOptions small_options(int contexts, std::vector<std::string> backends) {
  VerifyOptions o;
  o.contexts = contexts;
  o.seed = 5;
  o.backends = std::move(backends);
  o.threads = {1};
  o.completion_tokens = 8;
  return o;
}

TEST(VerifyTiny, ContextsAreSeededBytesOfTheTextAndRandomBytes) {
  VerifyOptions o = small_options(9, {"reference"});
  o.min_length = 3;
  const auto a = make_tiny_verify_contexts(64, shakespeare(), o);
  ASSERT_EQ(a.size(), 9u);
  EXPECT_EQ(a[0].tokens.size(), 64u);  // the first has the longest length
  for (size_t i = 0; i < a.size(); ++i) {
    const auto& c = a[i];
    EXPECT_GE(c.tokens.size(), 3u);
    EXPECT_LE(c.tokens.size(), 64u);
    if (i % 2 == 0) {
      ASSERT_EQ(c.source.rfind("shakespeare@", 0), 0u) << c.source;
      const size_t off = std::stoul(c.source.substr(12));
      for (size_t t = 0; t < c.tokens.size(); ++t) {
        ASSERT_EQ(c.tokens[t], int32_t((unsigned char)shakespeare()[off + t]))
            << "context " << i << " byte " << t;
      }
    } else {
      EXPECT_EQ(c.source, "random");
      for (int32_t b : c.tokens) {
        EXPECT_GE(b, 0);
        EXPECT_LT(b, 256);
      }
    }
  }
  const auto b = make_tiny_verify_contexts(64, shakespeare(), o);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tokens, b[i].tokens);
  o.seed = 6;
  const auto c = make_tiny_verify_contexts(64, shakespeare(), o);
  EXPECT_NE(a[1].tokens, c[1].tokens);
  // max_length above n_ctx is n_ctx.
  o.max_length = 500;
  EXPECT_EQ(make_tiny_verify_contexts(4, shakespeare(), o)[0].tokens.size(),
            4u);
  EXPECT_THROW(make_tiny_verify_contexts(4, "short", o), Error);
}

TEST(VerifyTiny, ReferenceRunCountsAndDigests) {
  const TinyModel m = shipped("tiny64");
  const VerifyOptions o = small_options(10, {"reference"});
  const auto ctxs = make_tiny_verify_contexts(m.n_ctx, shakespeare(), o);
  uint64_t positions = 0;
  for (const auto& c : ctxs) positions += c.tokens.size();
  long calls = 0;
  const VerifyResult r = run_verify_tiny(
      m, ctxs, o, [&](long done, long total, const std::string& status) {
        ++calls;
        EXPECT_EQ(done, calls);
        EXPECT_EQ(total, 10);
        EXPECT_EQ(status, "reference");
      });
  EXPECT_EQ(calls, 10);
  EXPECT_EQ(r.mismatches, 0u) << (r.first ? r.first->describe() : "");
  EXPECT_FALSE(r.first);
  EXPECT_EQ(r.contexts, 10);
  EXPECT_EQ(r.positions, positions);
  // The every-position pass against the checked entry: every row once.
  EXPECT_EQ(r.logits_compared, positions * 256);
  EXPECT_EQ(r.cache_words_compared, 0u);
  ASSERT_EQ(r.backends.size(), 1u);
  const BackendRecord& b = r.backends[0];
  EXPECT_EQ(b.name, "reference");
  EXPECT_EQ(b.threads, 1);
  EXPECT_TRUE(b.cache.empty());
  EXPECT_EQ(b.step_ms.size(), 64u);  // one per prefix of the first context
  EXPECT_EQ(b.logits_sha256, expected_logits_digest(m, 10.0, ctxs));
  // Operations: the names in pass order; logits is the checked entry's;
  // embed is wte[token] + wpe[position], computed here.
  ASSERT_EQ(r.ops.size(), 12u);
  for (size_t i = 0; i < r.ops.size(); ++i) {
    EXPECT_EQ(r.ops[i].name, tiny_op_names()[i]);
  }
  EXPECT_EQ(r.ops.front().name, "embed");
  EXPECT_EQ(r.ops[3].name, "h0.att_prob");
  EXPECT_EQ(r.ops.back().name, "logits");
  EXPECT_EQ(r.ops.back().sha256, b.logits_sha256);
  Sha256Hasher embed;
  const ls_tiny_layout L = ls_tiny_layout_for(m.n_ctx);
  for (const auto& c : ctxs) {
    for (size_t t = 0; t < c.tokens.size(); ++t) {
      double x[4];
      for (int i = 0; i < 4; ++i) {
        x[i] = m.weights[L.wte + size_t(c.tokens[t]) * 4 + i] +
               m.weights[L.wpe + t * 4 + i];
      }
      embed.update(x, sizeof x);
    }
  }
  EXPECT_EQ(r.ops[0].sha256, to_hex(embed.finish()));
  EXPECT_EQ(tiny_op_hashes(m, 10.0, ctxs).size(), 12u);
  for (size_t i = 0; i < 12; ++i) {
    EXPECT_EQ(tiny_op_hashes(m, 10.0, ctxs)[i].sha256, r.ops[i].sha256);
  }
  // Completions: greedy bytes, as the checked entry chooses them.
  ASSERT_EQ(b.completions.size(), 2u);
  EXPECT_EQ(b.completions[0].prompt, "ROMEO:");
  ASSERT_EQ(b.completions[0].tokens.size(), 8u);
  std::vector<int32_t> text = {'R', 'O', 'M', 'E', 'O', ':'};
  for (int i = 0; i < 8; ++i) {
    const TinyLogits l = tiny_logits(m, text, 10.0);
    int best = 0;
    for (int o2 = 1; o2 < 256; ++o2) best = l[o2] > l[best] ? o2 : best;
    EXPECT_EQ(b.completions[0].tokens[size_t(i)], best) << "byte " << i;
    text.push_back(best);
  }
}

TEST(VerifyTiny, TheBoundClipsEveryPathAlike) {
  const TinyModel m = shipped("tiny4");
  VerifyOptions o = small_options(6, {"reference"});
  const auto ctxs = make_tiny_verify_contexts(m.n_ctx, shakespeare(), o);
  const VerifyResult wide = run_verify_tiny(m, ctxs, o);
  o.bound = 0.25;
  const VerifyResult narrow = run_verify_tiny(m, ctxs, o);
  EXPECT_EQ(narrow.mismatches, 0u)
      << (narrow.first ? narrow.first->describe() : "");
  EXPECT_NE(narrow.backends[0].logits_sha256, wide.backends[0].logits_sha256);
  EXPECT_EQ(narrow.backends[0].logits_sha256,
            expected_logits_digest(m, 0.25, ctxs));
  o.bound = 11;
  EXPECT_THROW(run_verify_tiny(m, ctxs, o), Error);
  o.bound = 10;
  o.backends = {"cpu-avx2"};
  EXPECT_THROW(run_verify_tiny(m, ctxs, o), Error);
}

TEST(VerifyTiny, WasmAgreesWithTheReference) {
  if (!wasm_available()) GTEST_SKIP() << "no wasm module or no node";
  const TinyModel m = shipped("tiny128");
  const VerifyOptions o = small_options(6, {"reference", "wasm"});
  const auto ctxs = make_tiny_verify_contexts(m.n_ctx, shakespeare(), o);
  const VerifyResult r = run_verify_tiny(m, ctxs, o);
  EXPECT_EQ(r.mismatches, 0u) << (r.first ? r.first->describe() : "");
  ASSERT_EQ(r.backends.size(), 2u);
  EXPECT_EQ(r.backends[1].name, "wasm (Node.js)");
  EXPECT_GT(r.backends[1].module_bytes, 0u);
  // Within the reference and across: every row twice.
  EXPECT_EQ(r.logits_compared, 2 * r.positions * 256);
  EXPECT_EQ(r.backends[1].logits_sha256, r.backends[0].logits_sha256);
  EXPECT_EQ(r.backends[1].logits_sha256, expected_logits_digest(m, 10, ctxs));
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.backends[1].completions[i].tokens,
              r.backends[0].completions[i].tokens);
  }
}

// A difference between backends is found and named: the reference runs
// the weights in memory, the wasm backend loads the file, so a change to
// one output bias in memory only is seen at every position, at that
// token only.
TEST(VerifyTiny, ADifferenceBetweenBackendsIsNamed) {
  if (!wasm_available()) GTEST_SKIP() << "no wasm module or no node";
  TinyModel m = shipped("tiny4");
  const ls_tiny_layout L = ls_tiny_layout_for(m.n_ctx);
  const double before = m.weights[L.head_b + 17];
  m.weights[L.head_b + 17] = before + 0.5;
  const VerifyOptions o = small_options(5, {"reference", "wasm"});
  const auto ctxs = make_tiny_verify_contexts(m.n_ctx, shakespeare(), o);
  const VerifyResult r = run_verify_tiny(m, ctxs, o);
  // One word per position (logit 17), plus any completion that differs.
  EXPECT_GE(r.mismatches, r.positions);
  EXPECT_LE(r.mismatches, r.positions + 2);
  EXPECT_EQ(r.logits_compared, 2 * r.positions * 256);
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->what, "logits");
  EXPECT_EQ(r.first->context, 0);
  EXPECT_EQ(r.first->position, 0);
  EXPECT_EQ(r.first->index, 17);
  EXPECT_EQ(r.first->a, "reference full-prefix");
  EXPECT_EQ(r.first->b, "wasm (Node.js) full-prefix");
  const TinyLogits mine =
      tiny_logits(m, std::span<const int32_t>(ctxs[0].tokens.data(), 1), 10);
  uint64_t u;
  std::memcpy(&u, &mine[17], 8);
  EXPECT_EQ(r.first->bits_a, u);
  EXPECT_NE(r.first->bits_b, u);
  EXPECT_NE(r.backends[0].logits_sha256, r.backends[1].logits_sha256);
}

TEST(VerifyTiny, ComparerNamesTheFirstDifferingWordInHex) {
  std::vector<double> a(3 * 256), b;
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.001 * double(i) - 0.3;
  b = a;
  uint64_t u;
  std::memcpy(&u, &b[256 + 17], 8);
  const uint64_t want_a = u;
  u ^= 1;
  std::memcpy(&b[256 + 17], &u, 8);
  b[2 * 256 + 3] = -b[2 * 256 + 3];
  VerifyResult r;
  tiny_compare_logits(a.data(), b.data(), 3, 5, 2, "reference full-prefix",
                      "wasm (Node.js) full-prefix", r);
  EXPECT_EQ(r.logits_compared, 768u);
  EXPECT_EQ(r.mismatches, 2u);
  ASSERT_TRUE(r.first);
  EXPECT_EQ(r.first->context, 2);
  EXPECT_EQ(r.first->position, 6);
  EXPECT_EQ(r.first->index, 17);
  EXPECT_EQ(r.first->bits_a, want_a);
  EXPECT_EQ(r.first->bits_b, want_a ^ 1);
  char words[80];
  std::snprintf(words, sizeof words,
                "0x%016llx, wasm (Node.js) full-prefix "
                "0x%016llx",
                (unsigned long long)want_a, (unsigned long long)(want_a ^ 1));
  const std::string d = r.first->describe();
  EXPECT_NE(d.find("context 2, position 6, logit of token 17: reference "
                   "full-prefix 0x"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find(words), std::string::npos) << d;
  // Equal rows: counted, nothing else.
  VerifyResult same;
  tiny_compare_logits(a.data(), a.data(), 3, 0, 0, "x", "y", same);
  EXPECT_EQ(same.logits_compared, 768u);
  EXPECT_EQ(same.mismatches, 0u);
}

// The record: kind, settings, counts; the bundle's files; --against and
// bisect on an edited copy name the edited digest.
TEST(VerifyTiny, RecordBundleAgainstAndBisect) {
  const TinyModel m = shipped("tiny4");
  VerifyOptions o = small_options(8, {"reference"});
  o.bound = 2.5;
  const auto ctxs = make_tiny_verify_contexts(m.n_ctx, shakespeare(), o);
  const VerifyResult r = run_verify_tiny(m, ctxs, o);
  VerifyProvenance p;
  p.command = "lockstep verify --model tiny4";
  p.model = "tiny4";
  p.files = {{"weights", m.path}};
  const json rec = verify_tiny_record(r, o, m, p);
  EXPECT_EQ(rec["model"]["kind"], "tiny");
  EXPECT_EQ(rec["model"]["payload_sha256"], m.payload_sha256);
  EXPECT_EQ(rec["model"]["config"]["n_ctx"], 4);
  EXPECT_EQ(rec["settings"]["bound"].get<double>(), 2.5);
  EXPECT_EQ(rec["settings"]["contexts"], 8);
  EXPECT_EQ(rec["settings"]["max_length"], 4);
  EXPECT_EQ(rec["result"]["passed"], true);
  EXPECT_EQ(rec["result"]["positions"].get<uint64_t>(), r.positions);
  EXPECT_EQ(rec["result"]["logits_compared"].get<uint64_t>(),
            r.positions * 256);
  EXPECT_EQ(rec["ops"].size(), 12u);
  EXPECT_EQ(rec["backends"][0]["cache"].size(), 0u);
  EXPECT_EQ(rec["files"][0]["sha256"], m.file_sha256);

  TempDir dir("bundle");
  write_verify_bundle(dir.path.string(), rec);
  for (const char* f : {"record.json", "report.md", "steps.svg"}) {
    EXPECT_TRUE(fs::exists(dir.path / f)) << f;
  }
  const std::string report = read_text((dir.path / "report.md").string());
  EXPECT_NE(report.find("tiny byte-level GPT-2, binary64"), std::string::npos);
  EXPECT_NE(report.find("The every-position pass's operations"),
            std::string::npos);
  EXPECT_EQ(report.find("Per-layer digests"), std::string::npos);
  const json back = read_verify_record(dir.path.string());
  EXPECT_EQ(back, json::parse(json(rec).dump()));
  const VerifyOptions ob = options_from_record(back);
  EXPECT_EQ(ob.bound, 2.5);
  EXPECT_EQ(ob.contexts, 8);
  EXPECT_EQ(ob.seed, 5u);

  EXPECT_TRUE(compare_records(back, rec).empty());
  EXPECT_TRUE(bisect_records(back, rec).empty());
  EXPECT_TRUE(bisect_backends(rec).empty());

  json edited = back;
  edited["ops"][8]["sha256"] = std::string(64, '0');  // h0.gelu
  auto d = compare_records(edited, rec);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "reference operations: first difference at h0.gelu");
  auto bl = bisect_records(edited, rec);
  ASSERT_EQ(bl.size(), 1u);
  EXPECT_EQ(bl[0], "reference operations: first difference at h0.gelu");

  json edited2 = back;
  edited2["backends"][0]["logits_sha256"] = std::string(64, 'f');
  d = compare_records(edited2, rec);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0],
            "reference: first difference from the record's reference at "
            "logits");

  // Other weights: named and nothing else compared.
  json other = back;
  other["model"]["payload_sha256"] = std::string(64, 'a');
  d = compare_records(other, rec);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].rfind("weights: the record's model is tiny binary64 with "
                       "payload SHA-256 aaaa",
                       0),
            0u)
      << d[0];
}

// The command: counts on standard output equal to the record's, the
// bundle, --against it (agrees), --against an edited copy (names the
// operation, status 1), and bad input (a message, status not 0).
TEST(VerifyTiny, Command) {
  TempDir dir("cli");
  const std::string b = (dir.path / "ev").string();
  CmdResult r = run_cli(
      "--model tiny4 --contexts 6 --backends reference "
      "--completion-tokens 5 --quiet --bundle " +
      b);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("lockstep verify: PASSED\n"), std::string::npos);
  EXPECT_NE(r.out.find("  backends              reference\n"),
            std::string::npos)
      << r.out;
  const json rec = read_verify_record(b);
  const uint64_t positions = rec["result"]["positions"].get<uint64_t>();
  // 1234567 -> "1,234,567", as the summary prints counts.
  std::string n = std::to_string(positions * 256), grouped;
  for (size_t i = 0; i < n.size(); ++i) {
    if (i > 0 && (n.size() - i) % 3 == 0) grouped.push_back(',');
    grouped.push_back(n[i]);
  }
  EXPECT_EQ(rec["result"]["logits_compared"].get<uint64_t>(), positions * 256);
  EXPECT_NE(r.out.find("  logits compared       " + grouped + "\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  mismatches            0\n"), std::string::npos);
  EXPECT_NE(r.out.find("tiny4 (tiny binary64, 1 layer, n_embd 4, n_ctx 4; "
                       "bound 10)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(rec["settings"]["completion_tokens"], 5);
  EXPECT_EQ(rec["settings"]["backends"], json::array({"reference"}));
  EXPECT_EQ(rec["backends"][0]["completions"][0]["tokens"].size(), 5u);

  r = run_cli("--model tiny4 --backends reference --quiet --against " + b);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(
      r.out.find("  against               " + b + ": every digest agrees\n"),
      std::string::npos)
      << r.out;

  json edited = rec;
  edited["ops"][4]["sha256"] = std::string(64, '0');  // h0.att_out
  const std::string e = (dir.path / "edited.json").string();
  std::ofstream(e) << edited.dump(1);
  r = run_cli("--model tiny4 --backends reference --quiet --against " + e);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("lockstep verify: PASSED\n"), std::string::npos);
  EXPECT_NE(r.out.find("  against               DIFFERS: reference "
                       "operations: first difference at h0.att_out\n"),
            std::string::npos)
      << r.out;
  // bisect on the two records.
  {
    const std::string cmd = kBinary + " bisect " + b + " " + e + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    std::string out;
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int st = pclose(p);
    EXPECT_EQ(WEXITSTATUS(st), 1) << out;
    EXPECT_EQ(out, "reference operations: first difference at h0.att_out\n");
  }

  struct Bad {
    std::string args, message;
  };
  const std::vector<Bad> bad = {
      {"--model tiny4 --contexts 0", "--contexts"},
      {"--model tiny4 --contexts many", "--contexts"},
      {"--model tiny4 --contexts 100001", "--contexts"},
      {"--model tiny4 --backends cpu-avx2",
       "--backends: 'cpu-avx2' does not run the tiny models"},
      {"--model tiny4 --backends reference,", "empty item in --backends"},
      {"--model tiny4 --threads 2", "--threads: the tiny models"},
      {"--model tiny4 --quant int8", "have no int8 form"},
      {"--model tiny4 --bound 11",
       "weight bound B must be a number in [0, 10]"},
      {"--model tiny4 --bound nan",
       "weight bound B must be a number in [0, 10]"},
      {"--model tests/data/hf-gpt2-A --bound 1",
       "--bound: the weight bound is the tiny models'"},
      {"--model tests/data/hf-gpt2-A --against " + b,
       "the record is of a tiny model"},
      {"--model tiny4 --against docs/evidence/hf-gpt2-A",
       "the record is of a GPT-2 model"},
      {"--model tiny4 --against " + b + " --bound 3",
       "the record was made with bound 10"},
      {"--model data/tinyshakespeare.txt", "data/tinyshakespeare.txt"},
  };
  for (const Bad& x : bad) {
    const std::string cmd = "cd " + kSource + " && " + kBinary + " verify " +
                            x.args + " --quiet 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    std::string out;
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int st = pclose(p);
    ASSERT_TRUE(WIFEXITED(st)) << x.args << ": " << out;  // no crash
    EXPECT_NE(WEXITSTATUS(st), 0) << x.args << ": " << out;
    EXPECT_NE(out.find(x.message), std::string::npos) << x.args << ": " << out;
    EXPECT_EQ(out.find("PASSED"), std::string::npos) << x.args << ": " << out;
  }
}

// The checked-in records (docs/evidence/tiny-N, and arm64-tinyN made on
// AArch64 under qemu) agree with this build on the reference (and wasm,
// where it runs).
TEST(VerifyTiny, CheckedInRecordsAgree) {
  const std::vector<std::pair<std::string, std::string>> records = {
      {"tiny4", "tiny-4"},        {"tiny64", "tiny-64"},
      {"tiny128", "tiny-128"},    {"tiny4", "arm64-tiny4"},
      {"tiny64", "arm64-tiny64"}, {"tiny128", "arm64-tiny128"}};
  for (const auto& [name, folder] : records) {
    const std::string dir = kSource + "/docs/evidence/" + folder;
    if (!fs::exists(dir + "/record.json")) {
      ADD_FAILURE() << "no record " << dir;
      continue;
    }
    const CmdResult r =
        run_cli("--model " + name + " --quiet --against " + dir +
                (wasm_available() ? "" : " --backends reference"));
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("every digest agrees"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace lockstep
