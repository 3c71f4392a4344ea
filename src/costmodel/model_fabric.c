/* SPDX-License-Identifier: MIT */
/* Fabric spec files: `key = value [+-REL] [# source]`, one per line (docs/model.md). */
#include "costmodel/model_fabric.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const path_names[ARB_PATH_COUNT] = {"nvlink", "switch", "hostbridge", "xsocket", "host"};

const char *arb_path_name(arb_path_t p)
{
    return (unsigned)p < ARB_PATH_COUNT ? path_names[p] : "?";
}

static int path_from_name(const char *s, arb_path_t *out)
{
    for (int i = 0; i < ARB_PATH_COUNT; i++)
        if (strcmp(s, path_names[i]) == 0) {
            *out = (arb_path_t)i;
            return 0;
        }
    return -1;
}

double arb_q_lat(const arb_quantity_t *q, int corner)
{
    return q->v * (1.0 + corner * q->band);
}

double arb_q_bw(const arb_quantity_t *q, int corner)
{
    double f = 1.0 - corner * q->band;
    return q->v * (f < 0.05 ? 0.05 : f);
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* "48", "48 +-0.15": value and relative band. */
int arb_q_parse(const char *val, const char *source, arb_quantity_t *q)
{
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (end == val || errno == ERANGE || !isfinite(v) || v < 0)
        return -1;
    double band = 0;
    while (isspace((unsigned char)*end))
        end++;
    if (strncmp(end, "+-", 2) == 0) {
        const char *b = end + 2;
        band = strtod(b, &end);
        if (end == b || !isfinite(band) || band < 0 || band >= 1)
            return -1;
        while (isspace((unsigned char)*end))
            end++;
    }
    if (*end)
        return -1;
    if (!*source)
        return -2; /* a constant without its source */
    q->v = v;
    q->band = band;
    snprintf(q->source, sizeof q->source, "%s", source);
    q->set = 1;
    return 0;
}

static int parse_int(const char *val, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(val, &end, 10);
    if (end == val || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* The quantity a dotted key names, e.g. "switch.write_gbs"; NULL if none. */
static arb_quantity_t *quantity_slot(arb_fabric_t *f, const char *key)
{
    static const struct { const char *name; size_t off; } globals[] = {
        {"link_gbs", offsetof(arb_fabric_t, link_gbs)},       {"uplink_gbs", offsetof(arb_fabric_t, uplink_gbs)},
        {"xsocket_gbs", offsetof(arb_fabric_t, xsocket_gbs)}, {"host_gbs", offsetof(arb_fabric_t, host_gbs)},
        {"gpu_band", offsetof(arb_fabric_t, gpu_band)},
    };
    for (size_t i = 0; i < sizeof globals / sizeof globals[0]; i++)
        if (strcmp(key, globals[i].name) == 0)
            return (arb_quantity_t *)((char *)f + globals[i].off);
    const char *dot = strchr(key, '.');
    if (!dot)
        return NULL;
    char cls[32];
    size_t n = (size_t)(dot - key);
    if (n >= sizeof cls)
        return NULL;
    memcpy(cls, key, n);
    cls[n] = '\0';
    arb_path_t p;
    if (path_from_name(cls, &p))
        return NULL;
    arb_path_props_t *pp = &f->path[p];
    if (strcmp(dot + 1, "write_gbs") == 0) return &pp->write_gbs;
    if (strcmp(dot + 1, "read_gbs") == 0) return &pp->read_gbs;
    if (strcmp(dot + 1, "lat_us") == 0) return &pp->lat_us;
    if (strcmp(dot + 1, "rtt_us") == 0) return &pp->rtt_us;
    return NULL;
}

static int set_string(char *dst, size_t len, const char *val)
{
    if (!*val || strlen(val) >= len)
        return -1;
    snprintf(dst, len, "%s", val);
    return 0;
}

/* One `key = value` line; returns NULL or the accepted form for the error message. */
static const char *apply_line(arb_fabric_t *f, const char *key, const char *val, const char *src)
{
    int *ints[] = {&f->ngpus, &f->sockets, &f->switches_per_socket, &f->gpus_per_switch, &f->nvlink,
                   &f->link_gen, &f->link_width};
    static const char *const int_keys[] = {"gpus", "sockets", "switches_per_socket", "gpus_per_switch",
                                           "nvlink", "link_gen", "link_width"};
    for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++)
        if (strcmp(key, int_keys[i]) == 0)
            return parse_int(val, 0, ARB_MODEL_MAX_GPUS, ints[i]) ? "a whole number from 0 to 64" : NULL;
    if (strcmp(key, "name") == 0) return set_string(f->name, sizeof f->name, val) ? "a name of at most 63 characters" : NULL;
    if (strcmp(key, "label") == 0) return set_string(f->label, sizeof f->label, val) ? "a fabric label (docs/topology.md)" : NULL;
    if (strcmp(key, "gpu") == 0) return set_string(f->gpu, sizeof f->gpu, val) ? "a GPU name" : NULL;
    if (strcmp(key, "sm") == 0) return set_string(f->sm, sizeof f->sm, val) ? "a compute capability such as 12.0" : NULL;
    if (strcmp(key, "cuda_p2p") == 0 || strcmp(key, "nccl_p2p") == 0) {
        arb_path_t p;
        if (path_from_name(val, &p))
            return "one of nvlink, switch, hostbridge, xsocket (the slowest path class with P2P)";
        *(key[0] == 'c' ? &f->cuda_p2p_max : &f->nccl_p2p_max) = p;
        return NULL;
    }
    arb_quantity_t *q = quantity_slot(f, key);
    if (!q)
        return "a known key (docs/model.md lists them)";
    int rc = arb_q_parse(val, src, q);
    if (rc == -2)
        return "a value followed by '# source' (every constant states where it comes from)";
    size_t kl = strlen(key);
    if (!rc && kl > 4 && strcmp(key + kl - 4, "_gbs") == 0 && !(q->v > 0)) {
        q->set = 0;
        return "a positive bandwidth in GB/s (at zero no byte ever arrives)";
    }
    return rc ? "a non-negative number, optionally followed by +-REL with 0 <= REL < 1" : NULL;
}

static arb_status_t check_complete(arb_fabric_t *f, const char *name, char *err, size_t err_len)
{
    if (!f->name[0] || !f->label[0] || f->ngpus < 1 || f->sockets < 1) {
        ARB_WHY(err, err_len, "%s: needs name, label, gpus >= 1 and sockets >= 1", name);
        return ARB_ERR_INVALID;
    }
    if (!f->link_gbs.set && f->link_gen >= 1 && f->link_gen <= 6 && f->link_width > 0) {
        /* NCCL 2.28.3 src/graph/topo.cc: per-lane speed in 100 Mb/s (Gen1 15 ... Gen5 240, Gen6 480),
         * link bandwidth width x speed / 80 GB/s: 48 GB/s for Gen5 x16. */
        static const double lane[] = {0, 15, 30, 60, 120, 240, 480};
        f->link_gbs.v = f->link_width * lane[f->link_gen] / 80.0;
        f->link_gbs.band = 0.15;
        snprintf(f->link_gbs.source, sizeof f->link_gbs.source,
                 "NCCL 2.28.3 topo.cc width x speed / 80 for Gen%d x%d; +-15%%: measured P2P is 53-56 GB/s on Gen5 x16 (design notes)",
                 f->link_gen, f->link_width);
        f->link_gbs.set = 1;
    }
    const char *missing = NULL;
    if (!f->link_gbs.set) missing = "link_gbs (or link_gen and link_width)";
    else if (!f->host_gbs.set) missing = "host_gbs";
    else if (!f->gpu_band.set) missing = "gpu_band";
    if (missing) {
        ARB_WHY(err, err_len, "%s: missing %s", name, missing);
        return ARB_ERR_INVALID;
    }
    if (arb_fabric_layout(f, err, err_len))
        return ARB_ERR_INVALID;
    return arb_fabric_check_paths(f, err, err_len);
}

arb_status_t arb_fabric_check_paths(const arb_fabric_t *f, char *err, size_t err_len)
{
    const char *name = f->path_file;
    int switched = 0;
    for (int g = 0; g < f->ngpus; g++)
        switched |= f->switch_of[g] >= 0;
    if ((switched && !f->uplink_gbs.set) || (f->sockets > 1 && !f->xsocket_gbs.set)) {
        ARB_WHY(err, err_len, "%s: missing %s (the GPUs sit %s)", name, switched && !f->uplink_gbs.set ? "uplink_gbs" : "xsocket_gbs",
                 switched && !f->uplink_gbs.set ? "below PCIe switches" : "on several sockets");
        return ARB_ERR_INVALID;
    }
    /* Every path class that occurs (and host, always) needs all four properties. */
    int used[ARB_PATH_COUNT] = {0};
    used[ARB_PATH_HOST] = 1;
    for (int a = 0; a < f->ngpus; a++)
        for (int b = 0; b < f->ngpus; b++)
            if (a != b)
                used[arb_fabric_path(f, a, b)] = 1;
    static const char *const props[] = {"write_gbs", "read_gbs", "lat_us", "rtt_us"};
    for (int p = 0; p < ARB_PATH_COUNT; p++) {
        if (!used[p])
            continue;
        const arb_quantity_t *q[] = {&f->path[p].write_gbs, &f->path[p].read_gbs, &f->path[p].lat_us,
                                     &f->path[p].rtt_us};
        for (int k = 0; k < 4; k++)
            if (!q[k]->set) {
                ARB_WHY(err, err_len, "%s: missing %s.%s (GPU pairs of this fabric use the %s path)", name,
                         path_names[p], props[k], path_names[p]);
                return ARB_ERR_INVALID;
            }
    }
    return ARB_OK;
}

arb_status_t arb_fabric_layout(arb_fabric_t *f, char *err, size_t err_len)
{
    if (f->ngpus > ARB_MODEL_MAX_GPUS) {
        ARB_WHY(err, err_len, "%s: gpus %d: at most %d", f->name, f->ngpus, ARB_MODEL_MAX_GPUS);
        return ARB_ERR_INVALID;
    }
    if (f->ngpus % f->sockets) {
        ARB_WHY(err, err_len, "%s: gpus %d do not divide over %d sockets", f->name, f->ngpus, f->sockets);
        return ARB_ERR_INVALID;
    }
    int per_socket = f->ngpus / f->sockets;
    if (f->gpus_per_switch > 0 && per_socket != f->gpus_per_switch * f->switches_per_socket) {
        ARB_WHY(err, err_len, "%s: gpus per socket %d != gpus_per_switch %d x switches_per_socket %d", f->name,
                 per_socket, f->gpus_per_switch, f->switches_per_socket);
        return ARB_ERR_INVALID;
    }
    /* GPUs are numbered socket by socket, switch by switch (as CUDA's PCI bus order gives). */
    for (int g = 0; g < f->ngpus; g++) {
        f->socket_of[g] = g / per_socket;
        f->switch_of[g] = f->gpus_per_switch > 0 ? g / f->gpus_per_switch : -1;
    }
    return ARB_OK;
}

arb_path_t arb_fabric_path(const arb_fabric_t *f, int a, int b)
{
    if (b < 0 || a < 0)
        return ARB_PATH_HOST;
    if (f->nvlink)
        return ARB_PATH_NVLINK;
    if (f->switch_of[a] >= 0 && f->switch_of[a] == f->switch_of[b])
        return ARB_PATH_SWITCH;
    return f->socket_of[a] == f->socket_of[b] ? ARB_PATH_HOSTBRIDGE : ARB_PATH_XSOCKET;
}

arb_path_t arb_fabric_worst_path(const arb_fabric_t *f, int n)
{
    arb_path_t w = ARB_PATH_NVLINK;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (a != b && arb_fabric_path(f, a, b) > w)
                w = arb_fabric_path(f, a, b);
    return w;
}

arb_status_t arb_spec_parse(const char *text, const char *name, arb_spec_apply_fn apply, void *ctx, char *err,
                            size_t err_len)
{
    const char *p = text;
    for (int lineno = 1; *p; lineno++) {
        size_t len = strcspn(p, "\n");
        char line[1024];
        if (len >= sizeof line) {
            ARB_WHY(err, err_len, "%s:%d: line longer than %zu characters", name, lineno, sizeof line - 1);
            return ARB_ERR_INVALID;
        }
        memcpy(line, p, len);
        line[len] = '\0';
        p += len + (p[len] == '\n');
        char *hash = strchr(line, '#');
        const char *src = "";
        if (hash) {
            *hash = '\0';
            src = trim(hash + 1);
        }
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            ARB_WHY(err, err_len, "%s:%d: '%.60s': expected 'key = value [+-REL] [# source]'", name, lineno, s);
            return ARB_ERR_INVALID;
        }
        *eq = '\0';
        char *key = trim(s), *val = trim(eq + 1);
        const char *want = apply(ctx, key, val, src);
        if (want) {
            ARB_WHY(err, err_len, "%s:%d: %s = '%.60s': expected %s", name, lineno, key, val, want);
            return ARB_ERR_INVALID;
        }
    }
    return ARB_OK;
}

static const char *fabric_apply(void *ctx, const char *key, const char *val, const char *src)
{
    return apply_line(ctx, key, val, src);
}

arb_status_t arb_fabric_read_mem(const char *text, const char *name, arb_fabric_t *f, char *err, size_t err_len)
{
    memset(f, 0, sizeof *f);
    f->cuda_p2p_max = ARB_PATH_HOSTBRIDGE;
    f->nccl_p2p_max = ARB_PATH_SWITCH; /* NCCL 2.28.3 paths.cc: p2pLevel = PATH_PXB by default */
    snprintf(f->path_file, sizeof f->path_file, "%s", name);
    ARB_TRY(arb_spec_parse(text, name, fabric_apply, f, err, err_len));
    return check_complete(f, name, err, err_len);
}

arb_status_t arb_spec_read(const char *path, const char *what, arb_spec_mem_fn parse, void *out, char *err,
                           size_t err_len)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        ARB_WHY(err, err_len, "%s: %s (expected %s)", path, strerror(errno), what);
        return ARB_ERR_INVALID;
    }
    char *buf = malloc(1 << 16);
    size_t n = buf ? fread(buf, 1, (1 << 16) - 1, fp) : 0;
    int toolong = buf && n == (1 << 16) - 1 && fgetc(fp) != EOF;
    fclose(fp);
    if (!buf || toolong) {
        ARB_WHY(err, err_len, "%s: %s", path, buf ? "larger than 64 KiB: not a spec file" : "out of memory");
        free(buf);
        return ARB_ERR_INVALID;
    }
    buf[n] = '\0';
    arb_status_t rc = parse(buf, path, out, err, err_len);
    free(buf);
    return rc;
}

static arb_status_t fabric_mem(const char *text, const char *name, void *out, char *err, size_t err_len)
{
    return arb_fabric_read_mem(text, name, out, err, err_len);
}

arb_status_t arb_fabric_read(const char *path, arb_fabric_t *f, char *err, size_t err_len)
{
    return arb_spec_read(path, "a fabric spec file, e.g. model/fabrics/*.spec", fabric_mem, f, err, err_len);
}
