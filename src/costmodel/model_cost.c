/* SPDX-License-Identifier: MIT */
/* The cost equations (docs/model.md, "Equations"): families, data phases, NCCL. */
#include "costmodel/model_cost.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NCCL 2.28.3 src/graph/tuning.cc, ncclTunerConstantsDefaults: baseLatencies and the
 * NVLINK and PCI rows of hwLatencies, [Tree, Ring][LL, LL128, Simple], microseconds. */
const double arb_nccl_base_lat_us[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
const double arb_nccl_hw_lat_nvlink_us[2][3] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}};
const double arb_nccl_hw_lat_pci_us[2][3] = {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}};
/* Not a tuning.cc constant: the model's band on NCCL's per-hop latencies, which NCCL
 * states without an uncertainty. */
#define NCCL_HOP_BAND 0.3

const char *const arb_model_modes[3] = {"eager", "graph", "context"};

int arb_model_mode_index(const char *mode)
{
    for (int i = 0; i < 3; i++)
        if (mode && strcmp(mode, arb_model_modes[i]) == 0)
            return i;
    return -1;
}

const char *arb_family_name(arb_family_t f)
{
    static const char *const names[] = {"none", "launch", "flag", "oneshot-flagfree", "oneshot-push",
                                        "oneshot-pull", "twoshot", "hoststaged", "nccl", "nccl-auto"};
    return (unsigned)f < sizeof names / sizeof names[0] ? names[f] : "?";
}

/* The value of `key` in a "k=v,k=v" list, copied into out; 0 if found. */
static int param_value(const char *params, const char *key, char *out, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = params; p && *p;) {
        size_t item = strcspn(p, ",");
        if (item > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            size_t vl = item - kl - 1;
            if (vl >= len)
                vl = len - 1;
            memcpy(out, p + kl + 1, vl);
            out[vl] = '\0';
            return 0;
        }
        p += item + (p[item] == ',');
    }
    return -1;
}

arb_variant_key_t arb_model_family(const char *impl, const char *params)
{
    arb_variant_key_t k = {.family = ARB_FAM_NONE};
    char v[64];
    if (strcmp(impl, "noop") == 0)
        k.family = ARB_FAM_LAUNCH;
    else if (strcmp(impl, "ping") == 0)
        k.family = ARB_FAM_FLAG;
    else if (strcmp(impl, "hoststaged") == 0)
        k.family = ARB_FAM_HOSTSTAGED;
    else if ((strcmp(impl, "p2p") == 0 || strcmp(impl, "lsa") == 0) && param_value(params, "variant", v, sizeof v) == 0) {
        if (strcmp(v, "oneshot-flagfree") == 0) k.family = ARB_FAM_FLAGFREE;
        else if (strcmp(v, "oneshot-push") == 0) k.family = ARB_FAM_PUSH;
        else if (strcmp(v, "oneshot-pull") == 0) k.family = ARB_FAM_PULL;
        else if (strcmp(v, "twoshot") == 0) k.family = ARB_FAM_TWOSHOT;
    } else if (strcmp(impl, "nccl") == 0) {
        char a[32], p[32];
        if (param_value(params, "algo", a, sizeof a) || param_value(params, "proto", p, sizeof p))
            return k;
        if (strcmp(a, "auto") == 0) {
            k.family = ARB_FAM_NCCL_AUTO;
            return k;
        }
        int ai = strcmp(a, "Tree") == 0 ? ARB_NCCL_TREE : strcmp(a, "Ring") == 0 ? ARB_NCCL_RING : -1;
        int pi = strcmp(p, "LL") == 0 ? ARB_NCCL_LL : strcmp(p, "LL128") == 0 ? ARB_NCCL_LL128
               : strcmp(p, "Simple") == 0 ? ARB_NCCL_SIMPLE : -1;
        if (ai >= 0 && pi >= 0)
            k = (arb_variant_key_t){.family = ARB_FAM_NCCL, .algo = (arb_nccl_algo_t)ai, .proto = (arb_nccl_proto_t)pi};
    }
    return k;
}

