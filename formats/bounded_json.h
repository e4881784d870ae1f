// JSON parsing with a nesting bound, for every JSON text lockstep reads from
// a file it does not pin by digest (checkpoint headers, safetensors headers,
// config.json). nlohmann-json parses iteratively, but copying, comparing or
// dump()ing a parsed value recurses once per level: a header nested 65,000
// levels deep parsed fine and then overflowed the stack. The bound is
// enforced while parsing, through the library's parser callback (which is
// told the depth of every object and array it opens), so no deep value is
// ever built.
#ifndef LOCKSTEP_FORMATS_BOUNDED_JSON_H_
#define LOCKSTEP_FORMATS_BOUNDED_JSON_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace lockstep {

// The deepest nesting accepted: serde_json's default recursion limit, which
// the reference safetensors implementation (Rust) applies to its headers.
// lockstep's own headers nest 3 levels.
inline constexpr int kMaxJsonDepth = 128;

// Thrown by parse_bounded_json (caught by each reader, which names its
// file): a nesting deeper than kMaxJsonDepth.
struct JsonTooDeep {
  int depth;
};

// The text's message for JsonTooDeep.
inline std::string json_too_deep_text() {
  return "nested deeper than " + std::to_string(kMaxJsonDepth) +
         " levels (refused before anything recurses)";
}

// Parses [begin, end) with nlohmann::json::parse, throwing JsonTooDeep as
// soon as an object or array opens below kMaxJsonDepth levels. `also`
// (optional) sees every parser event too and decides what is kept, as the
// library's own parser callback would. Syntax errors throw
// nlohmann::json::exception as parse() does.
template <typename It>
nlohmann::json parse_bounded_json(
    It begin, It end,
    std::function<bool(int, nlohmann::json::parse_event_t, nlohmann::json&)>
        also = nullptr) {
  using E = nlohmann::json::parse_event_t;
  // The callback's depth for object_start / array_start is the number of
  // containers already open, so the top level's is 0.
  auto bound = [also = std::move(also)](int depth, E event,
                                        nlohmann::json& parsed) {
    if ((event == E::object_start || event == E::array_start) &&
        depth >= kMaxJsonDepth) {
      throw JsonTooDeep{depth + 1};
    }
    return also ? also(depth, event, parsed) : true;
  };
  return nlohmann::json::parse(begin, end, bound);
}

}  // namespace lockstep

#endif  // LOCKSTEP_FORMATS_BOUNDED_JSON_H_
