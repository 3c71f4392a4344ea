/* SPDX-License-Identifier: MIT */
#include "runtime/loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arbench/status.h"
#include "arb_config.h"

arb_status_t arb_plugin_validate(const arb_plugin_t *p, const char *where, char *err, size_t err_len)
{
    if (p->abi_version != ARB_PLUGIN_ABI_VERSION) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: plugin ABI version %u, this arbench expects %u: rebuild the plugin against this arbench's include/arbench/plugin.h",
                 where, p->abi_version, ARB_PLUGIN_ABI_VERSION);
    }
    if (!p->name || !*p->name) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: plugin has no name", where);
    }
    if (!p->init || !p->allreduce || !p->finalize) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: plugin '%s' lacks a mandatory callback (init, allreduce, finalize)", where, p->name);
    }
    if (!(p->caps & (ARB_CAP_HOST_MEMORY | ARB_CAP_DEVICE_MEMORY))) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: plugin '%s' declares neither host nor device memory in caps", where, p->name);
    }
    if ((p->caps & ARB_CAP_NEEDS_ALLOC) && (!p->mem_alloc || !p->mem_free)) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: plugin '%s' needs its own allocator but has no mem_alloc/mem_free", where, p->name);
    }
    return ARB_OK;
}

/* Appends "  path: reason\n" to the error report. */
static void note_try(char *err, size_t err_len, const char *path, const char *why)
{
    size_t used = strlen(err);
    if (used < err_len)
        snprintf(err + used, err_len - used, "\n  tried %s: %s", path, why);
}

static arb_status_t try_open(const char *path, arb_loaded_plugin_t *out, char *err, size_t err_len, int *found)
{
    if (access(path, F_OK) != 0) {
        note_try(err, err_len, path, "no such file");
        return ARB_ERR_INVALID;
    }
    *found = 1;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        note_try(err, err_len, path, e ? e : "dlopen failed");
        return ARB_ERR_INVALID;
    }
    dlerror();
    const arb_plugin_t *p = dlsym(h, ARB_PLUGIN_SYMBOL);
    if (!p) {
        char why[512];
        if (dlsym(h, ARB_PLUGIN_SYMBOL_V1))
            snprintf(why, sizeof why, "built for plugin ABI version 1 (exports %s); this arbench loads version %u (%s): rebuild the plugin against include/arbench/plugin.h", ARB_PLUGIN_SYMBOL_V1, ARB_PLUGIN_ABI_VERSION, ARB_PLUGIN_SYMBOL);
        else
            snprintf(why, sizeof why, "no symbol %s (not an arbench plugin, or built for another ABI)", ARB_PLUGIN_SYMBOL);
        note_try(err, err_len, path, why);
        dlclose(h);
        return ARB_ERR_INVALID;
    }
    char verr[1024];
    if (arb_plugin_validate(p, path, verr, sizeof verr)) {
        note_try(err, err_len, path, verr);
        dlclose(h);
        return ARB_ERR_INVALID;
    }
    out->handle = h;
    out->plugin = p;
    snprintf(out->path, sizeof out->path, "%s", path);
    return ARB_OK;
}

static int valid_name(const char *name)
{
    if (!*name)
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' || *c == '_'))
            return 0;
    return 1;
}

arb_status_t arb_plugin_load(const char *name, arb_loaded_plugin_t *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    int found = 0;
    if (strchr(name, '/')) {
        snprintf(err, err_len, "cannot load plugin '%s':", name);
        return try_open(name, out, err, err_len, &found);
    }
    if (!valid_name(name)) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--impl '%s': a plugin name is lower-case letters, digits, '-' and '_' (or a path to a .so)", name);
    }
    int used = snprintf(err, err_len, "no plugin '%s' found (known:", name);
    for (size_t i = 0; arb_known_plugins[i] && used >= 0 && (size_t)used < err_len; i++)
        used += snprintf(err + used, err_len - (size_t)used, "%s %s", i ? "," : "", arb_known_plugins[i]);
    if (used >= 0 && (size_t)used < err_len)
        snprintf(err + used, err_len - (size_t)used, "; GPU plugins are built only with CUDA):");
    char path[4096];
    const char *env = getenv("ARBENCH_PLUGIN_PATH");
    if (env && *env) {
        char *copy = strdup(env), *save = NULL;
        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
            snprintf(path, sizeof path, "%s/arb-%s.so", d, name);
            if (try_open(path, out, err, err_len, &found) == 0) {
                free(copy);
                return ARB_OK;
            }
            snprintf(path, sizeof path, "%s/%s/arb-%s.so", d, name, name);
            if (try_open(path, out, err, err_len, &found) == 0) {
                free(copy);
                return ARB_OK;
            }
        }
        free(copy);
    }
    /* Build tree: collectives/<name>/ first, then any collectives/<dir>/ (a folder may
     * build several related modules). */
    snprintf(path, sizeof path, "%s/%s/arb-%s.so", ARB_BUILD_PLUGIN_DIR, name, name);
    if (try_open(path, out, err, err_len, &found) == 0)
        return ARB_OK;
    DIR *d = opendir(ARB_BUILD_PLUGIN_DIR);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.' || strcmp(e->d_name, name) == 0)
                continue;
            snprintf(path, sizeof path, "%s/%s/arb-%s.so", ARB_BUILD_PLUGIN_DIR, e->d_name, name);
            if (access(path, F_OK) != 0)
                continue;
            if (try_open(path, out, err, err_len, &found) == 0) {
                closedir(d);
                return ARB_OK;
            }
        }
        closedir(d);
    }
    snprintf(path, sizeof path, "%s/arb-%s.so", ARB_INSTALL_PLUGIN_DIR, name);
    if (try_open(path, out, err, err_len, &found) == 0)
        return ARB_OK;
    return ARB_ERR_INVALID;
}

void arb_plugin_unload(arb_loaded_plugin_t *p)
{
    if (p->handle)
        dlclose(p->handle);
    memset(p, 0, sizeof *p);
}
