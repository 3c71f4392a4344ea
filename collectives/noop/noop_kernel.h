/* SPDX-License-Identifier: MIT */
/* The C side's view of noop_kernel.cu (hidden symbols inside arb-noop.so). */
#ifndef ARB_NOOP_KERNEL_H
#define ARB_NOOP_KERNEL_H

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues the empty kernel on stream (a cudaStream_t); pdl != 0: its PDL-capable form,
 * launched with programmatic stream serialization. Returns a cudaError_t. */
int arb_noop_launch(void *stream, int pdl);
const char *arb_noop_error_string(int err);

#ifdef __cplusplus
}
#endif

#endif
