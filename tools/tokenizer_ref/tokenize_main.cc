// lockstep's side of tools/tokenizer_ref/compare.mjs, and the throughput
// measurement of docs/tokenizer.md. Output is JSON on stdout.
//
//   lockstep_tokenize_ref [--data DIR] ids [--special] FILE
//       the ids of FILE's bytes: [id, ...]
//   lockstep_tokenize_ref [--data DIR] strings FILE.json
//       FILE.json holds an array of strings; prints an array of id arrays
//   lockstep_tokenize_ref [--data DIR] pretokens FILE
//       the byte length of each pre-token of FILE: [n, ...]
//   lockstep_tokenize_ref unassigned
//       code point ranges that PCRE2's Unicode tables leave unassigned (Cn):
//       {"unicode": "14.0.0", "ranges": [[lo, hi], ...]}
//   lockstep_tokenize_ref [--data DIR] bench FILE [RUNS]
//       encodes FILE RUNS times (default 9); prints MB/s (1e6 bytes per
//       second, wall and thread CPU time) per run and the medians
//
// DIR defaults to the repository's data/gpt2.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/error.h"
#include "tokenizer/bpe.h"

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw lockstep::Error("cannot open '" + path + "' for reading");
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

void AppendIds(std::string& out, const std::vector<int32_t>& ids) {
  out.push_back('[');
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out.push_back(',');
    out += std::to_string(ids[i]);
  }
  out.push_back(']');
}

void Print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fputc('\n', stdout);
}

int Unassigned() {
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* re =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>("\\p{Cn}"),
                    PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &off, nullptr);
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
  std::string out = "{\"unicode\":\"";
  char version[32] = {};
  pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, version);
  out += version;
  out += "\",\"ranges\":[";
  long lo = -1;
  bool first = true;
  for (long cp = 0; cp <= 0x110000; ++cp) {
    bool cn = false;
    if (cp < 0x110000 && (cp < 0xD800 || cp > 0xDFFF)) {
      PCRE2_UCHAR buf[8];
      PCRE2_SIZE len = 0;
      // Encode cp as UTF-8 by hand (PCRE2 has no encoder in its API).
      if (cp < 0x80) {
        buf[len++] = static_cast<PCRE2_UCHAR>(cp);
      } else if (cp < 0x800) {
        buf[len++] = static_cast<PCRE2_UCHAR>(0xC0 | (cp >> 6));
        buf[len++] = static_cast<PCRE2_UCHAR>(0x80 | (cp & 0x3F));
      } else if (cp < 0x10000) {
        buf[len++] = static_cast<PCRE2_UCHAR>(0xE0 | (cp >> 12));
        buf[len++] = static_cast<PCRE2_UCHAR>(0x80 | ((cp >> 6) & 0x3F));
        buf[len++] = static_cast<PCRE2_UCHAR>(0x80 | (cp & 0x3F));
      } else {
        buf[len++] = static_cast<PCRE2_UCHAR>(0xF0 | (cp >> 18));
        buf[len++] = static_cast<PCRE2_UCHAR>(0x80 | ((cp >> 12) & 0x3F));
        buf[len++] = static_cast<PCRE2_UCHAR>(0x80 | ((cp >> 6) & 0x3F));
        buf[len++] = static_cast<PCRE2_UCHAR>(0x80 | (cp & 0x3F));
      }
      cn = pcre2_match(re, buf, len, 0, 0, md, nullptr) >= 0;
    }
    if (cn && lo < 0) lo = cp;
    if (!cn && lo >= 0) {
      out += (first ? "[" : ",[") + std::to_string(lo) + "," +
             std::to_string(cp - 1) + "]";
      first = false;
      lo = -1;
    }
  }
  out += "]}";
  pcre2_match_data_free(md);
  pcre2_code_free(re);
  Print(out);
  return 0;
}

// Seconds of CPU time of this thread (unaffected by time spent waiting for
// a CPU on a loaded machine, unlike wall time).
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) +
         1e-9 * static_cast<double>(ts.tv_nsec);
}

int Bench(const lockstep::Tokenizer& tok, const std::string& path, int runs) {
  const std::string text = ReadFile(path);
  const double mb = static_cast<double>(text.size()) / 1e6;
  std::vector<double> wall, cpu;
  size_t tokens = 0;
  for (int r = 0; r < runs; ++r) {
    double c0 = ThreadCpuSeconds();
    auto t0 = std::chrono::steady_clock::now();
    tokens = tok.encode(text).size();
    auto t1 = std::chrono::steady_clock::now();
    double c1 = ThreadCpuSeconds();
    double s = std::chrono::duration<double>(t1 - t0).count();
    wall.push_back(mb / s);
    cpu.push_back(mb / (c1 - c0));
    std::printf("run %d: %.4f s wall (%.2f MB/s), %.4f s CPU (%.2f MB/s)\n",
                r + 1, s, wall.back(), c1 - c0, cpu.back());
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  std::printf(
      "%s: %zu bytes, %zu tokens; median over %d runs: %.2f MB/s wall, "
      "%.2f MB/s CPU\n",
      path.c_str(), text.size(), tokens, runs, wall[wall.size() / 2],
      cpu[cpu.size() / 2]);
  return 0;
}

int Usage() {
  std::fprintf(stderr,
               "usage: lockstep_tokenize_ref [--data DIR] "
               "ids [--special] FILE | strings FILE.json | pretokens FILE | "
               "bench FILE [RUNS] | unassigned\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string dir = LOCKSTEP_SOURCE_DIR "/data/gpt2";
  if (args.size() >= 2 && args[0] == "--data") {
    dir = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.empty()) return Usage();
  try {
    const std::string mode = args[0];
    if (mode == "unassigned" && args.size() == 1) return Unassigned();
    const lockstep::Tokenizer tok = lockstep::Tokenizer::load(dir);
    std::string out;
    if (mode == "ids" && (args.size() == 2 || args.size() == 3)) {
      bool special = args.size() == 3;
      if (special && args[1] != "--special") return Usage();
      AppendIds(out, tok.encode(ReadFile(args.back()), special));
    } else if (mode == "strings" && args.size() == 2) {
      nlohmann::json in = nlohmann::json::parse(ReadFile(args[1]));
      out.push_back('[');
      for (size_t i = 0; i < in.size(); ++i) {
        if (i) out.push_back(',');
        AppendIds(out, tok.encode(in.at(i).get<std::string>()));
      }
      out.push_back(']');
    } else if (mode == "pretokens" && args.size() == 2) {
      const std::string text = ReadFile(args[1]);
      std::vector<int32_t> lengths;
      for (std::string_view p : tok.pretokenize(text)) {
        lengths.push_back(static_cast<int32_t>(p.size()));
      }
      AppendIds(out, lengths);
    } else if (mode == "bench" && (args.size() == 2 || args.size() == 3)) {
      int runs = args.size() == 3 ? std::stoi(args[2]) : 9;
      if (runs < 1) return Usage();
      return Bench(tok, args[1], runs);
    } else {
      return Usage();
    }
    Print(out);
    return std::fflush(stdout) == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep_tokenize_ref: %s\n", e.what());
    return 1;
  }
}
