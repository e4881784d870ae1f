// The binary32 constants of docs/arithmetic.md §3.1 and §3.3, for the
// vector versions of ls_exp32 and ls_gelu32 (the same hexadecimal values as
// core/ls_arith.c; tests/gpt2_backend_test.cc checks the vector functions
// against the core ones bit for bit).
#ifndef LOCKSTEP_BACKENDS_CPU_VEC_CONSTS_H_
#define LOCKSTEP_BACKENDS_CPU_VEC_CONSTS_H_

namespace lockstep::cpu {
namespace exp32 {
constexpr float kOverflow = 0x1.62e42ep+6f;
constexpr float kUnderflow = -0x1.9fe368p+6f;
constexpr float kInvLn2 = 0x1.715476p+0f;
constexpr float kLn2Hi = 0x1.62e400p-1f;
constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
constexpr float kRounder = 0x1.8p23f;
constexpr float kPoly[8] = {0x1.000000p+0f,  0x1.000000p+0f, 0x1.000000p-1f,
                            0x1.555556p-3f,  0x1.555556p-5f, 0x1.111112p-7f,
                            0x1.6c16c2p-10f, 0x1.a01a02p-13f};
}  // namespace exp32
namespace gelu32 {
constexpr float kC = 0x1.988454p-1f; /* sqrt(2/pi) */
constexpr float kA = 0x1.6e4e26p-5f; /* 0.044715 */
}  // namespace gelu32
}  // namespace lockstep::cpu

#endif  // LOCKSTEP_BACKENDS_CPU_VEC_CONSTS_H_
