#include "lib/verify_bundle.h"

#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "backends/backend.h"
#include "formats/checkpoint.h"
#include "formats/gpt2_q8.h"
#include "formats/sha256.h"
#include "lockstep/error.h"
#include "lockstep_build_info.h"

extern "C" {
#include "ls_tiny.h"
}

namespace lockstep {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The first "model name" (x86) or "Model"/"CPU part" (ARM) of
// /proc/cpuinfo.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    for (const char* key : {"model name", "Model", "CPU part"}) {
      if (line.rfind(key, 0) == 0) {
        const size_t colon = line.find(':');
        if (colon != std::string::npos) {
          return line.substr(line.find_first_not_of(" \t", colon + 1));
        }
      }
    }
  }
  return "unknown";
}

json machine() {
  utsname u{};
  uname(&u);
  const std::vector<std::string> avail = backends::available_gpt2_backends();
  return {{"cpu", cpu_model()},
          {"hardware_threads", std::thread::hardware_concurrency()},
          {"os", std::string(u.sysname) + " " + u.release},
          {"arch", u.machine},
          {"backends_available", avail},
          {"best_isa", avail.size() > 1 ? avail[1] : "none"}};
}

json build() {
  return {{"version", LOCKSTEP_BUILD_VERSION},
          {"build_type", LOCKSTEP_BUILD_TYPE},
          {"c_compiler", LOCKSTEP_BUILD_C_COMPILER},
          {"cxx_compiler", LOCKSTEP_BUILD_CXX_COMPILER},
          {"c_flags", LOCKSTEP_BUILD_C_FLAGS},
          {"cxx_flags", LOCKSTEP_BUILD_CXX_FLAGS},
          {"wasm_compiler", LOCKSTEP_BUILD_WASM_COMPILER},
          {"target", LOCKSTEP_BUILD_TARGET}};
}

json hashes_json(const std::vector<NamedHash>& v) {
  json a = json::array();
  for (const auto& h : v) a.push_back({{"name", h.name}, {"sha256", h.sha256}});
  return a;
}

std::vector<NamedHash> hashes_of(const json& a) {
  std::vector<NamedHash> v;
  for (const auto& h : a) {
    v.push_back(
        {h.at("name").get<std::string>(), h.at("sha256").get<std::string>()});
  }
  return v;
}

// A backend's digests in bisect order: its layers' keys and values, then
// the logits.
std::vector<NamedHash> backend_hashes(const json& b) {
  std::vector<NamedHash> v = hashes_of(b.at("cache"));
  v.push_back({"logits", b.at("logits_sha256").get<std::string>()});
  return v;
}

// A backend's own operations (records since backends showed them), or
// none.
std::vector<NamedHash> backend_ops(const json& b) {
  return b.contains("ops") ? hashes_of(b.at("ops")) : std::vector<NamedHash>{};
}

std::string mb(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", double(bytes) / 1e6);
  return buf;
}

std::string esc_md(std::string s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|')
      out += "\\|";
    else if (ch == '\n')
      out += "\\n";
    else if (ch == '`')
      out += "'";
    else
      out += ch;
  }
  return out;
}

