/* prof.h's implementation for the test programs and examples: an engine's
   own .c file that defines PROF_IMPLEMENTATION, compiled once per flavour
   (tests/CMakeLists.txt: prof_test_impl) and linked into each, instead of
   once per program. The flavours define PROF_INTERNALS too, so that the
   tests that read the implementation from inside (test_table.c,
   test_writers.c ...) link one as the others do. Built as C++ by impl.cpp;
   a GPU binding's part is tests/impl_gpu.c. */
#define PROF_IMPLEMENTATION
#include "prof.h"
