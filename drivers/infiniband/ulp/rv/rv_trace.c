// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Instantiates the tracepoints declared in rv_trace.h and rv_conn_trace.h. */
#include "rv.h"

#define CREATE_TRACE_POINTS
#include "rv_trace.h"
#include "rv_conn_trace.h"