// Per-step times of each backend's first (longest) context as polylines.
std::string steps_svg(const json& rec) {
  const double W = 720, H = 360, left = 60, right = 180, top = 20, bottom = 40;
  double ymax = 0;
  size_t xmax = 1;
  for (const auto& b : rec.at("backends")) {
    const auto& s = b.at("step_ms");
    xmax = std::max(xmax, s.size());
    for (const auto& v : s) ymax = std::max(ymax, v.get<double>());
  }
  if (ymax <= 0) ymax = 1;
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                  "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W
    << "\" height=\"" << H << "\" font-family=\"sans-serif\" font-size=\"12\">"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>";
  const double pw = W - left - right, ph = H - top - bottom;
  o << "<line x1=\"" << left << "\" y1=\"" << top + ph << "\" x2=\""
    << left + pw << "\" y2=\"" << top + ph << "\" stroke=\"black\"/>"
    << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left
    << "\" y2=\"" << top + ph << "\" stroke=\"black\"/>";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g ms", ymax);
  o << "<text x=\"" << left - 4 << "\" y=\"" << top + 4
    << "\" text-anchor=\"end\">" << buf << "</text>"
    << "<text x=\"" << left - 4 << "\" y=\"" << top + ph
    << "\" text-anchor=\"end\">0</text>"
    << "<text x=\"" << left + pw / 2 << "\" y=\"" << H - 8
    << "\" text-anchor=\"middle\">"
    << (rec.at("model").value("kind", "gpt2") == "tiny"
            ? "prefix length - 1 (checked entry), "
            : "position (cached step), ")
    << xmax << " steps</text>";
  int i = 0;
  for (const auto& b : rec.at("backends")) {
    const char* color = kColors[i % 8];
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" points=\"";
    const auto& s = b.at("step_ms");
    for (size_t t = 0; t < s.size(); ++t) {
      const double x =
          left + (xmax > 1 ? pw * double(t) / double(xmax - 1) : 0);
      const double y = top + ph - ph * s[t].get<double>() / ymax;
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", x, y);
      o << buf;
    }
    o << "\"/><text x=\"" << left + pw + 10 << "\" y=\"" << top + 14 + 16 * i
      << "\" fill=\"" << color << "\">" << b.at("name").get<std::string>()
      << "</text>";
    ++i;
  }
  o << "</svg>\n";
  return o.str();
}

