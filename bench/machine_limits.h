// The machine's own limits, measured by `lockstep bench` and
// build/gpt2_bench in the same run as the engine (docs/benchmarks.md): the
// streaming-read bandwidth that bounds decode (every weight read once per
// token) and the binary32 arithmetic peak without FMA that bounds prefill
// (docs/arithmetic.md §1.2 forbids fused multiply-add).
#ifndef LOCKSTEP_BENCH_MACHINE_LIMITS_H_
#define LOCKSTEP_BENCH_MACHINE_LIMITS_H_

#include <cstddef>

namespace lockstep::bench {

// A 1 GiB buffer of varied floats on 2 MB pages (transparent huge pages,
// as the CPU backend's copy of the weights), allocated and filled on first
// use. (Identical pages may be merged by a hypervisor and read faster than
// real data; a buffer larger than every cache reads from memory.)
const float* bandwidth_buffer();
size_t bandwidth_buffer_floats();

// Seconds of one streaming read of p[0, n) split over `threads` threads:
// the caller reads the first part, threads - 1 helpers (created first,
// released together) the others (the caller is one of them: a third
// runnable thread on a 2-core machine would delay a reader by a time
// slice). Each thread reads its part as `streams` interleaved sequential
// streams.
double read_seconds(const float* p, size_t n, int threads, int streams = 8);

// Bytes per second of reading `bytes` of bandwidth_buffer() with `threads`
// threads: the best of one read as 1, 4 and 8 streams per thread (the
// machine's read bandwidth is the fastest way to read it).
double read_bandwidth(size_t bytes, int threads);

// Flop/s of one burst of independent vector multiply and add chains (8 of
// each per round, AVX-512, else AVX2, else 4-wide generic vectors) on
// `threads` threads: the arithmetic a non-FMA kernel can issue per cycle.
double nonfma_peak(int threads, long rounds = 8000000);

}  // namespace lockstep::bench

#endif  // LOCKSTEP_BENCH_MACHINE_LIMITS_H_
