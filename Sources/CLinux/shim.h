// Linux interfaces that Swift's Glibc module does not export: epoll, eventfd, malloc_trim, the
// CPU affinity mask.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <malloc.h>
#include <sys/syscall.h>
#include <unistd.h>

// Names the calling thread (shown by `top -H`, `ps -L`; at most 15 bytes are kept).
// `pthread_setname_np` needs _GNU_SOURCE, which the Glibc module is not built with.
static inline int gatehouse_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

// The CPUs this process may run on (its affinity mask: `taskset`, a container's cpuset), 0 when
// it cannot be read. `sched_getaffinity` and CPU_COUNT need _GNU_SOURCE; the system call does not.
static inline int gatehouse_allowed_cpu_count(void) {
    unsigned long mask[64]; // 4,096 CPUs
    long bytes = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
    if (bytes <= 0) return 0;
    int count = 0;
    for (long i = 0; i < bytes / (long)sizeof(unsigned long); i++) count += __builtin_popcountl(mask[i]);
    return count;
}