arb_family_shape_t arb_family_shape(arb_family_t f)
{
    switch (f) {
    case ARB_FAM_FLAG: return (arb_family_shape_t){1, 0};
    case ARB_FAM_FLAGFREE: return (arb_family_shape_t){1, 0};   /* data lines are the signal */
    case ARB_FAM_PUSH: return (arb_family_shape_t){2, 0};       /* data write, then the barrier's flag */
    case ARB_FAM_PULL: return (arb_family_shape_t){1, 1};       /* barrier, then reads */
    case ARB_FAM_TWOSHOT: return (arb_family_shape_t){2, 1};    /* 2 barriers, reads of the shards */
    case ARB_FAM_HOSTSTAGED: return (arb_family_shape_t){1, 1}; /* host flag, reads from host */
    default: return (arb_family_shape_t){0, 0};
    }
}

double arb_family_issue_bytes(arb_family_t f, double bytes, int n)
{
    switch (f) {
    case ARB_FAM_FLAGFREE: return 2.0 * (n - 1) * bytes;
    case ARB_FAM_PUSH:
    case ARB_FAM_PULL: return (double)(n - 1) * bytes;
    case ARB_FAM_TWOSHOT: return 2.0 * (n - 1) * bytes / n;
    case ARB_FAM_HOSTSTAGED: return bytes + (double)(n - 1) * bytes; /* write S, then read (n-1)S */
    default: return 0;
    }
}

/* ------------------------------------------------------------ data phases ---------- */

enum { RES_GPU_UP, RES_GPU_DOWN, RES_SW_UP, RES_SW_DOWN, RES_XS, RES_HOST, RES_KINDS };

typedef struct loads {
    double r[RES_KINDS][ARB_MODEL_MAX_GPUS]; /* bytes per resource instance; RES_XS by src*8+dst socket */
    double issuer_us[ARB_MODEL_MAX_GPUS];
} loads_t;

static int socket_of(const arb_fabric_t *f, int g)
{
    return g < 0 ? 0 : f->socket_of[g]; /* pinned host memory: rank 0's node (first touch) */
}

double arb_model_phase_us(const arb_fabric_t *fab, const arb_flow_t *flows, size_t nflows, double issue_gbs,
                          double path_eff, int corner)
{
    loads_t L;
    memset(&L, 0, sizeof L);
    for (size_t i = 0; i < nflows; i++) {
        const arb_flow_t *fl = &flows[i];
        arb_path_t p = arb_fabric_path(fab, fl->src, fl->dst);
        const arb_quantity_t *rate_q = fl->kind == 'r' ? &fab->path[p].read_gbs : &fab->path[p].write_gbs;
        double rate = arb_q_bw(rate_q, corner) * path_eff;
        if (issue_gbs > 0 && issue_gbs < rate)
            rate = issue_gbs;
        L.issuer_us[fl->issuer] += fl->bytes / (1e3 * rate);
        if (p == ARB_PATH_NVLINK)
            continue; /* NVLink pairs share no PCIe resource */
        int s = fl->src, d = fl->dst;
        int same_switch = s >= 0 && d >= 0 && fab->switch_of[s] >= 0 && fab->switch_of[s] == fab->switch_of[d];
        if (s >= 0) {
            L.r[RES_GPU_UP][s] += fl->bytes;
            if (fab->switch_of[s] >= 0 && !same_switch)
                L.r[RES_SW_UP][fab->switch_of[s]] += fl->bytes;
        }
        if (socket_of(fab, s) != socket_of(fab, d))
            L.r[RES_XS][(socket_of(fab, s) * 8 + socket_of(fab, d)) % ARB_MODEL_MAX_GPUS] += fl->bytes;
        if (d >= 0) {
            L.r[RES_GPU_DOWN][d] += fl->bytes;
            if (fab->switch_of[d] >= 0 && !same_switch)
                L.r[RES_SW_DOWN][fab->switch_of[d]] += fl->bytes;
        }
        if (s < 0 || d < 0)
            L.r[RES_HOST][0] += fl->bytes;
    }
    const double cap[RES_KINDS] = {arb_q_bw(&fab->link_gbs, corner), arb_q_bw(&fab->link_gbs, corner),
                                   fab->uplink_gbs.set ? arb_q_bw(&fab->uplink_gbs, corner) : INFINITY,
                                   fab->uplink_gbs.set ? arb_q_bw(&fab->uplink_gbs, corner) : INFINITY,
                                   fab->xsocket_gbs.set ? arb_q_bw(&fab->xsocket_gbs, corner) : INFINITY,
                                   arb_q_bw(&fab->host_gbs, corner)};
    double t = 0;
    for (int g = 0; g < ARB_MODEL_MAX_GPUS; g++) {
        if (L.issuer_us[g] > t)
            t = L.issuer_us[g];
        for (int k = 0; k < RES_KINDS; k++)
            if (L.r[k][g] / (1e3 * cap[k]) > t)
                t = L.r[k][g] / (1e3 * cap[k]);
    }
    return t;
}

