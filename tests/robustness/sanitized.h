/* Which sanitizer a case runs under: some promises are checked only where
   they mean something (RSS under ASan's quarantine) or sized down where a
   sanitizer makes them slow (fork under TSan: about a second each). */
#ifndef ROBUST_SANITIZED_H
#define ROBUST_SANITIZED_H

#if defined(__SANITIZE_THREAD__)
#define SANITIZED_THREAD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SANITIZED_THREAD 1
#endif
#endif
#ifndef SANITIZED_THREAD
#define SANITIZED_THREAD 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED_ADDRESS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED_ADDRESS 1
#endif
#endif
#ifndef SANITIZED_ADDRESS
#define SANITIZED_ADDRESS 0
#endif

#define SANITIZED (SANITIZED_THREAD || SANITIZED_ADDRESS)

#endif
