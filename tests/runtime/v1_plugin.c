/* SPDX-License-Identifier: MIT */
/* A module built for plugin ABI version 1: it exports arb_plugin_v1 and not
 * arb_plugin_v2. The loader must refuse it and say that it is a version-1 module. */
#include <stdint.h>

typedef struct old_plugin {
    uint32_t abi_version;
    const char *name;
} old_plugin_t;

__attribute__((visibility("default"))) const old_plugin_t arb_plugin_v1 = {
    .abi_version = 1u,
    .name = "v1-module",
};
