/* SPDX-License-Identifier: MIT */
/* The communicator behind arbench.h: the implementations opened at creation (slots), and
 * the per-size choice made once and remembered. */
#ifndef ARB_API_PRIV_H
#define ARB_API_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "arbench/arbench.h"
#include "analysis/profile.h"
#include "runtime/instance.h"
#include "sites/site_choice.h"

/* One opened implementation for one op. */
typedef struct api_slot {
    char impl[64], params[256];
    arb_op_t op;
    arb_loaded_plugin_t lp;
    arb_inst_t *inst;
    void *stage_send; /* max_bytes (allreduce) or max_tokens x hidden x 2 (fused, NEEDS_ALLOC only) */
    void *stage_recv; /* allreduce with NEEDS_ALLOC only */
} api_slot_t;

/* The remembered choice for one (op, bytes, mode). */
typedef struct api_pick {
    size_t bytes;
    int op, mode, used; /* op: arb_op_t * 2 + arb_dtype_t; used 0: empty */
    int slot;           /* index in slots, -1: cannot be served */
    arb_fusion_t fusion;
    char note[1024];
} api_pick_t;

#define API_MAX_SLOTS 32

/* How the communicator's ranks found each other (arbench.h: the create functions). */
typedef enum api_boot_kind {
    API_BOOT_MPI = 0,
    API_BOOT_ALLGATHER = 1, /* the caller's allgather */
    API_BOOT_NCCL_ID = 2,   /* an NCCL communicator of ours, from a unique id */
    API_BOOT_NCCL_COMM = 3, /* the caller's NCCL communicator */
} api_boot_kind_t;

typedef struct api_boot {
    api_boot_kind_t kind;
    int rank, size;                 /* ALLGATHER, NCCL_ID */
    arbench_allgather_fn allgather; /* ALLGATHER */
    void *ctx;                      /* ALLGATHER */
    const void *nccl_id;            /* NCCL_ID: ARBENCH_NCCL_UNIQUE_ID_BYTES */
    void *nccl_comm;                /* NCCL_COMM */
} api_boot_t;

/* A buffer the caller registered (arbench_register). */
typedef struct api_reg {
    uintptr_t base;
    size_t bytes;
} api_reg_t;

struct arbench_comm {
    arbench_config_t cfg;
    char profile_path[4096], fabric[32], fallback[64];
    api_boot_kind_t boot;
    void *nccl_boot; /* NCCL bootstraps: the allgather's context (api_boot.c) */
    arb_mpi_t mpi;
    arb_profile_t profile;
    int have_profile;
    api_slot_t slots[API_MAX_SLOTS];
    int nslots;
    int fallback_slot[2]; /* per op, -1 when not opened */
    api_pick_t *picks;   /* open addressing, npicks_cap a power of two */
    size_t npicks, npicks_cap;
    api_reg_t *regs;
    size_t nregs, regs_cap;
    unsigned char logged_in_place[API_MAX_SLOTS]; /* the in-place line written for this slot */
};

/* The registration holding buf (api_register.c), NULL when none does. */
const api_reg_t *api_find_reg(const arbench_comm_t *c, const void *buf);

/* The ranks' bootstrap into c->mpi (api_boot.c): MPI (initialized when the caller has
 * not), the caller's allgather, or NCCL. Collective. */
arb_status_t api_boot(arbench_comm_t *c, const api_boot_t *b, char *why, size_t why_len);
/* Undoes api_boot (frees our NCCL communicator, never the caller's). Collective. */
void api_boot_free(arbench_comm_t *c);

/* Opens the implementations the profile can choose for this job and the fallback
 * (api_open.c). Collective. */
arb_status_t api_open_slots(arbench_comm_t *c, char *why, size_t why_len);
void api_close_slots(arbench_comm_t *c);
/* The slot index of (impl, params, op), -1 when not opened. */
int api_find_slot(const arbench_comm_t *c, const char *impl, const char *params, arb_op_t op);

/* The choice for a call, made once per (op, bytes, mode) and logged then (api_choose.c).
 * NULL on out of memory. */
const api_pick_t *api_pick_dtype(arbench_comm_t *c, arb_op_t op, arb_dtype_t dtype, size_t bytes, arb_mode_t mode);
/* The same for bf16. */
const api_pick_t *api_pick(arbench_comm_t *c, arb_op_t op, size_t bytes, arb_mode_t mode);
/* The engine's rule for a call of `bytes` (a site of 1 x bytes/2 for allreduce, tokens x
 * hidden for the fused op). */
arb_status_t api_choose(const arbench_comm_t *c, arb_op_t op, size_t bytes, arb_mode_t mode, arb_choice_t *out,
                        char *why, size_t why_len);

#endif
