// SPDX-License-Identifier: GPL-2.0-or-later
// Command-line helpers shared by ringrun and ringrun-train: the project's one bounded number
// parser (plugins/common/bounded_int.h), so that an option or a variable is never half-read.
#pragma once

#include "bounded_int.h"

namespace ringrun {

using ringsched::parse_int;
using ringsched::parse_long;

}  // namespace ringrun
