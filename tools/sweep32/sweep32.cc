// tools/sweep32: every binary32 input of exp, tanh and GELU
// (docs/arithmetic.md §3.1-3.3), docs/numerics.md.
//
// For each input x = first + i*stride (bit patterns, mod 2^32):
//  1. the scalar core (ls_exp32, ls_tanh32, ls_gelu32) against the exact
//     real function: the error in ulps of the exact value, whether the
//     result is the correctly rounded one, and the absolute error;
//  2. the CPU kernel tables of every ISA this machine runs (exp and the
//     in-place GELU of backends/cpu/kernels.h) against the scalar core, bit
//     for bit (NaN results: any NaN, §3.4);
//  3. with --wasm, the WebAssembly module's results (sweep32_wasm.c, run by
//     node) against the native ones, by per-chunk digests.
//
// The exact value: a binary64 evaluation with a proved error bound `tol`
// (reference64() below, the argument in docs/numerics.md); where the
// interval [y - tol, y + tol] holds a binary32 rounding boundary, or where
// the binade of the exact value is undecided and it matters, MPFR at 256
// bits decides. The largest errors found are recomputed with MPFR.
#include <mpfr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/kernels.h"
#include "core/ls_arith.h"
#include "tools/sweep32/sweep32_digest.h"

namespace {

enum Func { kExp = 0, kTanh = 1, kGelu = 2, kNumFunc = 3 };
const char* const kFuncName[kNumFunc] = {"exp", "tanh", "gelu"};

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// GELU's constants as the real numbers of the formula (not the spec's
// rounded ones): sqrt(2/pi) and 0.044715.
constexpr double kGeluC = 0x1.9884533d43651p-1;  // sqrt(2/pi), rounded
constexpr double kGeluA = 0x1.6e4e26d4801f7p-5;  // 0.044715, rounded

// The binary64 reference y and a bound tol with |y - exact| <= tol
// (docs/numerics.md "Reference"): glibc's exp and tanh within 1 and 2
// binary64 ulps (documented, and checked against MPFR on the strided
// subset), everything else counted rounding by rounding. x is finite.
void reference64(Func f, float xf, double* y, double* tol) {
  const double x = xf;
  const double u53 = 0x1p-53;
  switch (f) {
    case kExp:
      *y = std::exp(x);
      // x > 709.78: e^x > 2^1024 > the binary32 range: y = +inf, exact.
      *tol = std::isinf(*y) ? 0 : std::fabs(*y) * 4 * u53 + 0x1p-1070;
      return;
    case kTanh:
      *y = std::tanh(x);
      *tol = std::fabs(*y) * 8 * u53 + 0x1p-1070;
      return;
    case kGelu: {
      // gelu(x) = x / (1 + e^(-2u)), u = C (x + A x^3): no cancellation
      // anywhere (x and A x^3 have one sign; 1 + E with E >= 0). u carries
      // at most 7 roundings (C, A, x^3, A*x^3, the sum, C*(...), and x*x
      // is exact), so |du| <= 7.01 u53 |u|; E = exp(-2u) then has relative
      // error <= 2|du| + 2 u53 <= (14.02|u| + 2) u53 (+ higher order), and
      // the sum and the division add two more roundings.
      const double x3 = (x * x) * x;
      const double u = kGeluC * (x + kGeluA * x3);
      const double e = std::exp(-2.0 * u);
      *y = x / (1.0 + e);
      if (std::isinf(e)) {
        // u < -354: |exact| <= |x| e^(2u) < 2^128 e^-708, far below 2^-150
        // (the result rounds to -0); y is -0.
        *tol = 0x1p-900;
        return;
      }
      const double share = e / (1.0 + e);
      *tol = std::fabs(*y) * (share * (15 * std::fabs(u) + 3) + 4) * u53 +
             0x1p-1070;
      return;
    }
    default:
      std::abort();
  }
}

// The exact value with MPFR at 256 bits (into `out`).
void reference_mpfr(Func f, float xf, mpfr_t out) {
  mpfr_t x, t, c;
  mpfr_inits2(256, x, t, c, (mpfr_ptr)0);
  mpfr_set_flt(x, xf, MPFR_RNDN);
  switch (f) {
    case kExp:
      mpfr_exp(out, x, MPFR_RNDN);
      break;
    case kTanh:
      mpfr_tanh(out, x, MPFR_RNDN);
      break;
    case kGelu:
      // u = sqrt(2/pi) (x + 0.044715 x^3); gelu = x / (1 + e^(-2u)).
      mpfr_const_pi(c, MPFR_RNDN);
      mpfr_ui_div(c, 2, c, MPFR_RNDN);
      mpfr_sqrt(c, c, MPFR_RNDN);
      mpfr_pow_ui(t, x, 3, MPFR_RNDN);
      {
        mpfr_t a;
        mpfr_init2(a, 256);
        mpfr_set_str(a, "0.044715", 10, MPFR_RNDN);
        mpfr_mul(t, t, a, MPFR_RNDN);
        mpfr_clear(a);
      }
      mpfr_add(t, t, x, MPFR_RNDN);
      mpfr_mul(t, t, c, MPFR_RNDN);
      mpfr_mul_si(t, t, -2, MPFR_RNDN);
      mpfr_exp(t, t, MPFR_RNDN);
      mpfr_add_ui(t, t, 1, MPFR_RNDN);
      mpfr_div(out, x, t, MPFR_RNDN);
      break;
    default:
      std::abort();
  }
  mpfr_clears(x, t, c, (mpfr_ptr)0);
}

// ulp of binary32 at a real of magnitude in [2^e, 2^(e+1)): 2^max(e-23,
// -149); for overflowing magnitudes FLT_MAX's ulp, 2^104.
double ulp32_of_exponent(int e) {
  if (e > 127) e = 127;
  return std::ldexp(1.0, std::max(e - 23, -149));
}

struct ExactInfo {
  double err_ulp;  // |c - exact| / ulp(exact)
  double err_abs;  // |c - exact| (as a double)
  bool correct;    // c == RN(exact)
};

ExactInfo exact_mpfr(Func f, float x, float c) {
  mpfr_t y, d;
  mpfr_inits2(256, y, d, (mpfr_ptr)0);
  reference_mpfr(f, x, y);
  ExactInfo r;
  const float rn = mpfr_get_flt(y, MPFR_RNDN);
  r.correct = (rn == c) || (std::isinf(rn) && rn == c);
  if (std::isinf(c)) {
    r.err_abs = std::isinf(rn) ? 0 : INFINITY;
    r.err_ulp = r.err_abs;
  } else {
    mpfr_set_flt(d, c, MPFR_RNDN);
    mpfr_sub(d, d, y, MPFR_RNDN);
    r.err_abs = std::fabs(mpfr_get_d(d, MPFR_RNDN));
    int e = mpfr_zero_p(y) ? -1000 : (int)mpfr_get_exp(y) - 1;
    mpfr_div_d(d, d, ulp32_of_exponent(e), MPFR_RNDN);
    r.err_ulp = std::fabs(mpfr_get_d(d, MPFR_RNDN));
  }
  mpfr_clears(y, d, (mpfr_ptr)0);
  return r;
}

// Error of c against the exact value from the binary64 reference, or MPFR
// where the reference cannot decide. *used_mpfr says which.
ExactInfo exact_info(Func f, float x, float c, bool* used_mpfr) {
  double y, tol;
  reference64(f, x, &y, &tol);
  *used_mpfr = false;
  // The rounding: RN(exact) == (float)y unless a midpoint between two
  // binary32 values (or the overflow threshold) lies within tol of y.
  const float rn = (float)y;
  bool decided;
  if (std::isinf(rn)) {
    decided = std::fabs(y) - tol > 0x1.ffffffp127;
  } else {
    const double lo = std::nextafter(rn, -INFINITY);
    const double hi = std::nextafter(rn, INFINITY);
    const double m_lo =
        std::isinf(lo) ? -0x1.ffffffp127 : ((double)rn + lo) / 2;
    const double m_hi = std::isinf(hi) ? 0x1.ffffffp127 : ((double)rn + hi) / 2;
    decided = m_lo < y - tol && y + tol < m_hi;
  }
  if (decided && std::isinf(rn) && c == rn) {
    // Overflow, correctly: the exact value rounds to the same infinity.
    return ExactInfo{0, 0, true};
  }
  if (!decided || std::isinf(c) || std::isinf(rn)) {
    *used_mpfr = true;
    return exact_mpfr(f, x, c);
  }
  ExactInfo r;
  r.correct = (rn == c);
  r.err_abs = std::fabs((double)c - y);  // exact: c and y are binary64
  int e = 0;
  const double ay = std::fabs(y);
  if (ay == 0) {
    // |exact| <= tol: its ulp is the subnormal one unless tol is large.
    if (tol >= 0x1p-126) {
      *used_mpfr = true;
      return exact_mpfr(f, x, c);
    }
    r.err_ulp = (r.err_abs + tol) / 0x1p-149;
    return r;
  }
  std::frexp(ay, &e);  // ay in [2^(e-1), 2^e)
  const double p = std::ldexp(1.0, e - 1);
  if (ay - tol < p || ay + tol >= 2 * p) {
    // The exact value's binade is undecided: bound with the smaller ulp,
    // and ask MPFR only when that bound could matter (over 0.5 ulp).
    const double bound = (r.err_abs + tol) / ulp32_of_exponent(e - 2);
    if (bound > 0.5) {
      *used_mpfr = true;
      return exact_mpfr(f, x, c);
    }
    r.err_ulp = bound;
    return r;
  }
  r.err_ulp = r.err_abs / ulp32_of_exponent(e - 1);
  return r;
}

// Per function, per binade of x (sign and exponent field: 512 bins).
struct Bin {
  double max_ulp = 0;
  uint32_t at_ulp = 0;
  double max_abs = 0;
  uint32_t at_abs = 0;
  uint64_t count = 0, correct = 0;
};

struct Mismatch {
  uint64_t count = 0;
  uint32_t first_x = 0, got = 0, want = 0;
};

struct Stats {
  Bin bins[kNumFunc][512];
  uint64_t mpfr_calls = 0;
  uint64_t mpfr_by_func[kNumFunc] = {0, 0, 0};
  uint64_t nonfinite_bad[kNumFunc] = {0, 0, 0};
  uint32_t nonfinite_bad_x[kNumFunc] = {0, 0, 0};
  // [isa][0 exp, 1 gelu]
  std::vector<Mismatch> simd;