std::string report_md(const json& rec) {
  const json& res = rec.at("result");
  const bool pass = res.at("passed").get<bool>();
  std::ostringstream o;
  o << "# lockstep verify: " << (pass ? "PASSED" : "FAILED") << "\n\n";
  o << "`" << esc_md(rec.at("command").get<std::string>()) << "`, "
    << rec.at("created").get<std::string>() << "\n\n";
  const json& m = rec.at("model");
  const json& c = m.at("config");
  const bool tiny = m.value("kind", "gpt2") == "tiny";
  if (tiny) {
    o << "Model `" << esc_md(m.at("given").get<std::string>())
      << "` (tiny byte-level GPT-2, binary64, docs/models.md): "
      << c.at("n_layer") << " layer, n_embd " << c.at("n_embd") << ", "
      << c.at("n_head") << " heads, feed-forward " << c.at("n_ff") << ", n_ctx "
      << c.at("n_ctx") << ", vocabulary " << c.at("n_vocab")
      << "; weights payload SHA-256 `"
      << m.at("payload_sha256").get<std::string>()
      << "`, weight bound B = " << rec.at("settings").at("bound") << ".\n\n";
  } else {
    o << "Model `" << esc_md(m.at("given").get<std::string>()) << "` ("
      << m.at("format").get<std::string>() << ", "
      << m.at("layout").get<std::string>() << "): " << c.at("n_layer")
      << " layers, n_embd " << c.at("n_embd") << ", " << c.at("n_head")
      << " heads, n_ctx " << c.at("n_ctx") << ", vocabulary "
      << c.at("n_vocab");
    if (m.value("quant", "f32") == "int8") {
      o << "; int8 (q8g64) weights, payload SHA-256 `"
        << m.at("payload_sha256").get<std::string>()
        << "`, quantized from the binary32 weights of plain SHA-256 `"
        << m.at("plain_sha256").get<std::string>() << "`.\n\n";
    } else {
      o << "; weights (plain layout) SHA-256 `"
        << m.at("plain_sha256").get<std::string>() << "`.\n\n";
    }
  }
  o << "| contexts | positions | logits compared | cache words compared | "
       "mismatches |\n| ---: | ---: | ---: | ---: | ---: |\n| "
    << res.at("contexts") << " | " << res.at("positions") << " | "
    << res.at("logits_compared") << " | " << res.at("cache_words_compared")
    << " | " << res.at("mismatches") << " |\n\n";
  if (!res.at("first_mismatch").is_null()) {
    o << "First mismatch: " << res.at("first_mismatch").get<std::string>()
      << "\n\n";
  }
  const json& s = rec.at("settings");
  o << "Contexts: " << s.at("contexts") << " (seed " << s.at("seed")
    << ", lengths " << s.at("min_length") << " to " << s.at("max_length")
    << (tiny ? ", alternately Tiny Shakespeare's bytes and random bytes"
             : ", alternately Tiny Shakespeare and random ids")
    << "; tokens SHA-256 `" << res.at("contexts_sha256").get<std::string>()
    << "`). "
    << (tiny ? "Contexts are bytes. Each backend ran the checked entry at "
               "every prefix of every context (the logits of every "
               "position); the native every-position pass "
               "(train/tiny_grad.cc's forward) ran every context once, "
               "compared row for row. The tiny models keep no cache.\n\n"
             : "Each backend ran the cached step, the full-prefix pass, the "
               "whole prefill and a seeded chunked prefill of every "
               "context.\n\n");
  o << "## Backends\n\n| backend | threads | seconds | warm RSS (MB) | peak "
       "RSS (MB) | logits SHA-256 |\n| --- | ---: | ---: | ---: | ---: | "
       "--- |\n";
  for (const auto& b : rec.at("backends")) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.2f", b.at("seconds").get<double>());
    o << "| " << b.at("name").get<std::string>() << " | " << b.at("threads")
      << " | " << secs << " | " << mb(b.at("warm_rss").get<uint64_t>()) << " | "
      << mb(b.at("peak_rss").get<uint64_t>()) << " | `"
      << b.at("logits_sha256").get<std::string>().substr(0, 16) << "` |\n";
  }
  o << "\nResident sizes are the lockstep process's (weights included); the "
       "wasm backend computes in a Node.js child process, whose module "
       "memory is recorded in record.json (`module_bytes`).\n\n"
    << "![time per " << (tiny ? "prefix" : "cached step") << "](steps.svg)\n\n";
  const json& bs = rec.at("backends");
  if (!bs.empty() && !bs[0].at("cache").empty()) {
    o << "## Per-layer digests (keys and values of every context's cache)\n\n"
         "| layer |";
    for (const auto& b : bs)
      o << " " << b.at("name").get<std::string>() << " |";
    o << "\n| --- |";
    for (size_t i = 0; i < bs.size(); ++i) o << " --- |";
    o << "\n";
    if (!bs.empty()) {
      const size_t n = bs[0].at("cache").size();
      for (size_t i = 0; i < n; ++i) {
        o << "| " << bs[0].at("cache")[i].at("name").get<std::string>() << " |";
        for (const auto& b : bs) {
          o << " `"
            << b.at("cache")[i].at("sha256").get<std::string>().substr(0, 16)
            << "` |";
        }
        o << "\n";
      }
    }
    o << "\n";
  }
  if (!rec.at("ops").empty()) {
    o << (tiny ? "## The every-position pass's operations (all contexts)"
               : "## The reference's operations (all contexts)")
      << "\n\n| operation | SHA-256 |\n| --- | --- |\n";
    for (const auto& h : rec.at("ops")) {
      o << "| " << h.at("name").get<std::string>() << " | `"
        << h.at("sha256").get<std::string>() << "` |\n";
    }
  }
  o << "\n## Completions (greedy" << (tiny ? ", bytes" : "") << ")\n\n";
  if (!bs.empty()) {
    for (const auto& cm : bs[0].at("completions")) {
      o << "- `" << esc_md(cm.at("prompt").get<std::string>()) << "` -> `"
        << esc_md(cm.at("text").get<std::string>()) << "` (tokens "
        << cm.at("tokens").dump() << ")\n";
    }
    o << "\nEvery backend generated these tokens"
      << (pass ? "." : " unless the mismatch above says otherwise.") << "\n";
  }
  o << "\n## Files\n\n| what | bytes | SHA-256 |\n| --- | ---: | --- |\n";
  for (const auto& f : rec.at("files")) {
    o << "| " << f.at("label").get<std::string>() << " | " << f.at("bytes")
      << " | `" << f.at("sha256").get<std::string>() << "` |\n";
  }
  o << "\n## Build\n\n";
  for (const auto& [k, v] : rec.at("build").items()) {
    o << "- " << k << ": `" << esc_md(v.get<std::string>()) << "`\n";
  }
  o << "\n## Machine\n\n";
  for (const auto& [k, v] : rec.at("machine").items()) {
    o << "- " << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump())
      << "\n";
  }
  o << "\nCheck on another machine: `lockstep verify --model MODEL "
       "--against DIR` (DIR: this folder).\n";
  return o.str();
}

