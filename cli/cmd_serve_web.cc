// lockstep serve-web: the browser page (web/, docs/browser.md) on
// 127.0.0.1, with the WebAssembly modules this build made, the shipped
// models and GPT-2's encoder.json, and POST /api/tokenize (the native BPE
// tokenizer, so that the page's GPT-2 prompts get the CLI's token ids).
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "hosts/native/wasm_host.h"
#include "lockstep/error.h"
#include "lockstep/paths.h"
#include "tokenizer/bpe.h"
#ifdef LOCKSTEP_HAVE_HTTPLIB
#include <httplib.h>
#endif

namespace lockstep::cli {
namespace {

struct ServeWebArgs {
  int port = 8090;
  std::string web_dir = LOCKSTEP_WEB_DIR;
  std::vector<std::string> mounts;  // URL=DIR
  bool quit_after_bind = false;
};

int run(const ServeWebArgs& a) {
#ifndef LOCKSTEP_HAVE_HTTPLIB
  (void)a;
  throw Error(
      "this lockstep was built without cpp-httplib, so it has no server "
      "(apt-get install libcpp-httplib-dev, then configure again)");
#else
  namespace fs = std::filesystem;
  const std::string wasm_dir = fs::path(wasm_module_path()).parent_path();
  const std::string data = data_dir();
  struct Mount {
    std::string url, dir;
  };
  std::vector<Mount> mounts = {{"/", a.web_dir},
                               {"/wasm", wasm_dir},
                               {"/models", models_dir()},
                               {"/data/gpt2", data + "/gpt2"}};
  for (const std::string& m : a.mounts) {
    const size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || m[0] != '/' ||
        eq + 1 == m.size()) {
      throw Error("--mount wants /URL=DIR (e.g. /fixtures=tests/data), not '" +
                  m + "'");
    }
    mounts.push_back({m.substr(0, eq), m.substr(eq + 1)});
  }
  for (const Mount& m : mounts) {
    if (!fs::is_directory(m.dir)) {
      throw Error(
          "serve-web: " + m.dir + " (for " + m.url + ") is not a folder" +
          (m.url == "/wasm" ? " (build the modules: ninja -C build)" : ""));
    }
  }
  if (!fs::exists(wasm_dir + "/lockstep-web.wasm")) {
    throw Error("serve-web: " + wasm_dir +
                "/lockstep-web.wasm is missing (build the modules: ninja -C "
                "build lockstep_wasm)");
  }
  const Tokenizer tok = Tokenizer::load(data + "/gpt2");

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  httplib::Server http;
  const std::pair<const char*, const char*> types[] = {
      {"html", "text/html; charset=utf-8"},
      {"mjs", "text/javascript; charset=utf-8"},
      {"js", "text/javascript; charset=utf-8"},
      {"css", "text/css; charset=utf-8"},
      {"wasm", "application/wasm"},
      {"json", "application/json"},
      {"sha256", "text/plain; charset=utf-8"},
      {"png", "image/png"},
      {"md", "text/plain; charset=utf-8"},
      {"lockstep", "application/octet-stream"},
      {"safetensors", "application/octet-stream"},
      {"f32", "application/octet-stream"}};
  for (const auto& [ext, type] : types) {
    http.set_file_extension_and_mimetype_mapping(ext, type);
  }
  for (const Mount& m : mounts) http.set_mount_point(m.url, m.dir);
  // Nothing is cached, so a rebuilt module is fetched with its new digest.
  http.set_file_request_handler(
      [](const httplib::Request&, httplib::Response& res) {
        res.set_header("Cache-Control", "no-store");
      });
  http.Post("/api/tokenize", [&tok](const httplib::Request& req,
                                    httplib::Response& res) {
    nlohmann::json out;
    try {
      const nlohmann::json in = nlohmann::json::parse(req.body);
      if (!in.is_object() || !in.contains("text") || !in["text"].is_string()) {
        throw Error("the body must be {\"text\": \"...\"}");
      }
      out["tokens"] = tok.encode(in["text"].get<std::string>());
      res.set_content(out.dump(), "application/json");
    } catch (const std::exception& e) {
      res.status = 400;
      out = {{"error", e.what()}};
      res.set_content(out.dump(), "application/json");
    }
  });
  http.Get("/api/info", [&](const httplib::Request&, httplib::Response& res) {
    nlohmann::json out = {{"wasm_sha256", wasm_module_sha256()},
                          {"server", "lockstep serve-web"}};
    res.set_content(out.dump(), "application/json");
  });
  const int port = a.port == 0
                       ? http.bind_to_any_port("127.0.0.1")
                       : (http.bind_to_port("127.0.0.1", a.port) ? a.port : -1);
  if (port < 0) {
    throw Error("serve-web: cannot listen on 127.0.0.1:" +
                std::to_string(a.port));
  }
  std::printf("serve-web: http://127.0.0.1:%d/ (web %s, modules %s)\n", port,
              a.web_dir.c_str(), wasm_dir.c_str());
  std::fflush(stdout);
  if (a.quit_after_bind) return 0;
  std::thread stopper([&http, set] {
    int sig = 0;
    sigwait(&set, &sig);
    http.stop();
  });
  http.listen_after_bind();
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  return 0;
#endif
}

}  // namespace

Action add_serve_web(CLI::App& app) {
  auto a = std::make_shared<ServeWebArgs>();
  app.add_option("--port", a->port,
                 "TCP port on 127.0.0.1 (0: any free port, named in the first "
                 "line)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--web", a->web_dir, "the page's folder")
      ->check(CLI::ExistingDirectory)
      ->capture_default_str();
  app.add_option("--mount", a->mounts,
                 "also serve DIR at /URL (repeatable), e.g. "
                 "--mount /fixtures=tests/data");
  app.add_flag("--check", a->quit_after_bind,
               "check the folders and the port, print the address, exit");
  return [a] { return run(*a); };
}

}  // namespace lockstep::cli
