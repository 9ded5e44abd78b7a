/* The scenarios compiled as C++17: PROF_SCOPE is then a destructor. */
#include "scenarios.c"
