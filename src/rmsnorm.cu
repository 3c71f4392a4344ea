// SPDX-License-Identifier: MIT
// Placeholder: replaced by the rmsnorm module.
#include "rmsnorm.h"
