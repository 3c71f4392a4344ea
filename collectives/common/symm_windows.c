/* SPDX-License-Identifier: MIT */
#include "symm_windows.h"

#include <stdio.h>

#include "arb_plugin_util.h"
#include "symm_boot.h"

int symm_windows_alloc(symm_windows_t *t, ncclComm_t comm, const arb_host_ops_t *ops, size_t bytes)
{
    int slot = -1;
    for (int i = 0; i < SYMM_MAX_WINDOWS && slot < 0; i++)
        if (!t->w[i].base)
            slot = i;
    char why[512];
    void *ptr = NULL;
    ncclWindow_t win = NULL;
    if (symm_window_alloc(comm, bytes, &ptr, &win, why, sizeof why) != ARB_OK) {
        arb_plog(ops, "symm", "mem_alloc(%zu bytes): %s", bytes, why);
        return -1;
    }
    if (!win || slot < 0) {
        arb_plog(ops, "symm", "mem_alloc(%zu bytes): %s", bytes,
                 win ? "more than 64 live buffers" : "NCCL created no symmetric window although the init probe got one");
        symm_window_free(comm, ptr, win);
        return -1;
    }
    t->w[slot] = (symm_window_t){.base = ptr, .bytes = bytes, .win = win};
    return slot;
}

int symm_windows_find(const symm_windows_t *t, const void *ptr, size_t bytes, size_t *off)
{
    const char *p = ptr;
    for (int i = 0; i < SYMM_MAX_WINDOWS; i++) {
        const symm_window_t *w = &t->w[i];
        if (w->base && p >= w->base && p + bytes <= w->base + w->bytes) {
            *off = (size_t)(p - w->base);
            return i;
        }
    }
    return -1;
}

void symm_windows_release(symm_windows_t *t, ncclComm_t comm, int i)
{
    if (i < 0 || i >= SYMM_MAX_WINDOWS || !t->w[i].base)
        return;
    symm_window_free(comm, t->w[i].base, t->w[i].win);
    t->w[i] = (symm_window_t){0};
}

void symm_windows_free(symm_windows_t *t, ncclComm_t comm, void *ptr)
{
    for (int i = 0; i < SYMM_MAX_WINDOWS && ptr; i++)
        if (t->w[i].base == ptr) {
            symm_windows_release(t, comm, i);
            return;
        }
}

void symm_windows_free_all(symm_windows_t *t, ncclComm_t comm)
{
    for (int i = 0; i < SYMM_MAX_WINDOWS; i++)
        symm_windows_release(t, comm, i);
}
