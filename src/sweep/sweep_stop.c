/* SPDX-License-Identifier: MIT */
#include "sweep/sweep_stop.h"

#include <signal.h>

/* Set by the handler, read by the point loop: a sig_atomic_t is the one type both may touch. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

void sweep_stop_on_signals(void)
{
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int sweep_stop_requested(void) { return stop_signal; }
