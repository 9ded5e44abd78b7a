/* fake_roctx: roctx's two range calls, as libroctx64 exports them, for the
   suite (Debian ships no roctracer). It counts what -DPROF_ROCTX pushes and
   writes it to $FAKE_ROCTX_LOG at exit (range_log.h). */
#include "range_log.h"

int roctxRangePushA(const char *message);
int roctxRangePop(void);

int roctxRangePushA(const char *message) { return range_push(message); }
int roctxRangePop(void) { return range_pop(); }

__attribute__((destructor)) static void report(void) { range_report("FAKE_ROCTX_LOG", NULL); }