// The weights a record ran: binary32 by their plain-layout SHA-256; int8
// (docs/int8.md) by the int8 payload's SHA-256, which its one layout
// makes the identity (the binary32 digest it was quantized from is shared
// with the binary32 files of the model, so it cannot tell them apart).
std::string weights_identity(const json& rec) {
  const json& m = rec.at("model");
  if (m.value("kind", "gpt2") == "tiny") {
    return "tiny binary64 with payload SHA-256 " +
           m.at("payload_sha256").get<std::string>();
  }
  if (m.value("quant", "f32") == "int8") {
    return "int8 with payload SHA-256 " +
           m.at("payload_sha256").get<std::string>();
  }
  return "binary32 with SHA-256 " + m.at("plain_sha256").get<std::string>() +
         " (plain layout)";
}

// "A, <other> B" when the records ran different weights.
std::optional<std::string> weights_difference(const json& a, const json& b,
                                              const std::string& other) {
  const std::string ia = weights_identity(a), ib = weights_identity(b);
  if (ia == ib) return std::nullopt;
  return ia + ", " + other + " " + ib;
}

void write_text(const fs::path& p, const std::string& s) {
  write_file_atomic(p.string(), std::vector<uint8_t>(s.begin(), s.end()));
}

// What every record holds besides its model: settings, files, build,
// machine, result, operations, backends.
json record_body(const VerifyResult& r, const VerifyOptions& o, int n_ctx,
                 const VerifyProvenance& p) {
  json rec;
  rec["format"] = "lockstep-verify/1";
  rec["created"] = utc_now();
  rec["command"] = p.command;
  int max_len = o.max_length > 0 ? std::min(o.max_length, n_ctx) : n_ctx;
  rec["settings"] = {{"contexts", o.contexts},
                     {"min_length", std::clamp(o.min_length, 1, max_len)},
                     {"max_length", max_len},
                     {"seed", o.seed},
                     {"backends", o.backends},
                     {"threads", o.threads},
                     {"completion_tokens", o.completion_tokens},
                     {"op_hashes", o.op_hashes}};
  json files = json::array();
  for (const auto& [label, path] : p.files) {
    files.push_back({{"label", label},
                     {"path", path},
                     {"bytes", uint64_t(fs::file_size(path))},
                     {"sha256", sha256_file_hex(path)}});
  }
  rec["files"] = files;
  rec["build"] = build();
  rec["machine"] = machine();
  rec["result"] = {
      {"passed", r.mismatches == 0},
      {"contexts", r.contexts},
      {"positions", r.positions},
      {"contexts_sha256", r.contexts_sha256},
      {"logits_compared", r.logits_compared},
      {"cache_words_compared", r.cache_words_compared},
      {"mismatches", r.mismatches},
      {"first_mismatch", r.first ? json(r.first->describe()) : json()}};
  rec["ops"] = hashes_json(r.ops);
  json bs = json::array();
  for (const auto& b : r.backends) {
    json cms = json::array();
    for (const auto& cm : b.completions) {
      cms.push_back(
          {{"prompt", cm.prompt}, {"tokens", cm.tokens}, {"text", cm.text}});
    }
    std::vector<double> ms;
    for (double v : b.step_ms) ms.push_back(std::round(v * 1000) / 1000);
    bs.push_back({{"name", b.name},
                  {"requested", b.requested},
                  {"threads", b.threads},
                  {"seconds", std::round(b.seconds * 1000) / 1000},
                  {"warm_rss", b.warm_rss},
                  {"peak_rss", b.peak_rss},
                  {"module_bytes", b.module_bytes},
                  {"step_ms", ms},
                  {"logits_sha256", b.logits_sha256},
                  {"cache", hashes_json(b.cache)},
                  {"completions", cms}});
    if (!b.ops.empty()) bs.back()["ops"] = hashes_json(b.ops);
  }
  rec["backends"] = bs;
  rec["context_sources"] = r.context_sources;
  return rec;
}

}  // namespace

