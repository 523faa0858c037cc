// Linux interfaces that Swift's Glibc module does not export: epoll, eventfd, malloc_trim.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <malloc.h>

// Names the calling thread (shown by `top -H`, `ps -L`; at most 15 bytes are kept).
// `pthread_setname_np` needs _GNU_SOURCE, which the Glibc module is not built with.
static inline int gatehouse_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}
