/* report_page.c - the page of prof report, built into the program: its
   template, style and script are real files beside this one (report.html,
   report.css, report.js), read and reviewed as what they are, and the
   assembler's .incbin copies each into the program as a string ending in a
   zero byte. No generator: the by-hand build line of main.c still builds
   the tool, from the repository root, where the paths below start (CMake
   defines PROF_REPORT_DIR as their absolute folder, and makes this file
   depend on them). GCC and Clang on ELF (Linux) take it; the Mach-O
   spelling below is untested. */
#ifndef PROF_REPORT_DIR
#define PROF_REPORT_DIR "tools/prof/"
#endif

#ifdef __APPLE__
#define PAGE_SECTION "__TEXT,__const"
#define PAGE_SYM(s) "_" s
#else
#define PAGE_SECTION ".rodata"
#define PAGE_SYM(s) s
#endif

#define PAGE_FILE(sym, file)                                                       \
    __asm__(".pushsection " PAGE_SECTION "\n"                                      \
            ".globl " PAGE_SYM(#sym) "\n"                                           \
            PAGE_SYM(#sym) ":\n"                                                    \
            ".incbin \"" PROF_REPORT_DIR file "\"\n"                               \
            ".byte 0\n"                                                            \
            ".popsection\n");                                                      \
    extern const char sym[]

PAGE_FILE(report_html, "report.html");
PAGE_FILE(report_css, "report.css");
PAGE_FILE(report_js, "report.js");
