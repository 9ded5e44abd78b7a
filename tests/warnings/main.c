/* The implementation's translation unit, as an engine adds it: nothing but
   PROF_IMPLEMENTATION and the include, built with the engine's flags. */
#define PROF_IMPLEMENTATION
#include "prof.h"

int every_macro(int steps);

int main(void) { return every_macro(3); }