/* The flows of one call of a custom family on GPUs 0..n-1, in phases (phase 0, 1). */
static size_t family_flows(arb_family_t f, double S, int n, int phase, arb_flow_t *out)
{
    size_t k = 0;
    for (int g = 0; g < n; g++) {
        if (f == ARB_FAM_HOSTSTAGED) {
            if (phase == 0)
                out[k++] = (arb_flow_t){g, -1, g, 'w', S};
            else
                out[k++] = (arb_flow_t){-1, g, g, 'r', (n - 1) * S};
            continue;
        }
        for (int p = 0; p < n; p++) {
            if (p == g)
                continue;
            if (f == ARB_FAM_FLAGFREE && phase == 0) out[k++] = (arb_flow_t){g, p, g, 'w', 2 * S};
            if (f == ARB_FAM_PUSH && phase == 0) out[k++] = (arb_flow_t){g, p, g, 'w', S};
            if (f == ARB_FAM_PULL && phase == 0) out[k++] = (arb_flow_t){p, g, g, 'r', S};
            if (f == ARB_FAM_TWOSHOT) /* phase 0: read shards; phase 1: write the reduced shard */
                out[k++] = phase == 0 ? (arb_flow_t){p, g, g, 'r', S / n} : (arb_flow_t){g, p, g, 'w', S / n};
        }
    }
    return k;
}

static int is_p2p_family(arb_family_t f)
{
    return f == ARB_FAM_FLAGFREE || f == ARB_FAM_PUSH || f == ARB_FAM_PULL || f == ARB_FAM_TWOSHOT ||
           f == ARB_FAM_FLAG;
}

/* The path class a fitted entry's latencies were measured over on the fit fabric. */
static arb_path_t fit_path(const arb_fabric_t *fit_fab, const arb_fit_entry_t *e)
{
    if (e->key.family == ARB_FAM_HOSTSTAGED || e->transport == ARB_TRANSPORT_SHM)
        return ARB_PATH_HOST;
    return arb_fabric_worst_path(fit_fab, 2);
}

static double custom_time(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_fit_entry_t *e,
                          const arb_fabric_t *fab, int n, double S, int corner, int m)
{
    arb_family_t f = e->key.family;
    arb_family_shape_t sh = arb_family_shape(f);
    arb_path_t tp = f == ARB_FAM_HOSTSTAGED ? ARB_PATH_HOST : arb_fabric_worst_path(fab, n);
    arb_path_t fp = fit_path(fit_fab, e);
    double t = fit->launch_us[m];
    if (f == ARB_FAM_LAUNCH || n < 2)
        return f == ARB_FAM_LAUNCH ? t : t + e->offset_us + S / (1e3 * (e->bw_gbs > 0 ? e->bw_gbs : INFINITY));
    /* Latency terms measured on the fit path, moved to the target path by the spec's
     * differences (the GPU-side part of a flag latency stays). */
    double dlat = arb_q_lat(&fab->path[tp].lat_us, corner) - fit_fab->path[fp].lat_us.v;
    double drtt = arb_q_lat(&fab->path[tp].rtt_us, corner) - fit_fab->path[fp].rtt_us.v;
    double flag = f == ARB_FAM_HOSTSTAGED ? 0 : fit->flag_us[m]; /* hoststaged's host flag is in its O */
    t += e->offset_us + sh.flag_latencies * (flag + dlat) + sh.read_rtts * drtt;
    if (f == ARB_FAM_FLAG)
        return t;
    /* hoststaged is limited by the real PCIe link on the fit machine: it keeps the
     * fraction of the host path it reached there. P2P kernels keep their issue rate. */
    double eff = 1.0;
    if (f == ARB_FAM_HOSTSTAGED && e->bw_gbs > 0) {
        double fit_rate = fit_fab->path[ARB_PATH_HOST].write_gbs.v;
        eff = e->bw_gbs / fit_rate < 1.0 ? e->bw_gbs / fit_rate : 1.0;
    }
    arb_flow_t *flows = malloc((size_t)n * (size_t)n * sizeof *flows); /* at most n(n-1) flows a phase */
    if (!flows)
        return NAN;
    for (int phase = 0; phase < 2; phase++) {
        size_t k = family_flows(f, S, n, phase, flows);
        t += arb_model_phase_us(fab, flows, k, e->bw_gbs, eff, corner);
    }
    free(flows);
    return t;
}

