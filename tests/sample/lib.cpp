/* The library tests/sample/native.cpp opens, samples and closes: its hot
   function a C++ one, named from this file's ELF symbols offline once the
   library is gone. */
#include <time.h>

namespace samplelib {
struct Worker {
    __attribute__((noinline)) static long crunch(long n);
};
static volatile long seed;              /* read: a call the compiler cannot hoist out of the loop */
long Worker::crunch(long n) {         /* (unsigned: no overflow) */
    unsigned long x = (unsigned long)(n + seed);
    for (long i = 0; i < n; i++) x = x * 13 + (unsigned long)i + 7;
    return (long)(x & 0xffff);
}
}  // namespace samplelib

/* ms of the calling thread's CPU time in Worker::crunch */
extern "C" __attribute__((visibility("default"))) long sample_lib_spin(long ms) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    long end = (long)ts.tv_sec * 1000000000L + ts.tv_nsec + ms * 1000000L, x = 0;
    for (;;) {
        x += samplelib::Worker::crunch(1000000);   /* about a ms: the clock's system call, never sampled, a small part */
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        if ((long)ts.tv_sec * 1000000000L + ts.tv_nsec >= end) return x;
    }
}
