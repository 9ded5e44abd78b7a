// The C++ side of annotated.c: an inference/training engine with classes,
// templates, lambdas, exceptions and a worker thread, annotated with every
// macro of prof.h. check.sh compares its object code without PROF_ENABLE
// with that of the same file with the annotations removed (strip.py).
#define PROF_IMPLEMENTATION
#include "prof.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef PROF_ENABLE
static prof_config make_prof_config() {
    prof_config c{};
    c.output = "engine_{rank}.json";
    c.schedule.wait = 2;
    c.schedule.active = 4;
    return c;
}
static const prof_config kProfConfig = make_prof_config();
#define ENGINE_PROF_CONFIG (&kProfConfig)
#else
#define ENGINE_PROF_CONFIG nullptr
#endif

namespace engine {

enum class Op { Embed, Attention, Mlp, Norm };

static const char *const kOpNames[] = {"embed", "attention", "mlp", "norm"};
static int g_verbose = 1;                      // .data
static float g_workspace[2048];                // .bss
static thread_local unsigned t_seed = 1;       // .tbss

static float frand() {
    t_seed = t_seed * 1103515245u + 12345u;
    return static_cast<float>((t_seed >> 9) & 0xffff) / 65535.0f - 0.5f;
}

class Buffer {
public:
    explicit Buffer(std::size_t n) : data_(static_cast<float *>(std::malloc(n * sizeof(float)))), n_(n) {
        if (!data_) throw std::bad_alloc();
        PROF_ALLOC(data_, n * sizeof(float));
        for (std::size_t i = 0; i < n; i++) data_[i] = frand();
    }
    ~Buffer() {
        PROF_FREE(data_);
        std::free(data_);
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    float *data() { return data_; }
    const float *data() const { return data_; }
    std::size_t size() const { return n_; }

private:
    float *data_;
    std::size_t n_;
};

template <typename T, typename F>
static T reduce(const T *x, std::size_t n, T init, F f) {
    PROF_SCOPE("reduce");
    PROF_ARG_INT("n", static_cast<long long>(n));
    for (std::size_t i = 0; i < n; i++) init = f(init, x[i]);
    return init;
}

class Layer {
public:
    Layer(Op op, std::string name, int width)
        : op_(op), name_(std::move(name)), width_(width),
          weight_(static_cast<std::size_t>(width) * static_cast<std::size_t>(width)) {}

    const char *op_name() const { return kOpNames[static_cast<int>(op_)]; }

    int forward(float *x, int tokens) const {
        PROF_SCOPE(op_name());
        PROF_SCOPE_DYN(name_.c_str());          // the layer's own name, made at run time
        PROF_ARG_STR("layer", name_.c_str());
        PROF_ARG_INT("tokens", tokens);
        if (tokens <= 0) return -1;
        switch (op_) {
        case Op::Embed:
            for (int t = 0; t < tokens; t++) x[t * width_] += 1.0f;
            break;
        case Op::Attention: {
            PROF_SCOPE("qk_softmax_v");
            PROF_FLOPS(4LL * tokens * tokens * width_);
            for (int t = 0; t < tokens; t++) {
                float m = reduce(x + t * width_, static_cast<std::size_t>(width_), -1e30f,
                                 [](float a, float b) { return std::max(a, b); });
                for (int j = 0; j < width_; j++) x[t * width_ + j] = std::exp(x[t * width_ + j] - m);
            }
            break;
        }
        case Op::Mlp:
            gemm(x, tokens);
            break;
        case Op::Norm: {
            PROF_BEGIN("layernorm");
            for (int t = 0; t < tokens; t++) {
                const float *row = x + t * width_;
                float ss = reduce(row, static_cast<std::size_t>(width_), 0.0f,
                                  [](float a, float b) { return a + b * b; });
                if (ss == 0.0f) {
                    PROF_INSTANT("zero_norm");
                    PROF_END();
                    return 1;
                }
                float inv = 1.0f / std::sqrt(ss / static_cast<float>(width_));
                for (int j = 0; j < width_; j++) x[t * width_ + j] *= inv;
            }
            PROF_END();
            break;
        }
        }
        return 0;
    }

private:
    void gemm(float *x, int tokens) const {
        PROF_FUNCTION();
        PROF_FLOPS(2LL * tokens * width_ * width_);
        PROF_BYTES(static_cast<long long>(sizeof(float)) * width_ * width_);
        assert(static_cast<std::size_t>(tokens * width_) <= sizeof g_workspace / sizeof g_workspace[0]);
        const float *w = weight_.data();
        for (int t = 0; t < tokens; t++)
            for (int j = 0; j < width_; j++) {
                float s = 0.0f;
                for (int k = 0; k < width_; k++) s += x[t * width_ + k] * w[k * width_ + j];
                g_workspace[t * width_ + j] = s;
            }
        std::copy(g_workspace, g_workspace + tokens * width_, x);
    }

