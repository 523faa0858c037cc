// Linux interfaces that Swift's Glibc module does not export: epoll, eventfd, malloc_trim, the
// CPU affinity mask, a socket's incoming CPU.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <malloc.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <errno.h>
#include <sys/socket.h>
#include <sys/inotify.h>

// Names the calling thread (shown by `top -H`, `ps -L`; at most 15 bytes are kept).
// `pthread_setname_np` needs _GNU_SOURCE, which the Glibc module is not built with.
static inline int gatehouse_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

// The CPUs the calling thread may run on (its affinity mask: `taskset`, a container's cpuset):
// writes their numbers to `cpus` (at most `capacity`, in increasing order; `cpus` may be NULL with
// `capacity` 0 to count them) and returns how many there are, -1 when the mask cannot be read.
// `sched_getaffinity` and CPU_COUNT need _GNU_SOURCE; the system call does not.
static inline int gatehouse_allowed_cpus(int *cpus, int capacity) {
    unsigned long mask[64];
    long bytes = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
    if (bytes <= 0) return -1;
    int count = 0;
    const int word = 8 * (int)sizeof(unsigned long);
    for (int cpu = 0; cpu < (int)bytes * 8; cpu++) {
        if ((mask[cpu / word] >> (cpu % word)) & 1UL) {
            if (count < capacity) cpus[count] = cpu;
            count++;
        }
    }
    return count;
}

// Keeps the calling thread on `cpu`: 0, or the errno of sched_setaffinity(2).
static inline int gatehouse_pin_thread(int cpu) {
    unsigned long mask[64] = {0};
    const int word = 8 * (int)sizeof(unsigned long);
    if (cpu < 0 || cpu >= (int)sizeof(mask) * 8) return 22; // EINVAL
    mask[cpu / word] = 1UL << (cpu % word);
    return syscall(SYS_sched_setaffinity, 0, sizeof(mask), mask) == 0 ? 0 : errno;
}

// The CPU that last processed `fd`'s incoming packets (SO_INCOMING_CPU, not exported by the Glibc
// module), -1 when unknown.
static inline int gatehouse_incoming_cpu(int fd) {
    int cpu = -1;
    socklen_t length = sizeof(cpu);
    if (getsockopt(fd, SOL_SOCKET, 49 /* SO_INCOMING_CPU */, &cpu, &length) != 0) return -1;
    return cpu;
}

// Atomics on memory shared between processes (a MAP_SHARED file mapping): Swift's `Atomic` lives
// only in a value's own storage. Lock-free 64-bit operations are address-free, so they order
// accesses across processes as across threads.
#include <stdint.h>
static inline uint64_t gatehouse_shared_load(const uint64_t *word) {
    return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}
static inline void gatehouse_shared_store(uint64_t *word, uint64_t value) {
    __atomic_store_n(word, value, __ATOMIC_RELEASE);
}
static inline uint64_t gatehouse_shared_fetch_add(uint64_t *word, uint64_t value) {
    return __atomic_fetch_add(word, value, __ATOMIC_ACQ_REL);
}
static inline void gatehouse_shared_fence(void) {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
