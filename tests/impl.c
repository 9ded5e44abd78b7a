/* prof.h's implementation for the test programs and examples that use only
   its API: an engine's own .c file that defines PROF_IMPLEMENTATION,
   compiled once per flavour (tests/CMakeLists.txt: prof_test_impl) and
   linked into each, instead of once per program. Built as C++ by impl.cpp;
   a GPU binding's part is tests/impl_gpu.c. */
#define PROF_IMPLEMENTATION
#include "prof.h"
