/* SPDX-License-Identifier: MIT */
/* The sweep's stop flag: SIGINT or SIGTERM asks the sweep to stop after the current point
 * (arb_sweep installs the handlers, each variant's point loop asks). */
#ifndef ARB_SWEEP_STOP_H
#define ARB_SWEEP_STOP_H

/* Installs the SIGINT and SIGTERM handlers that set the flag. */
void sweep_stop_on_signals(void);
/* The signal that asked to stop, 0 while none has. This rank only: the caller agrees over ranks. */
int sweep_stop_requested(void);

#endif
