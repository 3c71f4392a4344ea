/* SPDX-License-Identifier: MIT */
/*
 * One error model for the library and the plugins: functions return arb_status_t and
 * fill a caller's reason buffer (why, why_len) with one line that ends in the place it
 * was raised, "(file.c:123)". One macro family:
 *
 *   ARB_RAISE(st, why, len, fmt, ...)              fill why, return st
 *   ARB_RAISE_GOTO(var, st, label, why, len, fmt, ...)  fill why, var = st, goto label
 *   ARB_TRY(expr)                                  return expr's status unless ARB_OK (the callee filled why)
 *   ARB_TRY_GOTO(var, expr, label)                 var = expr; goto label unless ARB_OK
 *   ARB_CUDA_TRY(call, why, len)                   a cudaError_t call: reason and ARB_ERR_SYSTEM
 *   ARB_CUDA_GOTO(var, call, label, why, len)      (ARB_DECLINE when no device or driver is usable)
 *   ARB_NCCL_TRY(call, why, len)                   an ncclResult_t call: reason and ARB_ERR_SYSTEM
 *   ARB_NCCL_GOTO(var, call, label, why, len)
 *
 * The CUDA and NCCL forms expand to cudaGetErrorString / ncclGetErrorString: include
 * cuda_runtime.h or nccl.h before using them. Header only; C11 and C++17.
 * Severity order (the cross-rank maximum relies on it): see arb_status_t in plugin.h.
 */
#ifndef ARBENCH_STATUS_H
#define ARBENCH_STATUS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "arbench/plugin.h"

#if defined(__GNUC__)
#define ARB_STATUS_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#else
#define ARB_STATUS_PRINTF_(f, a)
#endif

/* Writes "<message> (<file basename>:<line>)" into why; never overflows; NULL/0 is allowed. */
static inline void arb_why_set(char *why, size_t why_len, const char *file, int line, const char *fmt, ...)
    ARB_STATUS_PRINTF_(5, 6);
static inline void arb_why_set(char *why, size_t why_len, const char *file, int line, const char *fmt, ...)
{
    if (!why || why_len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        why[0] = '\0';
        n = 0;
    }
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t used = (size_t)n < why_len ? (size_t)n : why_len - 1;
    snprintf(why + used, why_len - used, " (%s:%d)", base, line);
}

#define ARB_WHY(why, len, ...) arb_why_set((why), (len), __FILE__, __LINE__, __VA_ARGS__)

#define ARB_RAISE(st, why, len, ...)                                                               \
    do {                                                                                           \
        ARB_WHY(why, len, __VA_ARGS__);                                                            \
        return (st);                                                                               \
    } while (0)

#define ARB_RAISE_GOTO(var, st, label, why, len, ...)                                              \
    do {                                                                                           \
        ARB_WHY(why, len, __VA_ARGS__);                                                            \
        (var) = (st);                                                                              \
        goto label;                                                                                \
    } while (0)

#define ARB_TRY(expr)                                                                              \
    do {                                                                                           \
        arb_status_t arb_try_s_ = (expr);                                                          \
        if (arb_try_s_ != ARB_OK)                                                                  \
            return arb_try_s_;                                                                     \
    } while (0)

#define ARB_TRY_GOTO(var, expr, label)                                                             \
    do {                                                                                           \
        (var) = (expr);                                                                            \
        if ((var) != ARB_OK)                                                                       \
            goto label;                                                                            \
    } while (0)

/* The status of a failed CUDA call e. No device or no usable driver is not a failure of the
 * code under test: a decline. It also takes back the error the call left behind
 * (cudaGetLastError()), so it is reported once: a failed cudaMalloc's out of memory, say, is
 * not reported again by the next launch's check as that launch's own. A sticky error (a kernel
 * fault) stays, and every later call reports it. Use it (or the two macros below, which do)
 * wherever a failed call is turned into a status. */
#define ARB_CUDA_STATUS_(e)                                                                        \
    ((void)cudaGetLastError(),                                                                     \
     (e) == cudaErrorNoDevice || (e) == cudaErrorInsufficientDriver ? ARB_DECLINE : ARB_ERR_SYSTEM)

#define ARB_CUDA_TRY(call, why, len)                                                               \
    do {                                                                                           \
        cudaError_t arb_cuda_e_ = (call);                                                          \
        if (arb_cuda_e_ != cudaSuccess)                                                            \
            ARB_RAISE(ARB_CUDA_STATUS_(arb_cuda_e_), why, len, "%s: %s", #call,                    \
                      cudaGetErrorString(arb_cuda_e_));                                            \
    } while (0)

#define ARB_CUDA_GOTO(var, call, label, why, len)                                                  \
    do {                                                                                           \
        cudaError_t arb_cuda_e_ = (call);                                                          \
        if (arb_cuda_e_ != cudaSuccess)                                                            \
            ARB_RAISE_GOTO(var, ARB_CUDA_STATUS_(arb_cuda_e_), label, why, len, "%s: %s", #call,   \
                           cudaGetErrorString(arb_cuda_e_));                                       \
    } while (0)

#define ARB_NCCL_TRY(call, why, len)                                                               \
    do {                                                                                           \
        ncclResult_t arb_nccl_r_ = (call);                                                         \
        if (arb_nccl_r_ != ncclSuccess)                                                            \
            ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s: %s", #call, ncclGetErrorString(arb_nccl_r_)); \
    } while (0)

#define ARB_NCCL_GOTO(var, call, label, why, len)                                                  \
    do {                                                                                           \
        ncclResult_t arb_nccl_r_ = (call);                                                         \
        if (arb_nccl_r_ != ncclSuccess)                                                            \
            ARB_RAISE_GOTO(var, ARB_ERR_SYSTEM, label, why, len, "%s: %s", #call,                  \
                           ncclGetErrorString(arb_nccl_r_));                                       \
    } while (0)

#endif
