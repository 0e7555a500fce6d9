/* The one error path the oneDNN baseline programs share (conv_onednn.c,
 * matmul_onednn.c): a oneDNN call that fails names itself and its status and
 * exits 3, so the bench scripts see a failed baseline rather than a time. */
#ifndef PERFC_BENCH_ONEDNN_CHECK_H
#define PERFC_BENCH_ONEDNN_CHECK_H

#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(x)                                                                 \
    do {                                                                         \
        dnnl_status_t s_ = (x);                                                  \
        if (s_ != dnnl_success) {                                                \
            fprintf(stderr, "oneDNN: %s failed (status %d)\n", #x, (int)s_);     \
            exit(3);                                                             \
        }                                                                        \
    } while (0)

#endif
