#include "train/dataset.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <utility>

#include "formats/sha256.h"
#include "lockstep/error.h"
#include "lockstep/paths.h"

namespace lockstep::train {

std::string default_dataset_path() {
  return data_dir() + "/tinyshakespeare.txt";
}

Dataset split_dataset(std::vector<uint8_t> bytes) {
  Dataset d;
  const size_t n_train = bytes.size() / 10 * 9 + bytes.size() % 10 * 9 / 10;
  d.validation.assign(bytes.begin() + static_cast<std::ptrdiff_t>(n_train),
                      bytes.end());
  bytes.resize(n_train);
  d.train = std::move(bytes);
  return d;
}

Dataset load_dataset(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("cannot open dataset '" + path +
                "' for reading (Tiny Shakespeare, expected SHA-256 " +
                kTinyShakespeareSha256 + ")");
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) throw Error("error reading dataset '" + path + "'");
  const std::string digest = to_hex(sha256(bytes.data(), bytes.size()));
  if (digest != kTinyShakespeareSha256) {
    throw Error("dataset '" + path + "' has SHA-256 " + digest + ", expected " +
                kTinyShakespeareSha256 +
                " (Tiny Shakespeare, 1,115,394 bytes)");
  }
  Dataset d = split_dataset(std::move(bytes));
  d.path = path;
  d.sha256 = digest;
  return d;
}

double unigram_bits_per_byte(const Dataset& data) {
  if (data.validation.empty()) {
    throw Error("unigram baseline: the validation split is empty");
  }
  std::array<uint64_t, 256> train_count{};
  std::array<uint64_t, 256> val_count{};
  for (uint8_t b : data.train) ++train_count[b];
  for (uint8_t b : data.validation) ++val_count[b];
  const double denom = static_cast<double>(data.train.size()) + 256.0;
  double nats = 0.0;
  for (int b = 0; b < 256; ++b) {
    if (val_count[b] == 0) continue;
    const double p = (static_cast<double>(train_count[b]) + 1.0) / denom;
    nats += static_cast<double>(val_count[b]) * -std::log(p);
  }
  return nats / static_cast<double>(data.validation.size()) / std::log(2.0);
}

}  // namespace lockstep::train
