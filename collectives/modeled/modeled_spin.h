/* SPDX-License-Identifier: MIT */
/* The C side's view of modeled_spin.cu (hidden symbols inside arb-modeled.so). */
#ifndef ARB_MODELED_SPIN_H
#define ARB_MODELED_SPIN_H

#ifdef __cplusplus
extern "C" {
#endif

/* What the probe kernel measured on the current device. */
typedef struct modeled_timer {
    double resolution_ns;  /* smallest step of %globaltimer seen */
    double cycles_per_ns;  /* clock64 rate against %globaltimer over ~200 us */
    int use_clock;         /* spin on clock64 (globaltimer too coarse for 0.2 us) */
} modeled_timer_t;

/* Runs the probe kernel and synchronizes (init time only). Returns a cudaError_t. */
int modeled_timer_probe(modeled_timer_t *t);
/* Enqueues one 1-thread kernel that holds the stream for `ns` nanoseconds (capped at
 * 10 s; a clock64 spin also stops at ns + 1 ms of %globaltimer). Returns a cudaError_t. */
int modeled_spin_launch(unsigned long long ns, const modeled_timer_t *t, void *stream);
const char *modeled_error_string(int err);

#ifdef __cplusplus
}
#endif

#endif