json verify_record(const VerifyResult& r, const VerifyOptions& o,
                   const Gpt2Weights& w, const VerifyProvenance& p) {
  json rec = record_body(r, o, w.config.n_ctx, p);
  rec["settings"]["quant"] = o.quant;
  const ls_gpt2_config& c = w.config;
  const bool int8 = w.quant == "int8";
  rec["model"] = {{"given", p.model},
                  {"format", w.format},
                  {"quant", w.quant},
                  {"layout", int8 ? std::string(kGpt2Q8Layout)
                                  : std::string(gpt2_layout_name(w.layout))},
                  {"config",
                   {{"n_vocab", c.n_vocab},
                    {"n_ctx", c.n_ctx},
                    {"n_embd", c.n_embd},
                    {"n_head", c.n_head},
                    {"n_layer", c.n_layer}}},
                  {"payload_sha256", w.payload_sha256},
                  {"plain_sha256", w.plain_sha256}};
  return rec;
}

json verify_tiny_record(const VerifyResult& r, const VerifyOptions& o,
                        const TinyModel& m, const VerifyProvenance& p) {
  json rec = record_body(r, o, m.n_ctx, p);
  rec["settings"]["bound"] = o.bound;
  rec["model"] = {{"given", p.model},
                  {"kind", "tiny"},
                  {"format", "tiny checkpoint"},
                  {"quant", "f64"},
                  {"layout", "tiny (docs/models.md)"},
                  {"config",
                   {{"n_vocab", LS_TINY_VOCAB},
                    {"n_ctx", m.n_ctx},
                    {"n_embd", LS_TINY_EMBD},
                    {"n_head", LS_TINY_HEADS},
                    {"n_layer", 1},
                    {"n_ff", LS_TINY_FF}}},
                  {"payload_sha256", m.payload_sha256},
                  {"file_sha256", m.file_sha256}};
  return rec;
}

void write_verify_bundle(const std::string& dir, const json& record) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create '" + dir + "': " + ec.message());
  // A completion cut inside a multi-byte character is not UTF-8: such
  // bytes are written as U+FFFD (the tokens are exact).
  write_text(fs::path(dir) / "record.json",
             record.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
  write_text(fs::path(dir) / "steps.svg", steps_svg(record));
  write_text(fs::path(dir) / "report.md", report_md(record));
}

json read_verify_record(const std::string& path) {
  const fs::path p =
      fs::is_directory(path) ? fs::path(path) / "record.json" : fs::path(path);
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error("cannot read the verify record '" + p.string() + "'");
  json rec;
  try {
    rec = json::parse(in);
    if (rec.at("format").get<std::string>() != "lockstep-verify/1") {
      throw Error("'" + p.string() + "' is not a lockstep-verify/1 record");
    }
    // The fields every check reads, with their types.
    rec.at("settings").at("contexts").get<int>();
    rec.at("settings").at("seed").get<uint64_t>();
    if (rec.at("model").value("kind", "gpt2") == "tiny") {
      rec.at("model").at("payload_sha256").get<std::string>();
    } else {
      rec.at("model").at("plain_sha256").get<std::string>();
    }
    if (rec.at("model").value("quant", "f32") == "int8") {
      rec.at("model").at("payload_sha256").get<std::string>();
    }
    rec.at("result").at("contexts_sha256").get<std::string>();
    hashes_of(rec.at("ops"));
    for (const auto& b : rec.at("backends")) {
      backend_hashes(b);
      b.at("name").get<std::string>();
    }
  } catch (const json::exception& e) {
    throw Error("the verify record '" + p.string() +
                "' is malformed: " + e.what());
  }
  return rec;
}

VerifyOptions options_from_record(const json& rec) {
  const json& s = rec.at("settings");
  VerifyOptions o;
  o.contexts = s.at("contexts").get<int>();
  o.min_length = s.at("min_length").get<int>();
  o.max_length = s.at("max_length").get<int>();
  o.seed = s.at("seed").get<uint64_t>();
  o.completion_tokens = s.at("completion_tokens").get<int>();
  o.op_hashes = s.at("op_hashes").get<bool>();
  o.quant = s.value("quant", "none");  // records before int8: binary32
  o.bound = s.value("bound", 10.0);    // the tiny models' weight bound
  return o;
}

