/* SPDX-License-Identifier: MIT */
/* arbench.h: the communicator's life (create, destroy), its queries and the version. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_priv.h"
#include "arbench/status.h"
#include "topo/topo.h"

int arbench_api_version(void) { return ARBENCH_API_VERSION; }

void arbench_config_init(arbench_config_t *cfg)
{
    *cfg = (arbench_config_t){.struct_size = sizeof *cfg, .cuda_device = -1, .max_bytes = (size_t)64 << 20};
}

static void finalize_mpi(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
}

/* MPI up, initialized here when the caller has not; at most once per process. */
static arb_status_t ensure_mpi(char *why, size_t why_len)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "MPI was finalized before arbench_comm_create");
    if (init)
        return ARB_OK;
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "MPI_Init failed (launch with mpirun, or initialize MPI first)");
    atexit(finalize_mpi);
    return ARB_OK;
}

static arb_status_t check_config(const arbench_config_t *cfg, char *why, size_t why_len)
{
    if (!cfg || cfg->struct_size != sizeof *cfg)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "arbench_config_t: struct_size %zu, expected %zu (call arbench_config_init first)", cfg ? cfg->struct_size : 0, sizeof *cfg);
    if (cfg->max_bytes == 0 || cfg->max_bytes / 2 > 0xffffffffu)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "config max_bytes %zu: expected 1 to %zu bytes", cfg->max_bytes, (size_t)0xffffffffu * 2);
    if ((cfg->max_tokens == 0) != (cfg->hidden == 0))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "config max_tokens %u, hidden %u: expected both 0 (no fused calls) or both >= 1", cfg->max_tokens, cfg->hidden);
    if (cfg->graph != 0 && cfg->graph != 1)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "config graph %d: expected 0 or 1", cfg->graph);
    if (cfg->profile && strlen(cfg->profile) >= 4096)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "config profile: a path longer than 4095 bytes");
    if (cfg->fabric && strlen(cfg->fabric) >= ARB_FABRIC_LEN)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "config fabric '%s': longer than %d bytes", cfg->fabric, ARB_FABRIC_LEN - 1);
    if (cfg->fallback && (!*cfg->fallback || strlen(cfg->fallback) >= 64))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "config fallback '%s': expected an implementation name of 1 to 63 bytes", cfg->fallback);
    return ARB_OK;
}

/* Every rank's status made the worst one, with the first failing rank's reason. */
static arb_status_t agree(arb_mpi_t *m, arb_status_t st, char *why, size_t why_len)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", st != ARB_OK && why ? why : "");
    int worst = arb_allmax_int(m, (int)st);
    if (worst != ARB_OK && arb_agree_failure(m, st != ARB_OK, msg, sizeof msg) >= 0 && why && why_len)
        snprintf(why, why_len, "%s", msg);
    return (arb_status_t)worst;
}

static arb_status_t create_comm(const arbench_config_t *cfg, arbench_comm_t **out, char *why, size_t why_len)
{
    ARB_TRY(check_config(cfg, why, why_len));
    ARB_TRY(ensure_mpi(why, why_len));
    arbench_comm_t *c = calloc(1, sizeof *c);
    if (!c)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for the communicator");
    c->cfg = *cfg;
    c->fallback_slot[0] = c->fallback_slot[1] = -1;
    snprintf(c->profile_path, sizeof c->profile_path, "%s", cfg->profile ? cfg->profile : "");
    c->cfg.profile = cfg->profile ? c->profile_path : NULL;
    snprintf(c->fallback, sizeof c->fallback, "%s", cfg->fallback ? cfg->fallback : cfg->cuda_device >= 0 ? "nccl" : "mpi-host");
    c->cfg.fallback = c->fallback;
    arb_status_t st;
    if (arb_mpi_bootstrap(&c->mpi) != ARB_OK)
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err_free_comm, why, why_len, "MPI bootstrap (communicator duplicate and node split) failed");
    if (cfg->fabric) {
        snprintf(c->fabric, sizeof c->fabric, "%s", cfg->fabric);
    } else {
        arb_topo_result_t topo;
        st = arb_topo_setup(&c->mpi.world, cfg->cuda_device, 0, &topo, why, why_len);
        if (st != ARB_OK)
            goto err_free_mpi;
        snprintf(c->fabric, sizeof c->fabric, "%s", topo.fabric);
    }
    c->cfg.fabric = c->fabric;
    st = ARB_OK;
    if (cfg->profile) {
        st = arb_site_profile_load(cfg->profile, &c->profile, why, why_len);
        c->have_profile = st == ARB_OK;
    }
    st = agree(&c->mpi, st, why, why_len);
    if (st != ARB_OK)
        goto err_free_profile;
    st = api_open_slots(c, why, why_len);
    if (st != ARB_OK)
        goto err_free_profile;
    *out = c;
    return ARB_OK;

err_free_profile:
    if (c->have_profile)
        arb_profile_free(&c->profile);
err_free_mpi:
    arb_mpi_free(&c->mpi);
err_free_comm:
    free(c);
    return st;
}

arbench_status_t arbench_comm_create(const arbench_config_t *cfg, arbench_comm_t **out, char *why, size_t why_len)
{
    char local_why[1024];
    if (!why || !why_len)
        why = local_why, why_len = sizeof local_why;
    why[0] = '\0';
    *out = NULL;
    return (arbench_status_t)create_comm(cfg, out, why, why_len);
}

int arbench_comm_rank(const arbench_comm_t *comm) { return comm->mpi.rank; }
int arbench_comm_size(const arbench_comm_t *comm) { return comm->mpi.nranks; }

const char *arbench_explain(arbench_comm_t *comm, arbench_op_t op, size_t bytes, int graph, char *note,
                            size_t note_len)
{
    if ((op != ARBENCH_OP_ALLREDUCE && op != ARBENCH_OP_ALLREDUCE_RMSNORM) || (graph != 0 && graph != 1)) {
        ARB_WHY(note, note_len, "arbench_explain: op %d, graph %d: expected ARBENCH_OP_ALLREDUCE or ARBENCH_OP_ALLREDUCE_RMSNORM and graph 0 or 1", (int)op, graph);
        return NULL;
    }
    const api_pick_t *p = api_pick(comm, (arb_op_t)op, bytes, graph ? ARB_MODE_GRAPH : ARB_MODE_EAGER);
    if (!p) {
        ARB_WHY(note, note_len, "out of host memory for the choice table");
        return NULL;
    }
    if (note && note_len)
        snprintf(note, note_len, "%s", p->note);
    return p->slot >= 0 ? comm->slots[p->slot].impl : NULL;
}

void arbench_comm_destroy(arbench_comm_t *comm)
{
    if (!comm)
        return;
    api_close_slots(comm);
    free(comm->picks);
    if (comm->have_profile)
        arb_profile_free(&comm->profile);
    arb_mpi_free(&comm->mpi);
    free(comm);
}
