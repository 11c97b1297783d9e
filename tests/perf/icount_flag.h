/* The flag the instruction-count programs (icount_pingpong.c, icount_ucx.c)
 * share between their two ranks: rank 1 stores how many pongs it has posted,
 * rank 0 waits (uncounted) until its pong is among them. An existing file of
 * at least 8 bytes, mapped shared. */
#pragma once
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static inline _Atomic uint64_t *icount_map_flag(const char *path) {
    int fd = open(path, O_RDWR);
    void *p = fd < 0 ? MAP_FAILED : mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror(path);
        exit(2);
    }
    close(fd);
    return (_Atomic uint64_t *)p;
}

/* Rank 0: returns once rank 1 has posted pong `i` (iterations count from 0). */
static inline void icount_wait_posted(_Atomic uint64_t *posted, long i) {
    while (atomic_load_explicit(posted, memory_order_acquire) < (uint64_t)i + 1) {
    }
}

/* Rank 1: pong `i` is posted. */
static inline void icount_set_posted(_Atomic uint64_t *posted, long i) {
    atomic_store_explicit(posted, (uint64_t)i + 1, memory_order_release);
}