std::vector<std::string> compare_records(const json& before, const json& now) {
  std::vector<std::string> out;
  const auto str = [](const json& j, const char* a, const char* b) {
    return j.at(a).at(b).get<std::string>();
  };
  if (auto d = weights_difference(before, now, "this one")) {
    out.push_back("weights: the record's model is " + *d);
    return out;  // nothing else can agree
  }
  if (str(before, "result", "contexts_sha256") !=
      str(now, "result", "contexts_sha256")) {
    out.push_back(
        "contexts: the tokens differ (another tokenizer or Tiny "
        "Shakespeare file?): record " +
        str(before, "result", "contexts_sha256") + ", now " +
        str(now, "result", "contexts_sha256"));
  }
  if (auto d = first_difference(hashes_of(before.at("ops")),
                                hashes_of(now.at("ops")))) {
    out.push_back("reference operations: first difference at " + *d);
  }
  const json& bb = before.at("backends");
  if (bb.empty()) {
    out.push_back("the record has no backend results");
    return out;
  }
  const std::vector<NamedHash> ref = backend_hashes(bb[0]);
  for (const auto& b : now.at("backends")) {
    const std::string name = b.at("name").get<std::string>();
    if (auto d = first_difference(ref, backend_hashes(b))) {
      out.push_back(name + ": first difference from the record's " +
                    bb[0].at("name").get<std::string>() + " at " + *d);
    }
    if (auto d = first_shared_difference(backend_ops(b),
                                         hashes_of(before.at("ops")))) {
      out.push_back(name +
                    ": operations: first difference from the record's "
                    "reference operations at " +
                    *d);
    }
    const json& ca = bb[0].at("completions");
    const json& cb = b.at("completions");
    for (size_t i = 0; i < std::min(ca.size(), cb.size()); ++i) {
      if (ca[i].at("tokens") != cb[i].at("tokens")) {
        out.push_back(name + ": completion of '" +
                      ca[i].at("prompt").get<std::string>() +
                      "' differs: record " + ca[i].at("tokens").dump() +
                      ", now " + cb[i].at("tokens").dump());
      }
    }
  }
  return out;
}

std::vector<std::string> bisect_records(const json& a, const json& b) {
  std::vector<std::string> out;
  if (auto d = weights_difference(a, b, "the second's")) {
    out.push_back("the weights differ (the first record's model is " + *d +
                  ")");
  }
  if (a.at("result").at("contexts_sha256") !=
      b.at("result").at("contexts_sha256")) {
    out.push_back("the contexts differ: the records cannot be bisected");
    return out;
  }
  if (auto d =
          first_difference(hashes_of(a.at("ops")), hashes_of(b.at("ops")))) {
    out.push_back("reference operations: first difference at " + *d);
  }
  for (const auto& ba : a.at("backends")) {
    for (const auto& bb : b.at("backends")) {
      if (ba.at("requested") != bb.at("requested") ||
          ba.at("threads") != bb.at("threads")) {
        continue;
      }
      if (auto d = first_difference(backend_hashes(ba), backend_hashes(bb))) {
        out.push_back(ba.at("name").get<std::string>() +
                      ": first difference at " + *d);
      }
      if (auto d = first_shared_difference(backend_ops(ba), backend_ops(bb))) {
        out.push_back(ba.at("name").get<std::string>() +
                      ": operations: first difference at " + *d);
      }
    }
  }
  return out;
}

std::vector<std::string> bisect_backends(const json& rec) {
  std::vector<std::string> out;
  const json& bs = rec.at("backends");
  for (size_t i = 1; i < bs.size(); ++i) {
    if (auto d =
            first_difference(backend_hashes(bs[0]), backend_hashes(bs[i]))) {
      out.push_back(bs[0].at("name").get<std::string>() + " and " +
                    bs[i].at("name").get<std::string>() +
                    ": first difference at " + *d);
    }
  }
  // Each backend that shows its operations against the reference's.
  for (const auto& b : bs) {
    if (auto d =
            first_shared_difference(backend_ops(b), hashes_of(rec.at("ops")))) {
      out.push_back(b.at("name").get<std::string>() +
                    ": operations: first difference from the reference "
                    "operations at " +
                    *d);
    }
  }
  return out;
}

}  // namespace lockstep
