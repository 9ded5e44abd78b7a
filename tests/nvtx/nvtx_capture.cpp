// nvtx_capture.c built as C++: prof.h's note and table in a C++ unit.
#include "nvtx_capture.c"
