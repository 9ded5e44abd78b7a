/* fake_tool: an NVTX tool, as Nsight Systems is one, for the suite. NVTX3
   loads it from NVTX_INJECTION64_PATH at a program's first NVTX call; it
   takes the domain calls prof.h makes and, when the program exits, writes
   to $FAKE_NVTX_LOG what it saw: each domain created, then per range name
   (domain, name, pushes), the pops, and the deepest nesting per thread. */
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NAMES = 256 };
static struct { char name[64]; long pushes; } seen[NAMES];
static int nseen, ndomains;
static char domain_name[8][32];
static long pops, unmatched;
static int deepest;
static __thread int depth;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static nvtxDomainHandle_t create(const char *name) {
    pthread_mutex_lock(&lock);
    int i = ndomains < 8 ? ndomains++ : 7;
    snprintf(domain_name[i], sizeof domain_name[i], "%s", name);
    pthread_mutex_unlock(&lock);
    return (nvtxDomainHandle_t)(uintptr_t)(i + 1);
}

static int push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    char key[64];
    pthread_mutex_lock(&lock);
    snprintf(key, sizeof key, "%s:%s", d ? domain_name[(uintptr_t)d - 1] : "(default)",
             a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "(not ascii)");
    int i = 0;
    while (i < nseen && strcmp(seen[i].name, key)) i++;
    if (i == nseen && nseen < NAMES) snprintf(seen[nseen++].name, sizeof seen[0].name, "%s", key);
    if (i < nseen) seen[i].pushes++;
    if (++depth > deepest) deepest = depth;
    pthread_mutex_unlock(&lock);
    return depth - 1;
}

static int pop(nvtxDomainHandle_t d) {
    (void)d;
    pthread_mutex_lock(&lock);
    pops++;
    if (depth == 0) unmatched++;
    else depth--;
    pthread_mutex_unlock(&lock);
    return depth;
}

__attribute__((destructor)) static void report(void) {
    const char *path = getenv("FAKE_NVTX_LOG");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f) return;
    for (int i = 0; i < ndomains; i++) fprintf(f, "domain %s\n", domain_name[i]);
    for (int i = 0; i < nseen; i++) fprintf(f, "range %s %ld\n", seen[i].name, seen[i].pushes);
    fprintf(f, "pops %ld unmatched %ld deepest %d\n", pops, unmatched, deepest);
    fclose(f);
}

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || size <= NVTX_CBID_CORE2_DomainCreateA)
        return 0;
    *table[NVTX_CBID_CORE2_DomainCreateA] = (NvtxFunctionPointer)create;
    *table[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)push;
    *table[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)pop;
    return 1;
}
