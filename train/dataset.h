// The Tiny Shakespeare corpus the tiny models are trained on: loaded,
// verified against its pinned SHA-256, and split 90% / 10% by bytes.
#ifndef LOCKSTEP_TRAIN_DATASET_H_
#define LOCKSTEP_TRAIN_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::train {

// The SHA-256 of data/tinyshakespeare.txt (data/SHA256SUMS).
inline constexpr const char* kTinyShakespeareSha256 =
    "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed";

struct Dataset {
  std::string path;                 // where it was read from
  std::string sha256;               // lowercase hex digest of the whole file
  std::vector<uint8_t> train;       // bytes [0, floor(size * 9 / 10))
  std::vector<uint8_t> validation;  // the remaining bytes
};

// <repository>/data/tinyshakespeare.txt (the source tree this was built from).
std::string default_dataset_path();

// Reads the file at path, checks that its SHA-256 is kTinyShakespeareSha256
// and splits it. Throws lockstep::Error if the file cannot be read or its
// digest differs (the message names the path and both digests).
Dataset load_dataset(const std::string& path = default_dataset_path());

// Splits bytes without any digest check: train = the first
// floor(size * 9 / 10) bytes, validation = the rest.
Dataset split_dataset(std::vector<uint8_t> bytes);

// The unigram baseline in bits per byte: the mean of -log2 p(b) over the
// validation bytes, where p is the train split's byte frequency with add-one
// smoothing over 256 symbols, p(b) = (count(b) + 1) / (|train| + 256).
// Throws lockstep::Error if the validation split is empty.
double unigram_bits_per_byte(const Dataset& data);

}  // namespace lockstep::train

#endif  // LOCKSTEP_TRAIN_DATASET_H_
