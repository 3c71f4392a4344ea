/* SPDX-License-Identifier: MIT */
/* Finds and opens collective plugins (arb-<name>.so) and validates their ABI. */
#ifndef ARB_LOADER_H
#define ARB_LOADER_H

#include <stddef.h>

#include "arbench/plugin.h"

typedef struct arb_loaded_plugin {
    void *handle;
    const arb_plugin_t *plugin;
    char path[4096];
} arb_loaded_plugin_t;

/* `name_or_path`: a bare name ("nccl") is looked up as arb-<name>.so in, in order,
 * each directory of $ARBENCH_PLUGIN_PATH (and its <name>/ subdirectory), the build
 * tree's collectives/<name>/ and every collectives/<dir>/, and the install tree's lib/arbench/.
 * Anything containing '/' is taken as a path. On failure returns ARB_ERR_INVALID and writes into
 * err every path tried and why it failed. Never retries a failed load. */
arb_status_t arb_plugin_load(const char *name_or_path, arb_loaded_plugin_t *out, char *err, size_t err_len);
void arb_plugin_unload(arb_loaded_plugin_t *p);

/* Validates a plugin struct (ABI version, name, mandatory callbacks). */
arb_status_t arb_plugin_validate(const arb_plugin_t *p, const char *where, char *err, size_t err_len);

/* The implementations the collectives/ folders define (generated at configure time by
 * src/runtime/known_plugins.sh), in folder order; a default sweep runs them by role (floors,
 * then the baseline, then candidates: role.h). */
extern const char *const arb_known_plugins[];
/* The subset a plain `arbench sweep` runs (a plugin that needs parameters is left out). */
extern const char *const arb_default_plugins[];

#endif