/* NCCL's bandwidth factors for a hop's bus bandwidth (tuning.cc "model refinements"). */
static double nccl_proto_factor(arb_nccl_algo_t a, arb_nccl_proto_t p)
{
    if (a == ARB_NCCL_RING)
        return p == ARB_NCCL_LL ? 0.5 : p == ARB_NCCL_LL128 ? 0.92 : 1.0;
    return 0.92 * (p == ARB_NCCL_LL ? 1.0 / 3.8 : p == ARB_NCCL_LL128 ? 7.0 / 9.0 : 1.0);
}

static const char *nccl_time(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_fit_entry_t *e,
                             const arb_fit_entry_t *shm, const arb_fabric_t *fab, int n, double S, int corner,
                             int m, arb_transport_t force, int all_p2p, double *out)
{
    arb_nccl_algo_t a = e->key.algo;
    arb_nccl_proto_t p = e->key.proto;
    if (p == ARB_NCCL_LL128 && !fab->nvlink)
        return "NCCL 2.28 disables LL128 on PCIe paths (tuning.cc: LL128 only where typeIntra <= PATH_NVB)";
    double step_us = 0, busbw = INFINITY;
    int shm_hops = 0, shm_xsocket = 0;
    for (int g = 0; g < n && n > 1; g++) {
        int next = (g + 1) % n;
        arb_path_t pc = arb_fabric_path(fab, g, next);
        int use_shm = force == ARB_TRANSPORT_SHM || (!all_p2p && pc > fab->nccl_p2p_max) || pc > fab->cuda_p2p_max;
        double h, bw;
        if (use_shm) {
            if (!shm)
                return "needs SHM hops (NCCL uses P2P only up to nccl_p2p) but the fit has no NCCL_P2P_DISABLE=1 run of this variant";
            double dh = arb_q_lat(&fab->path[ARB_PATH_HOST].lat_us, corner) - fit_fab->path[ARB_PATH_HOST].lat_us.v +
                        arb_q_lat(&fab->path[ARB_PATH_HOST].rtt_us, corner) - fit_fab->path[ARB_PATH_HOST].rtt_us.v;
            h = shm->hop_us + dh;
            double ratio = arb_q_bw(&fab->link_gbs, corner) / fit_fab->link_gbs.v;
            bw = (shm->bw_gbs > 0 ? shm->bw_gbs : INFINITY) * (ratio < 1 ? ratio : 1);
            shm_hops++;
            shm_xsocket |= fab->socket_of[g] != fab->socket_of[next];
        } else if (pc == ARB_PATH_NVLINK) {
            h = arb_nccl_hw_lat_nvlink_us[a][p];
            bw = e->bw_gbs > 0 ? e->bw_gbs : INFINITY;
        } else {
            h = arb_nccl_hw_lat_pci_us[a][p] * (1 + corner * NCCL_HOP_BAND);
            double link = arb_q_bw(&fab->path[pc].write_gbs, corner) * nccl_proto_factor(a, p);
            bw = e->bw_gbs > 0 && e->bw_gbs < link ? e->bw_gbs : link;
        }
        if (h > step_us) step_us = h;
        if (bw < busbw) busbw = bw;
    }
    if (shm_hops) { /* every SHM hop writes and reads host memory at once */
        double host = arb_q_bw(&fab->host_gbs, corner) / (2.0 * shm_hops);
        if (host < busbw) busbw = host;
        if (shm_xsocket && fab->xsocket_gbs.set && arb_q_bw(&fab->xsocket_gbs, corner) < busbw)
            busbw = arb_q_bw(&fab->xsocket_gbs, corner);
    }
    int nsteps = 2 * (n - 1); /* all-reduce: Ring and the intra-node Tree chain alike */
    /* algBw = busBw x n/nsteps (Ring) or x 0.5 (Tree), tuning.cc "Convert bus BW to algorithm BW" */
    double wire = n < 2 ? 0 : a == ARB_NCCL_RING ? S * nsteps / n : 2.0 * S;
    *out = fit->launch_us[m] + e->offset_us + nsteps * step_us + wire / (1e3 * busbw);
    return NULL;
}

