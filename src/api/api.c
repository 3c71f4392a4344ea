/* SPDX-License-Identifier: MIT */
/* arbench.h: the communicator's life (create over MPI or without, destroy), its queries and
 * the version. */
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

static arb_status_t create_comm(const arbench_config_t *cfg, const api_boot_t *boot, arbench_comm_t **out, char *why,
                                size_t why_len)
{
    ARB_TRY(check_config(cfg, why, why_len));
    arbench_comm_t *c = calloc(1, sizeof *c);
    if (!c)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for the communicator");
    c->cfg = *cfg;
    c->fallback_slot[0] = c->fallback_slot[1] = -1;
    snprintf(c->profile_path, sizeof c->profile_path, "%s", cfg->profile ? cfg->profile : "");
    c->cfg.profile = cfg->profile ? c->profile_path : NULL;
    const char *host_fallback = boot->kind == API_BOOT_MPI ? "mpi-host" : "ops-host";
    snprintf(c->fallback, sizeof c->fallback, "%s", cfg->fallback ? cfg->fallback : cfg->cuda_device >= 0 ? "nccl" : host_fallback);
    c->cfg.fallback = c->fallback;
    arb_status_t st = api_boot(c, boot, why, why_len);
    if (st != ARB_OK)
        goto err_free_comm;
    if (cfg->fabric) {
        snprintf(c->fabric, sizeof c->fabric, "%s", cfg->fabric);
    } else if (boot->kind != API_BOOT_MPI) {
        /* Detection (src/topo) runs over MPI; without it only an unused label is allowed. */
        if (cfg->profile)
            ARB_RAISE_GOTO(st, ARB_ERR_INVALID, err_free_mpi, why, why_len, "config fabric: NULL with a profile on a communicator created without MPI: fabric detection needs MPI; pass the profile's fabric label for this job (arbench topo prints it)");
        snprintf(c->fabric, sizeof c->fabric, "undetected");
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
    api_boot_free(c);
err_free_comm:
    free(c);
    return st;
}

static arbench_status_t create_with(const arbench_config_t *cfg, const api_boot_t *boot, arbench_comm_t **out,
                                    char *why, size_t why_len)
{
    char local_why[1024];
    if (!why || !why_len)
        why = local_why, why_len = sizeof local_why;
    why[0] = '\0';
    if (!out) {
        ARB_WHY(why, why_len, "arbench_comm_create: out is NULL, expected a pointer to an arbench_comm_t *");
        return ARBENCH_ERR_INVALID;
    }
    *out = NULL;
    return (arbench_status_t)create_comm(cfg, boot, out, why, why_len);
}

arbench_status_t arbench_comm_create(const arbench_config_t *cfg, arbench_comm_t **out, char *why, size_t why_len)
{
    api_boot_t b = {.kind = API_BOOT_MPI};
    return create_with(cfg, &b, out, why, why_len);
}

arbench_status_t arbench_comm_create_allgather(const arbench_config_t *cfg, int rank, int size,
                                               arbench_allgather_fn allgather, void *ctx, arbench_comm_t **out,
                                               char *why, size_t why_len)
{
    api_boot_t b = {.kind = API_BOOT_ALLGATHER, .rank = rank, .size = size, .allgather = allgather, .ctx = ctx};
    return create_with(cfg, &b, out, why, why_len);
}

arbench_status_t arbench_comm_create_nccl_id(const arbench_config_t *cfg, int rank, int size, const void *id,
                                             size_t id_len, arbench_comm_t **out, char *why, size_t why_len)
{
    if (!id || id_len != ARBENCH_NCCL_UNIQUE_ID_BYTES || size < 1 || rank < 0 || rank >= size) {
        if (out)
            *out = NULL;
        ARB_WHY(why, why_len, "arbench_comm_create_nccl_id: rank %d of %d, id of %zu bytes: expected 0 <= rank < size and %d id bytes (arbench_nccl_unique_id)", rank, size, id ? id_len : 0, ARBENCH_NCCL_UNIQUE_ID_BYTES);
        return ARBENCH_ERR_INVALID;
    }
    api_boot_t b = {.kind = API_BOOT_NCCL_ID, .rank = rank, .size = size, .nccl_id = id};
    return create_with(cfg, &b, out, why, why_len);
}

arbench_status_t arbench_comm_create_nccl(const arbench_config_t *cfg, void *nccl_comm, arbench_comm_t **out,
                                          char *why, size_t why_len)
{
    if (!nccl_comm) {
        if (out)
            *out = NULL;
        ARB_WHY(why, why_len, "arbench_comm_create_nccl: nccl_comm is NULL, expected an initialized ncclComm_t");
        return ARBENCH_ERR_INVALID;
    }
    api_boot_t b = {.kind = API_BOOT_NCCL_COMM, .nccl_comm = nccl_comm};
    return create_with(cfg, &b, out, why, why_len);
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
    free(comm->regs);
    if (comm->have_profile)
        arb_profile_free(&comm->profile);
    api_boot_free(comm);
    free(comm);
}
