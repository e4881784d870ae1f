#include "serve/request.h"

#include <cmath>
#include <set>

#include "formats/bounded_json.h"

namespace lockstep::serve {
namespace {

using nlohmann::json;

// Larger than any vocabulary's top-N anyone reads; OpenAI allows 5 (legacy
// completions) and 20 (chat).
constexpr int kMaxLogprobs = 20;
constexpr size_t kMaxStops = 16;
constexpr size_t kMaxStopBytes = 256;

std::string type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "an array";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_float:
      return "a fractional number";
    default:
      return "an integer";
  }
}

[[noreturn]] void bad(const std::string& param, const std::string& message) {
  throw RequestError(400, message, param);
}

// An integer field in [lo, hi].
long long integer(const json& v, const std::string& name, long long lo,
                  long long hi) {
  // Appended, not "[" + ...: GCC 12's -Wrestrict misfires on that at -O3.
  std::string range = "[";
  range += std::to_string(lo);
  range += ", ";
  range += std::to_string(hi);
  range += "]";
  if (!v.is_number_integer()) {
    bad(name, name + " must be an integer in " + range + " (got " +
                  type_name(v) + ")");
  }
  // An unsigned value above INT64_MAX is out of range too.
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(hi)) {
    bad(name,
        name + " must be an integer in " + range + " (got " + v.dump() + ")");
  }
  const long long x = v.get<long long>();
  if (x < lo || x > hi) {
    bad(name,
        name + " must be an integer in " + range + " (got " + v.dump() + ")");
  }
  return x;
}

double number(const json& v, const std::string& name, double lo, double hi,
              bool lo_open, const std::string& range) {
  if (!v.is_number()) {
    bad(name,
        name + " must be a number in " + range + " (got " + type_name(v) + ")");
  }
  const double x = v.get<double>();
  // Written so that NaN and infinities fail too.
  if (!(lo_open ? x > lo : x >= lo) || !(x <= hi)) {
    bad(name,
        name + " must be a number in " + range + " (got " + v.dump() + ")");
  }
  return x;
}

bool boolean(const json& v, const std::string& name) {
  if (!v.is_boolean()) {
    bad(name, name + " must be true or false (got " + type_name(v) + ")");
  }
  return v.get<bool>();
}

std::vector<std::string> stop_list(const json& v) {
  std::vector<std::string> out;
  if (v.is_null()) return out;
  if (v.is_string()) {
    out.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    if (v.size() > kMaxStops) {
      bad("stop", "stop has " + std::to_string(v.size()) +
                      " strings; at most " + std::to_string(kMaxStops));
    }
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) {
        bad("stop", "stop[" + std::to_string(i) + "] must be a string (got " +
                        type_name(v[i]) + ")");
      }
      out.push_back(v[i].get<std::string>());
    }
  } else {
    bad("stop", "stop must be a string or an array of strings (got " +
                    type_name(v) + ")");
  }
  for (const auto& s : out) {
    if (s.empty()) bad("stop", "stop strings must not be empty");
    if (s.size() > kMaxStopBytes) {
      bad("stop", "a stop string has " + std::to_string(s.size()) +
                      " bytes; at most " + std::to_string(kMaxStopBytes));
    }
  }
  return out;
}

// One message's content: a string, or an array of {"type": "text", "text":
// ...} parts (concatenated).
std::string message_content(const json& c, const std::string& where) {
  if (c.is_string()) return c.get<std::string>();
  if (c.is_array()) {
    std::string text;
    for (size_t i = 0; i < c.size(); ++i) {
      const json& part = c[i];
      const std::string at = where + ".content[" + std::to_string(i) + "]";
      if (!part.is_object() || !part.contains("type") ||
          part["type"] != "text" || !part.contains("text") ||
          !part["text"].is_string()) {
        bad("messages", at + " must be {\"type\": \"text\", \"text\": STRING} "
                             "(a base model reads text only)");
      }
      text += part["text"].get<std::string>();
    }
    return text;
  }
  bad("messages", where +
                      ".content must be a string or an array of text "
                      "parts (got " +
                      type_name(c) + ")");
}

const char* role_label(const std::string& role) {
  if (role == "system" || role == "developer") return "System";
  if (role == "user") return "User";
  if (role == "assistant") return "Assistant";
  return nullptr;
}