void arb_model_predict_one(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_fit_entry_t *e,
                           const arb_fit_entry_t *shm, const arb_fabric_t *fab, int n, double bytes,
                           arb_prediction_t *out)
{
    memset(out, 0, sizeof *out);
    int m = arb_model_mode_index(e->mode);
    if (m < 0 || !isfinite(fit->launch_us[m]) || !isfinite(fit->flag_us[m])) {
        out->why_not = "the fit has no launch/flag floor (noop, ping) in this mode";
        return;
    }
    if (n > fab->ngpus) {
        out->why_not = "more ranks than the fabric has GPUs";
        return;
    }
    arb_family_t f = e->key.family;
    if (is_p2p_family(f) && arb_fabric_worst_path(fab, n) > fab->cuda_p2p_max && !fab->nvlink) {
        out->why_not = "needs CUDA P2P between every pair; the spec's cuda_p2p does not reach every pair of these GPUs";
        return;
    }
    double t[3], route_us[3] = {NAN, NAN, NAN};
    if (f == ARB_FAM_NCCL) {
        /* NCCL under its defaults on PCIe: which transport a hop takes is not known from the
         * spec alone, so the band covers every route the facts leave: the spec's (P2P up to
         * nccl_p2p, SHM beyond), P2P on every pair CUDA allows (the switches under one
         * upstream switch, a PXB path, paths.cc:315; or NCCL_P2P_LEVEL=SYS), SHM on every
         * pair (NVML reporting P2P unavailable, paths.cc:339-356, as with ACS/IOMMU). */
        const int routes = e->transport == ARB_TRANSPORT_P2P && !fab->nvlink ? 3 : 1;
        for (int route = 0; route < routes; route++) {
            double tr[3];
            const char *why = NULL;
            const arb_transport_t force = route == 2 ? ARB_TRANSPORT_SHM : e->transport;
            for (int c = -1; c <= 1 && !why; c++)
                why = nccl_time(fit, fit_fab, e, shm, fab, n, bytes, c, m, force, route == 1, &tr[c + 1]);
            if (why && route == 0) {
                out->why_not = why;
                return;
            }
            if (why)
                continue;
            if (route == 0)
                memcpy(t, tr, sizeof t);
            route_us[route] = tr[1];
            t[0] = fmin(t[0], tr[0]), t[2] = fmax(t[2], tr[2]);
        }
    } else
        for (int c = -1; c <= 1; c++)
            if (!isfinite(t[c + 1] = custom_time(fit, fit_fab, e, fab, n, bytes, c, m))) {
                out->why_not = "out of memory";
                return;
            }
    /* The band: spec constants at their corners, then the fit's own largest residual and,
     * on another machine than the fit's, the band for a different GPU. */
    int other = strcmp(fab->name, fit_fab->name) != 0;
    double r = e->rel_err + (other ? fab->gpu_band.v : 0);
    out->us = t[1];
    out->lo_us = fmin(t[0], t[1]) * (1 - r);
    out->hi_us = fmax(t[2], t[1]) * (1 + r);
    if (out->lo_us < 0)
        out->lo_us = 0;
    snprintf(out->detail, sizeof out->detail, "L=%.2f O=%.2f bw=%.1f r=%.2f", fit->launch_us[m], e->offset_us,
             e->bw_gbs, r);
    if (!isnan(route_us[1]) || !isnan(route_us[2])) {
        size_t u = strlen(out->detail);
        snprintf(out->detail + u, sizeof out->detail - u, "; routes spec/all-P2P/all-SHM %.1f/%.1f/%.1f us", route_us[0],
                 route_us[1], route_us[2]);
    }
}