  void merge(const Stats& o) {
    for (int f = 0; f < kNumFunc; ++f) {
      for (int b = 0; b < 512; ++b) {
        Bin& a = bins[f][b];
        const Bin& c = o.bins[f][b];
        if (c.max_ulp > a.max_ulp) a.max_ulp = c.max_ulp, a.at_ulp = c.at_ulp;
        if (c.max_abs > a.max_abs) a.max_abs = c.max_abs, a.at_abs = c.at_abs;
        a.count += c.count;
        a.correct += c.correct;
      }
      if (o.nonfinite_bad[f] && !nonfinite_bad[f])
        nonfinite_bad_x[f] = o.nonfinite_bad_x[f];
      nonfinite_bad[f] += o.nonfinite_bad[f];
    }
    mpfr_calls += o.mpfr_calls;
    for (int f = 0; f < kNumFunc; ++f) mpfr_by_func[f] += o.mpfr_by_func[f];
    for (size_t i = 0; i < simd.size(); ++i) {
      if (o.simd[i].count && !simd[i].count)
        simd[i] = Mismatch{0, o.simd[i].first_x, o.simd[i].got, o.simd[i].want};
      simd[i].count += o.simd[i].count;
    }
  }
};

// §3.4's values at non-finite x (the scalar core); NaN: x's own bits.
bool nonfinite_ok(Func f, float x, float c) {
  const uint32_t xb = bits_of(x), cb = bits_of(c);
  if (std::isnan(x)) return cb == xb;
  const bool neg = std::signbit(x);
  switch (f) {
    case kExp:
      return neg ? cb == 0u : cb == 0x7f800000u;
    case kTanh:
      return cb == bits_of(neg ? -1.0f : 1.0f);
    case kGelu:
      return neg ? std::isnan(c) : cb == 0x7f800000u;
    default:
      return false;
  }
}

bool same_result(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return bits_of(a) == bits_of(b);
}

struct Config {
  uint32_t first = 0, stride = 1;
  uint64_t count = 1ull << 32;
  int threads = 1;
  bool progress = true;
  std::string wasm_module, node = "node", script, table;
};

void run_chunk(const Config& cfg,
               const std::vector<const lockstep::cpu::CpuKernels*>& isas,
               uint64_t chunk, Stats& st, uint64_t digest[4]) {
  const uint64_t i0 = chunk * SWEEP32_CHUNK;
  const int n = (int)std::min<uint64_t>(SWEEP32_CHUNK, cfg.count - i0);
  static thread_local std::vector<float> in, e, t, g, buf;
  in.resize(n), e.resize(n), t.resize(n), g.resize(n), buf.resize(n);
  uint32_t u = cfg.first + (uint32_t)i0 * cfg.stride;
  for (int i = 0; i < n; ++i, u += cfg.stride) in[i] = float_of(u);
  for (int i = 0; i < n; ++i) {
    e[i] = ls_exp32(in[i]);
    t[i] = ls_tanh32(in[i]);
    g[i] = ls_gelu32(in[i]);
  }
  for (int k = 0; k < 4; ++k) digest[k] = SWEEP32_FNV_OFFSET;
  for (int i = 0; i < n; ++i) {
    digest[0] = sweep32_fnv(digest[0], bits_of(e[i]));
    digest[1] = sweep32_fnv(digest[1], bits_of(e[i]));
    digest[2] = sweep32_fnv(digest[2], bits_of(t[i]));
    digest[3] = sweep32_fnv(digest[3], bits_of(g[i]));
  }
  // The kernel tables against the scalar core.
  for (size_t k = 0; k < isas.size(); ++k) {
    isas[k]->exp(in.data(), buf.data(), n);
    for (int i = 0; i < n; ++i) {
      if (!same_result(buf[i], e[i])) {
        Mismatch& m = st.simd[2 * k];
        if (!m.count)
          m.first_x = bits_of(in[i]), m.got = bits_of(buf[i]),
          m.want = bits_of(e[i]);
        ++m.count;
      }
    }
    std::memcpy(buf.data(), in.data(), n * sizeof(float));
    isas[k]->gelu(buf.data(), n);
    for (int i = 0; i < n; ++i) {
      if (!same_result(buf[i], g[i])) {
        Mismatch& m = st.simd[2 * k + 1];
        if (!m.count)
          m.first_x = bits_of(in[i]), m.got = bits_of(buf[i]),
          m.want = bits_of(g[i]);
        ++m.count;
      }
    }
  }
  // Accuracy of the scalar core.
  for (int i = 0; i < n; ++i) {
    const float x = in[i];
    const uint32_t xb = bits_of(x);
    const float res[kNumFunc] = {e[i], t[i], g[i]};
    for (int f = 0; f < kNumFunc; ++f) {
      if (!std::isfinite(x)) {
        if (!nonfinite_ok((Func)f, x, res[f])) {
          if (!st.nonfinite_bad[f]) st.nonfinite_bad_x[f] = xb;
          ++st.nonfinite_bad[f];
        }
        continue;
      }
      bool used_mpfr;
      const ExactInfo r = exact_info((Func)f, x, res[f], &used_mpfr);
      st.mpfr_calls += used_mpfr;
      st.mpfr_by_func[f] += used_mpfr;
      Bin& b = st.bins[f][xb >> 23];
      ++b.count;
      b.correct += r.correct;
      if (r.err_ulp > b.max_ulp) b.max_ulp = r.err_ulp, b.at_ulp = xb;
      if (r.err_abs > b.max_abs) b.max_abs = r.err_abs, b.at_abs = xb;
    }
  }
}

int usage() {
  std::fprintf(
      stderr,
      "usage: sweep32 [--threads N] [--stride S] [--first F] "
      "[--count C]\n"
      "               [--wasm MODULE --script sweep32_wasm.mjs [--node NODE]]\n"
      "               [--table FILE] [--no-progress]\n"
      "Checks exp, tanh and GELU (binary32) on the inputs "
      "F + i*S (bit patterns mod 2^32),\ni < C (default: all 2^32 "
      "with S = 1; C defaults to ceil(2^32 / S)).\n");
  return 2;
}

bool parse_u64(const char* s, uint64_t max, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 0);
  if (errno || end == s || *end || v > max || s[0] == '-') return false;
  *out = v;
  return true;
}

