/* fake_tool: an NVTX tool, as Nsight Systems is one, for the suite. NVTX3
   loads it from NVTX_INJECTION64_PATH at a program's first NVTX call; it
   takes the domain calls prof.h makes and, when the program exits, writes
   to $FAKE_NVTX_LOG each domain created, then what range_log.h counts, each
   range named "<domain>:<name>". */
#include <nvtx3/nvToolsExt.h>

#include "range_log.h"

static char domain_name[8][32];
static int ndomains;

static nvtxDomainHandle_t create(const char *name) {
    pthread_mutex_lock(&range_lock);
    int i = ndomains < 8 ? ndomains++ : 7;
    snprintf(domain_name[i], sizeof domain_name[i], "%s", name);
    pthread_mutex_unlock(&range_lock);
    return (nvtxDomainHandle_t)(uintptr_t)(i + 1);
}

static int push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    char key[64];
    snprintf(key, sizeof key, "%s:%s", d ? domain_name[(uintptr_t)d - 1] : "(default)",
             a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : "(not ascii)");
    return range_push(key);
}

static int pop(nvtxDomainHandle_t d) {
    (void)d;
    return range_pop();
}

static void domains(FILE *f) {
    for (int i = 0; i < ndomains; i++) fprintf(f, "domain %s\n", domain_name[i]);
}

__attribute__((destructor)) static void report(void) { range_report("FAKE_NVTX_LOG", domains); }

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
