/* fake_tool: an NVTX tool, as Nsight Systems is one, for the suite. NVTX3
   loads it from NVTX_INJECTION64_PATH at a program's first NVTX call; it
   takes the domain calls prof.h makes (ranges named by registered strings or
   text) and, when the program exits, writes to $FAKE_NVTX_LOG each domain
   created and how many strings were registered, then what range_log.h
   counts, each range named "<domain>:<name>". */
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

/* Registered strings, as a tool keeps them: a handle is the index + 1. */
static char strings[256][32];
static int nstrings;
static int registered_pushes;           /* ranges named by a registered string */

static nvtxStringHandle_t register_string(nvtxDomainHandle_t d, const char *s) {
    (void)d;
    pthread_mutex_lock(&range_lock);
    int i = nstrings < 256 ? nstrings++ : 255;
    snprintf(strings[i], sizeof strings[i], "%s", s);
    pthread_mutex_unlock(&range_lock);
    return (nvtxStringHandle_t)(uintptr_t)(i + 1);
}

static int push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    char key[64];
    const char *name = "(no name)";
    if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) {
        name = a->message.ascii;
    } else if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
        pthread_mutex_lock(&range_lock);
        name = strings[(uintptr_t)a->message.registered - 1];
        registered_pushes++;
        pthread_mutex_unlock(&range_lock);
    }
    snprintf(key, sizeof key, "%s:%s", d ? domain_name[(uintptr_t)d - 1] : "(default)", name);
    return range_push(key);
}

static int pop(nvtxDomainHandle_t d) {
    (void)d;
    return range_pop();
}

static void domains(FILE *f) {
    for (int i = 0; i < ndomains; i++) fprintf(f, "domain %s\n", domain_name[i]);
    fprintf(f, "registered strings %d, ranges named by one %d\n", nstrings, registered_pushes);
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
    *table[NVTX_CBID_CORE2_DomainRegisterStringA] = (NvtxFunctionPointer)register_string;
    return 1;
}