void print_x(FILE* o, uint32_t xb) {
  std::fprintf(o, "0x%08" PRIx32 " (%a)", xb, (double)float_of(xb));
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  bool count_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&](uint64_t max, uint64_t* v) {
      if (i + 1 >= argc || !parse_u64(argv[i + 1], max, v)) {
        std::fprintf(stderr, "sweep32: %s needs a number in [0, %" PRIu64 "]\n",
                     a.c_str(), max);
        std::exit(2);
      }
      ++i;
    };
    uint64_t v;
    if (a == "--threads")
      next(256, &v), cfg.threads = (int)v;
    else if (a == "--stride")
      next(0xffffffffu, &v), cfg.stride = (uint32_t)v;
    else if (a == "--first")
      next(0xffffffffu, &v), cfg.first = (uint32_t)v;
    else if (a == "--count")
      next(1ull << 32, &v), cfg.count = v, count_given = true;
    else if (a == "--no-progress")
      cfg.progress = false;
    else if ((a == "--wasm" || a == "--script" || a == "--node" ||
              a == "--table") &&
             i + 1 < argc) {
      std::string* dst = a == "--wasm"     ? &cfg.wasm_module
                         : a == "--script" ? &cfg.script
                         : a == "--node"   ? &cfg.node
                                           : &cfg.table;
      *dst = argv[++i];
    } else {
      std::fprintf(stderr, "sweep32: unknown or incomplete argument '%s'\n",
                   a.c_str());
      return usage();
    }
  }
  if (cfg.threads < 1 || cfg.stride == 0 || cfg.count == 0) {
    std::fprintf(stderr,
                 "sweep32: threads, stride and count must be positive\n");
    return usage();
  }
  if (!count_given) cfg.count = ((1ull << 32) + cfg.stride - 1) / cfg.stride;
  if (!cfg.wasm_module.empty() && cfg.script.empty()) {
    std::fprintf(
        stderr,
        "sweep32: --wasm needs --script (tools/sweep32/sweep32_wasm.mjs)\n");
    return 2;
  }

  std::vector<const lockstep::cpu::CpuKernels*> isas;
  std::vector<std::string> isa_names;
  for (const std::string& name : lockstep::cpu::supported_isas()) {
    const lockstep::cpu::CpuKernels* k = lockstep::cpu::kernels_for(name);
    if (k) isas.push_back(k), isa_names.push_back(name);
  }
  const uint64_t n_chunks = (cfg.count + SWEEP32_CHUNK - 1) / SWEEP32_CHUNK;
  std::printf("sweep32: %" PRIu64 " inputs (first 0x%08" PRIx32
              ", stride %" PRIu32 "), %d thread(s), kernel tables:",
              cfg.count, cfg.first, cfg.stride, cfg.threads);
  for (auto& s : isa_names) std::printf(" %s", s.c_str());
  std::printf("%s\n", cfg.wasm_module.empty() ? "" : ", wasm");
  std::fflush(stdout);

  // The WebAssembly side runs concurrently in node, into a file.
  std::string wasm_out;
  std::thread wasm_thread;
  int wasm_rc = 0;
  if (!cfg.wasm_module.empty()) {
    char tmpl[] = "/tmp/sweep32-wasm-XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd < 0) {
      std::perror("sweep32: mkstemp");
      return 1;
    }
    close(fd);
    wasm_out = tmpl;
    const std::string cmd = cfg.node + " '" + cfg.script + "' '" +
                            cfg.wasm_module + "' " + std::to_string(cfg.first) +
                            " " + std::to_string(cfg.stride) + " " +
                            std::to_string(cfg.count) + " > '" + wasm_out + "'";
    wasm_thread =
        std::thread([cmd, &wasm_rc] { wasm_rc = std::system(cmd.c_str()); });
  }

  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<uint64_t> next_chunk{0}, done{0};
  std::vector<uint64_t> digests(n_chunks * 4);
  std::vector<Stats*> per_thread(cfg.threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < cfg.threads; ++t) {
    per_thread[t] = new Stats;
    per_thread[t]->simd.resize(2 * isas.size());
    pool.emplace_back([&, t] {
      Stats& st = *per_thread[t];
      for (;;) {
        const uint64_t c = next_chunk.fetch_add(1);
        if (c >= n_chunks) break;
        run_chunk(cfg, isas, c, st, &digests[4 * c]);
        done.fetch_add(1);
      }
      // MPFR keeps per-thread caches (pi, exp's tables); free them before
      // the thread ends so LeakSanitizer sees no lost blocks.
      mpfr_free_cache();
    });
  }
  if (cfg.progress) {
    for (;;) {
      const uint64_t d = done.load();
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
      const double frac = (double)d / n_chunks;
      const int w = 40, filled = (int)(frac * w);
      std::fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %.0f s elapsed, ~%.0f s left ",
                   filled, "########################################",
                   w - filled, "", 100 * frac, s, d ? s / frac - s : 0.0);
      if (d >= n_chunks) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    std::fprintf(stderr, "\n");
  }
  for (auto& th : pool) th.join();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  Stats total;
  total.simd.resize(2 * isas.size());
  for (Stats* s : per_thread) total.merge(*s), delete s;

  int failures = 0;
  // WebAssembly digests.
  if (wasm_thread.joinable()) {
    wasm_thread.join();
    const double wsecs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    FILE* in = std::fopen(wasm_out.c_str(), "r");
    uint64_t lines = 0, bad[4] = {0, 0, 0, 0};
    int64_t first_bad[4] = {-1, -1, -1, -1};
    if (wasm_rc != 0 || !in) {
      std::printf("wasm: FAILED to run node (status %d)\n", wasm_rc);
      ++failures;
    } else {
      uint64_t c, h[4];
      while (std::fscanf(
                 in, "%" SCNu64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64,
                 &c, &h[0], &h[1], &h[2], &h[3]) == 5) {
        if (c >= n_chunks) break;
        ++lines;
        for (int k = 0; k < 4; ++k) {
          if (h[k] != digests[4 * c + k]) {
            if (first_bad[k] < 0) first_bad[k] = (int64_t)c;
            ++bad[k];
          }
        }
      }
      const char* names[4] = {"exp (wasm SIMD lsw_exp32)", "exp (wasm scalar)",
                              "tanh (wasm scalar)", "gelu (wasm scalar)"};
      if (lines != n_chunks) {
        std::printf("wasm: FAILED: %" PRIu64 " of %" PRIu64
                    " chunk digests read\n",
                    lines, n_chunks);
        ++failures;
      }
      for (int k = 0; k < 4; ++k) {
        if (bad[k]) {
          ++failures;
          const uint64_t c0 = (uint64_t)first_bad[k] * SWEEP32_CHUNK;
          std::printf("wasm: %s differs from the native scalar core in %" PRIu64
                      " chunk(s); first chunk %" PRId64
                      " (inputs from 0x%08" PRIx32 ")\n",
                      names[k], bad[k], first_bad[k],
                      cfg.first + (uint32_t)c0 * cfg.stride);
        } else {
          std::printf("wasm: %s == native scalar core on all %" PRIu64
                      " inputs (%.0f s)\n",
                      names[k], cfg.count, wsecs);
        }
      }
    }
    if (in) std::fclose(in);
    std::remove(wasm_out.c_str());
  }

  // Kernel tables.
  for (size_t k = 0; k < isas.size(); ++k) {
    for (int j = 0; j < 2; ++j) {
      const Mismatch& m = total.simd[2 * k + j];
      const char* fn = j == 0 ? "exp" : "gelu";
      if (m.count) {
        ++failures;
        std::printf("simd: %s %s differs from the scalar core on %" PRIu64
                    " inputs; first x = 0x%08" PRIx32 ": got 0x%08" PRIx32
                    ", scalar 0x%08" PRIx32 "\n",
                    isa_names[k].c_str(), fn, m.count, m.first_x, m.got,
                    m.want);
      } else {
        std::printf("simd: %s %s == scalar core on all %" PRIu64 " inputs\n",
                    isa_names[k].c_str(), fn, cfg.count);
      }
    }
  }
  for (int f = 0; f < kNumFunc; ++f) {
    if (total.nonfinite_bad[f]) {
      ++failures;
      std::printf("nonfinite: %s breaks §3.4 at %" PRIu64
                  " inputs, first 0x%08" PRIx32 "\n",
                  kFuncName[f], total.nonfinite_bad[f],
                  total.nonfinite_bad_x[f]);
    }
  }

  // Accuracy summary (the maxima recomputed with MPFR).
  FILE* tab = cfg.table.empty() ? nullptr : std::fopen(cfg.table.c_str(), "w");
  if (!cfg.table.empty() && !tab) {
    std::fprintf(stderr, "sweep32: cannot write %s\n", cfg.table.c_str());
    return 1;
  }
  if (tab)
    std::fprintf(tab,
                 "func\tsign\tbinade\tcount\tcorrectly_rounded\tmax_"
                 "ulp\tat\tmax_abs\tat\n");
  // Domains, as sets of binades of x: sign (0 +, 1 -) and the unbiased
  // exponent of |x| (-127: zero and subnormals).
  struct Domain {
    int func;
    const char* name;
    bool (*in)(int neg, int ex);
  };
  const Domain domains[] = {
      {kExp, "all finite x", [](int, int) { return true; }},
      {kTanh, "all finite x", [](int, int) { return true; }},
      {kTanh, "|x| >= 1/2", [](int, int ex) { return ex >= -1; }},
      {kTanh, "|x| >= 1", [](int, int ex) { return ex >= 0; }},
      {kGelu, "all finite x", [](int, int) { return true; }},
      {kGelu, "x >= 0", [](int neg, int) { return !neg; }},
      {kGelu, "x > -1", [](int neg, int ex) { return !neg || ex < 0; }},
      {kGelu, "x > -2", [](int neg, int ex) { return !neg || ex < 1; }},
  };
  for (int f = 0; f < kNumFunc; ++f) {
    uint64_t count = 0, correct = 0;
    double max_abs8 = 0;
    uint32_t at_abs8 = 0;
    for (int b = 0; b < 512; ++b) {
      const Bin& c = total.bins[f][b];
      if (!c.count) continue;
      count += c.count;
      correct += c.correct;
      const int ex = (b & 255) - 127;
      if (ex < 3 && c.max_abs > max_abs8)
        max_abs8 = c.max_abs, at_abs8 = c.at_abs;
      if (tab)
        std::fprintf(tab,
                     "%s\t%c\t%d\t%" PRIu64 "\t%" PRIu64 "\t%.6g\t0x%08" PRIx32
                     "\t%.6g\t0x%08" PRIx32 "\n",
                     kFuncName[f], b >= 256 ? '-' : '+', ex, c.count, c.correct,
                     c.max_ulp, c.at_ulp, c.max_abs, c.at_abs);
    }
    std::printf("%s: %" PRIu64 " finite inputs, %" PRIu64
                " (%.4f%%) correctly rounded; max abs error for |x| < 8: %.4g "
                "(2^%.2f) at x = ",
                kFuncName[f], count, correct, 100.0 * correct / count, max_abs8,
                std::log2(max_abs8));
    print_x(stdout, at_abs8);
    std::printf("\n");
    for (const Domain& d : domains) {
      if (d.func != f) continue;
      double mx = -1;
      uint32_t at = 0;
      for (int b = 0; b < 512; ++b) {
        const Bin& c = total.bins[f][b];
        if (c.count && d.in(b >= 256, (b & 255) - 127) && c.max_ulp > mx)
          mx = c.max_ulp, at = c.at_ulp;
      }
      if (mx < 0) continue;
      const float x = float_of(at);
      const float got = f == kExp    ? ls_exp32(x)
                        : f == kTanh ? ls_tanh32(x)
                                     : ls_gelu32(x);
      const ExactInfo m = exact_mpfr((Func)f, x, got);  // the exact error
      std::printf("  %s, %s: max error %.4f ulp at x = ", kFuncName[f], d.name,
                  m.err_ulp);
      print_x(stdout, at);
      std::printf(" (result 0x%08" PRIx32 ")\n", bits_of(got));
    }
  }
  if (tab) std::fclose(tab);
  std::printf("mpfr fallbacks: %" PRIu64 " (exp %" PRIu64 ", tanh %" PRIu64
              ", gelu %" PRIu64 "); time %.1f s\n",
              total.mpfr_calls, total.mpfr_by_func[0], total.mpfr_by_func[1],
              total.mpfr_by_func[2], secs);
  std::printf("%s\n", failures ? "sweep32: FAILED" : "sweep32: OK");
  return failures ? 1 : 0;
}