void check_messages(const json& m) {
  if (!m.is_array() || m.empty()) {
    bad("messages",
        "messages must be a non-empty array of {\"role\", "
        "\"content\"} objects (got " +
            (m.is_array() ? std::string("an empty array") : type_name(m)) +
            ")");
  }
  for (size_t i = 0; i < m.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m[i].is_object()) {
      bad("messages",
          where + " must be an object (got " + type_name(m[i]) + ")");
    }
    for (const auto& [key, value] : m[i].items()) {
      if (key != "role" && key != "content" && key != "name") {
        bad("messages", where + " has the field '" + key +
                            "', which lockstep does not support (role, "
                            "content, name)");
      }
    }
    if (!m[i].contains("role") || !m[i]["role"].is_string()) {
      bad("messages", where + ".role must be a string");
    }
    if (role_label(m[i]["role"].get<std::string>()) == nullptr) {
      bad("messages", where + ".role '" + m[i]["role"].get<std::string>() +
                          "' is not system, developer, user or assistant");
    }
    if (!m[i].contains("content")) bad("messages", where + " has no content");
    message_content(m[i]["content"], where);
    if (m[i].contains("name") && !m[i]["name"].is_string()) {
      bad("messages", where + ".name must be a string");
    }
  }
}

// Fields OpenAI defines that lockstep accepts only at their defaults (a
// different value would change the answer, and lockstep does not do it).
void require_default(const json& body, const std::string& name,
                     const json& def) {
  if (!body.contains(name) || body[name].is_null()) return;
  if (body[name] != def) {
    bad(name, name + " " + body[name].dump() + " is not supported (only " +
                  def.dump() + ")");
  }
}

}  // namespace

std::string chat_prompt(const json& messages) {
  std::string text;
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    text += role_label(m["role"].get<std::string>());
    text += ": ";
    text +=
        message_content(m["content"], "messages[" + std::to_string(i) + "]");
    text += "\n";
  }
  text += "Assistant:";
  return text;
}

