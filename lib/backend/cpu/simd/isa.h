#pragma once
// The instruction set the CPU backend's hot loops run with, chosen once per process: the GEMM
// variant, the register tiles of the direct convolutions, and the max-pool and unpool code all
// follow it. "avx512-fma" (AVX-512F + FMA), "avx2-fma" (AVX2 + FMA) or "portable" (baseline
// x86-64): the best the CPU runs, unless the environment variable REPRO_AUDIT_ISA (or its older
// name REPRO_AUDIT_GEMM) = portable | avx2 | avx512 forces one, to reproduce another machine's
// bits.
//
// Why it matters for bits: the FMA instruction sets round a*b+c once, the portable code twice
// (gemm.h states the chains), so a trace records the choice (environment key cpu_gemm_kernel).
namespace ra::backend::cpu {

enum class Isa { portable, avx2_fma, avx512_fma };

// "portable", "avx2-fma", "avx512-fma": the name the trace records.
const char* isa_name(Isa isa);
// Whether this CPU (and OS) runs the instruction set (portable: always).
bool isa_supported(Isa isa);

// The instruction set of this process: REPRO_AUDIT_ISA (or REPRO_AUDIT_GEMM) if set, else the
// best supported. Decided on the first call. Throws ra::InputError for an unknown value, or for
// the two variables set to different values, and ra::RuntimeFailure when the value names an
// instruction set this CPU cannot run (never a silent fallback).
Isa active_isa();
const char* active_isa_name();  // isa_name(active_isa())

// The choice active_isa() makes, from the two variables' values (null or empty: unset); for tests.
Isa choose_isa(const char* isa_variable, const char* gemm_variable);

}  // namespace ra::backend::cpu
