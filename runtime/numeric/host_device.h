// DS_HD marks the per-element math that runs on both sides: __host__
// __device__ __forceinline__ when nvcc compiles it (runtime/device/*.cu),
// plain inline for the C++ compiler. The functions it marks use only what
// both sides have (<cmath>'s float and double functions, memcpy).
#pragma once

#if defined(__CUDACC__)
#define DS_HD __host__ __device__ __forceinline__
#else
#define DS_HD inline
#endif