CompletionRequest parse_request(Endpoint endpoint, std::string_view body,
                                const RequestLimits& limits,
                                const Tokenizer& tok) {
  json j;
  try {
    j = parse_bounded_json(body.begin(), body.end());
  } catch (const JsonTooDeep&) {
    bad("", "the body is JSON " + json_too_deep_text());
  } catch (const json::exception& e) {
    bad("", std::string("the body is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) {
    bad("", "the body must be a JSON object (got " + type_name(j) + ")");
  }
  const bool chat = endpoint == Endpoint::kChat;
  static const std::set<std::string> common = {"model",
                                               "max_tokens",
                                               "temperature",
                                               "top_p",
                                               "top_k",
                                               "seed",
                                               "stop",
                                               "logprobs",
                                               "stream",
                                               "stream_options",
                                               "n",
                                               "presence_penalty",
                                               "frequency_penalty",
                                               "logit_bias",
                                               "user"};
  static const std::set<std::string> completions_only = {"prompt", "echo",
                                                         "best_of", "suffix"};
  static const std::set<std::string> chat_only = {"messages", "top_logprobs",
                                                  "max_completion_tokens"};
  for (const auto& [key, value] : j.items()) {
    const bool known = common.count(key) > 0 ||
                       (chat ? chat_only : completions_only).count(key) > 0;
    if (!known) {
      bad(key, "unknown field '" + key + "' (docs/serve.md lists the fields " +
                   (chat ? "/v1/chat/completions" : "/v1/completions") +
                   " accepts)");
    }
  }
  const auto has = [&](const char* k) {
    return j.contains(k) && !j[k].is_null();
  };

  CompletionRequest r;
  r.endpoint = endpoint;
  if (has("model")) {
    if (!j["model"].is_string()) {
      bad("model",
          "model must be a string (got " + type_name(j["model"]) + ")");
    }
    const std::string m = j["model"].get<std::string>();
    if (m != limits.model_id) {
      throw RequestError(404,
                         "the model '" + m +
                             "' is not served here; this server serves '" +
                             limits.model_id + "' (GET /v1/models)",
                         "model", "invalid_request_error", "model_not_found");
    }
  }
  require_default(j, "n", 1);
  require_default(j, "presence_penalty", 0);
  require_default(j, "frequency_penalty", 0);
  if (has("logit_bias") &&
      !(j["logit_bias"].is_object() && j["logit_bias"].empty())) {
    bad("logit_bias", "logit_bias is not supported (only {} or null)");
  }
  if (has("user") && !j["user"].is_string()) {
    bad("user", "user must be a string (got " + type_name(j["user"]) + ")");
  }
  if (has("stream")) r.stream = boolean(j["stream"], "stream");
  if (has("stream_options")) {
    const json& o = j["stream_options"];
    if (!o.is_object()) {
      bad("stream_options",
          "stream_options must be an object (got " + type_name(o) + ")");
    }
    for (const auto& [key, value] : o.items()) {
      if (key != "include_usage") {
        bad("stream_options", "unknown field stream_options." + key);
      }
      boolean(value, "stream_options.include_usage");
    }
  }

  // The prompt.
  if (chat) {
    if (!j.contains("messages")) bad("messages", "messages is required");
    check_messages(j["messages"]);
    r.prompt_text = chat_prompt(j["messages"]);
    r.prompt_tokens = tok.encode(r.prompt_text);
  } else {
    require_default(j, "echo", false);
    require_default(j, "best_of", 1);
    if (has("suffix") &&
        !(j["suffix"].is_string() && j["suffix"].get<std::string>().empty())) {
      bad("suffix",
          "suffix is not supported (a base model has no insert "
          "mode)");
    }
    if (!j.contains("prompt")) bad("prompt", "prompt is required");
    json p = j["prompt"];
    // ["text"]: one prompt in OpenAI's batch form.
    if (p.is_array() && p.size() == 1 && p[0].is_string()) p = p[0];
    if (p.is_string()) {
      r.prompt_text = p.get<std::string>();
      r.prompt_tokens = tok.encode(r.prompt_text);
    } else if (p.is_array() && !p.empty() && p[0].is_number()) {
      for (size_t i = 0; i < p.size(); ++i) {
        const std::string at = "prompt[" + std::to_string(i) + "]";
        if (!p[i].is_number_integer()) {
          bad("prompt",
              at + " must be a token id (got " + type_name(p[i]) + ")");
        }
        if (p[i].is_number_unsigned()
                ? p[i].get<uint64_t>() >= uint64_t(limits.n_vocab)
                : true) {
          bad("prompt", at + " = " + p[i].dump() +
                            " is not a token id in [0, " +
                            std::to_string(limits.n_vocab) + ")");
        }
        r.prompt_tokens.push_back(int32_t(p[i].get<uint64_t>()));
      }
      r.prompt_text = tok.decode(r.prompt_tokens);
    } else if (p.is_array() && p.size() > 1) {
      bad("prompt", "one prompt per request (got an array of " +
                        std::to_string(p.size()) +
                        "); send a string or an array of token ids");
    } else {
      bad("prompt",
          "prompt must be a string or an array of token ids (got " +
              (p.is_array() ? std::string("an empty array") : type_name(p)) +
              ")");
    }
  }
  if (r.prompt_tokens.empty()) {
    bad(chat ? "messages" : "prompt",
        "the prompt is empty: give at least one token");
  }
  if (r.prompt_tokens.size() > size_t(limits.n_ctx)) {
    throw RequestError(400,
                       "the prompt has " +
                           std::to_string(r.prompt_tokens.size()) +
                           " tokens; the model's context is " +
                           std::to_string(limits.n_ctx) + " positions",
                       chat ? "messages" : "prompt", "invalid_request_error",
                       "context_length_exceeded");
  }

  // Length: chat's default is the server's limit (generation ends at the
  // context limit in any case), completions' OpenAI's 16.
  const char* max_name = chat && has("max_completion_tokens")
                             ? "max_completion_tokens"
                             : "max_tokens";
  r.max_tokens = chat ? limits.max_tokens : std::min(16, limits.max_tokens);
  if (has(max_name)) {
    r.max_tokens = int(integer(j[max_name], max_name, 1, limits.max_tokens));
  }

  // Sampling (docs/serve.md "Sampling").
  double temperature = 1.0, top_p = 1.0;
  long long top_k = 0;
  uint64_t seed = 0;
  if (has("temperature")) {
    temperature =
        number(j["temperature"], "temperature", 0, 2, false, "[0, 2]");
  }
  if (has("top_p")) top_p = number(j["top_p"], "top_p", 0, 1, true, "(0, 1]");
  if (has("top_k")) top_k = integer(j["top_k"], "top_k", 0, limits.n_vocab);
  if (has("seed")) {
    const json& s = j["seed"];
    if (!s.is_number_unsigned()) {
      bad("seed", "seed must be an integer in [0, 18446744073709551615] (got " +
                      (s.is_number_integer() ? s.dump() : type_name(s)) + ")");
    }
    seed = s.get<uint64_t>();
  }
  r.sampler.seed = seed;
  if (temperature == 0.0) {
    r.sampler.top_k = 0;  // greedy: top_p, top_k and the seed do not matter
  } else {
    r.sampler.temperature = temperature;
    r.sampler.top_p = top_p;
    r.sampler.top_k = top_k > 0 ? int(top_k) : limits.n_vocab;
  }

  r.stops = stop_list(has("stop") ? j["stop"] : json());
  if (chat) r.stops.emplace_back(kChatUserStop);

  if (chat) {
    const bool lp = has("logprobs") && boolean(j["logprobs"], "logprobs");
    if (has("top_logprobs")) {
      const int n =
          int(integer(j["top_logprobs"], "top_logprobs", 0, kMaxLogprobs));
      if (!lp) {
        bad("top_logprobs", "top_logprobs needs logprobs: true");
      }
      r.top_logprobs = n;
    } else if (lp) {
      r.top_logprobs = 0;
    }
  } else if (has("logprobs")) {
    r.top_logprobs = int(integer(j["logprobs"], "logprobs", 0, kMaxLogprobs));
  }
  return r;
}

}  // namespace lockstep::serve
