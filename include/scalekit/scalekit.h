/* SPDX-License-Identifier: MIT */
/*
 * scalekit/scalekit.h - every public module of scalekit in one include.
 * The kernel spellings (scalekit/kernel.h) are opt-in and not included.
 */
#ifndef SCALEKIT_SCALEKIT_H
#define SCALEKIT_SCALEKIT_H

#include "scalekit/barrier.h"
#include "scalekit/rcu.h"
#include "scalekit/srcu.h"
#include "scalekit/list.h"
#include "scalekit/rhash.h"
#include "scalekit/elide.h"
#include "scalekit/rwlock_rb.h"
#include "scalekit/seqlock.h"

#endif /* SCALEKIT_SCALEKIT_H */
