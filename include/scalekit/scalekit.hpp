// SPDX-License-Identifier: MIT
//
// scalekit/scalekit.hpp - the whole C++ layer (docs/cpp.md): the C
// headers through scalekit/scalekit.h, and every C++ header.  C++17 and
// later, header-only; a program links libscalekit as a C program does.
#ifndef SCALEKIT_SCALEKIT_HPP
#define SCALEKIT_SCALEKIT_HPP

#if __cplusplus < 201703L
#error "scalekit/scalekit.hpp needs C++17 or later"
#endif

#include "scalekit/scalekit.h"

#include "scalekit/cxx_misuse.hpp"
#include "scalekit/intrusive.hpp"
#include "scalekit/list.hpp"
#include "scalekit/locks.hpp"
#include "scalekit/rcu.hpp"
#include "scalekit/rhash.hpp"
#include "scalekit/srcu.hpp"

#endif // SCALEKIT_SCALEKIT_HPP
