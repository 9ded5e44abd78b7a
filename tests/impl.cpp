/* tests/impl.c compiled as C++17. */
#include "impl.c"