    Op op_;
    std::string name_;
    int width_;
    Buffer weight_;
};

class Engine {
public:
    explicit Engine(int width) : width_(width) {
        PROF_SCOPE("Engine::build");
        layers_.emplace_back(new Layer(Op::Embed, "embed", width));
        for (int i = 0; i < 2; i++) {
            layers_.emplace_back(new Layer(Op::Norm, "ln" + std::to_string(i), width));
            layers_.emplace_back(new Layer(Op::Attention, "attn" + std::to_string(i), width));
            layers_.emplace_back(new Layer(Op::Mlp, "mlp" + std::to_string(i), width));
        }
    }

    float step(std::vector<float> &x, int tokens) {
        PROF_FUNCTION();
        PROF_ARG_INT("layers", static_cast<long long>(layers_.size()));
        for (const auto &l : layers_) {
            if (l->forward(x.data(), tokens) != 0) {
                PROF_INSTANT("layer_failed");
                throw std::runtime_error(std::string("layer failed: ") + l->op_name());
            }
        }
        float loss = reduce(x.data(), x.size(), 0.0f, [](float a, float b) { return a + std::fabs(b); });
        PROF_COUNTER("activation_l1", loss);
        return loss / static_cast<float>(x.size());
    }

    int width() const { return width_; }

private:
    int width_;
    std::vector<std::unique_ptr<Layer>> layers_;
};

}  // namespace engine

int main(int argc, char **argv) {
    const int steps = argc > 1 ? std::atoi(argv[1]) : 10;
    const int rank = argc > 2 ? std::atoi(argv[2]) : 0;
    const int world = argc > 3 ? std::atoi(argv[3]) : 1;
    if (world < 1 || rank < 0 || rank >= world) return 1;
    PROF_INIT(ENGINE_PROF_CONFIG);
    PROF_SET_RANK(rank, world);
    PROF_THREAD_NAME("engine");

    std::vector<float> batch(8 * 32);
    std::thread prefetch([&batch] {
        PROF_THREAD_NAME("prefetch");
        PROF_SCOPE("fill_batch");
        engine::t_seed = 7;
        std::generate(batch.begin(), batch.end(), engine::frand);
    });
    prefetch.join();
    PROF_SYNC();

    try {
        engine::Engine eng(32);
        for (int s = 0; s < steps; s++) {
            float loss;
            {
                PROF_SCOPE("train_step");
                loss = eng.step(batch, 8);
            }
            PROF_COUNTER("loss", loss);
            PROF_COUNTER("batch_floats", batch.size());
            if (rank == 0 && engine::g_verbose && s % 5 == 0) std::printf("step %d loss %g\n", s, loss);
            PROF_STEP();
        }
    } catch (const std::exception &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        PROF_SHUTDOWN();
        return 2;
    }
    PROF_SHUTDOWN();
    return 0;
}
