// The same from C++: the implementation compiled as C++.
#define PROF_IMPLEMENTATION
#include "prof.h"

#include <cstddef>
#include <vector>

static double work(const std::vector<double> &v) {
    PROF_FUNCTION();
    double s = 0;
    for (double x : v) s += x;
    return s;
}

int main() {
    PROF_INIT(nullptr);
    std::vector<double> v(1000, 0.5);
    double s = 0;
    for (int step = 0; step < 3; step++) {
        {
            PROF_SCOPE("step");
            s += work(v);
        }
        PROF_STEP();
    }
    PROF_COUNTER("sum", s);
    PROF_SHUTDOWN();
    return s > 0 ? 0 : 1;
}
