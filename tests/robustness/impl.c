/* prof.h's implementation for the robustness programs, compiled once and
   linked into each (an engine's own .c file that defines PROF_IMPLEMENTATION). */
#define PROF_IMPLEMENTATION
#include "prof.h"
