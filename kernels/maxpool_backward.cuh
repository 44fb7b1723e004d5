#pragma once
// The name the CUDA backend brief gave the max-pooling launchers; both live in kernels/maxpool.cuh
// (one op family, forward and backward, per .cu/.cuh pair).
#include "kernels/maxpool.cuh"
