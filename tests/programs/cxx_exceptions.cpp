// Exceptions thrown through grouped allocations (tests/test_real_programs.py).
//
// Every allocation here can land in a corral pool: containers built in the
// frames an exception unwinds through, exception objects themselves
// (__cxa_allocate_exception), strings built by destructors *while* unwinding,
// exception_ptr copies that outlive their catch block, and objects handed to
// another thread to be freed there. The output is a deterministic digest, so
// any corruption or lost object shows up as a byte difference.
//
// Build: g++ -O2 -pthread -o cxx_exceptions cxx_exceptions.cpp

#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

// FNV-1a over everything the program produces: one number to print.
struct Digest {
    uint64_t h = 1469598103934665603ull;
    void add(const void *p, size_t n) {
        const unsigned char *b = static_cast<const unsigned char *>(p);
        for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    }
    void add(const std::string &s) { add(s.data(), s.size()); }
    void add(uint64_t v) { add(&v, sizeof v); }
};

Digest digest;
long destructor_strings = 0;

// Deterministic pseudo-random numbers (no libc state, same on every run).
uint64_t rng_state = 88172645463325252ull;
uint64_t next_random() {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

// An error carrying heap data of its own: a message and a vector of frames.
struct DeepError : std::runtime_error {
    std::vector<std::string> trail;
    explicit DeepError(const std::string &what) : std::runtime_error(what) {}
};

// Its destructor allocates: runs during unwinding, so the allocator is
// entered while the personality routine is between frames.
struct Sentinel {
    std::string label;
    std::vector<int> payload;
    explicit Sentinel(int depth) : label("sentinel-" + std::to_string(depth)), payload(depth + 3, depth) {}
    ~Sentinel() {
        std::string note = label + "/unwound/" + std::to_string(payload.size());
        digest.add(note);
        destructor_strings++;
    }
};

__attribute__((noinline)) std::map<std::string, std::vector<int>> build_index(int n) {
    std::map<std::string, std::vector<int>> index;
    for (int i = 0; i < n; i++) {
        std::string key = "key" + std::to_string(next_random() % 97);
        index[key].push_back(i);
    }
    return index;
}

__attribute__((noinline)) void descend(int depth, int throw_at, std::vector<std::string> &seen) {
    Sentinel guard(depth);
    auto index = build_index(8 + depth);
    seen.push_back("depth" + std::to_string(depth) + ":" + std::to_string(index.size()));
    if (depth == throw_at) {
        DeepError err("thrown at depth " + std::to_string(depth));
        for (auto &kv : index) err.trail.push_back(kv.first);
        throw err;
    }
    try {
        descend(depth + 1, throw_at, seen);
    } catch (DeepError &e) {
        // Annotate and rethrow every third frame: the same exception object
        // is carried up while more heap data hangs off it.
        e.trail.push_back("passed " + std::to_string(depth));
        if (depth % 3 == 0) throw;
        throw std::runtime_error(std::string("wrapped: ") + e.what() + " trail " + std::to_string(e.trail.size()));
    }
}

__attribute__((noinline)) std::exception_ptr capture(int round) {
    std::vector<std::string> seen;
    try {
        descend(0, 3 + round % 9, seen);
    } catch (...) {
        for (auto &s : seen) digest.add(s);
        return std::current_exception();     // outlives this frame and its catch
    }
    return nullptr;
}

__attribute__((noinline)) std::string describe(const std::exception_ptr &p) {
    try {
        std::rethrow_exception(p);
    } catch (const DeepError &e) {
        std::string out = std::string("deep:") + e.what();
        for (auto &t : e.trail) out += "," + t;
        return out;
    } catch (const std::exception &e) {
        return std::string("std:") + e.what();
    }
}

// Nested exceptions: std::throw_with_nested allocates a new object holding
// an exception_ptr to the one in flight.
__attribute__((noinline)) void layered(int n) {
    try {
        if (n == 0) throw std::out_of_range("bottom of layered");
        layered(n - 1);
    } catch (...) {
        std::throw_with_nested(std::logic_error("layer " + std::to_string(n)));
    }
}

std::string unwrap(const std::exception &e, int level = 0) {
    std::string out = std::to_string(level) + "=" + e.what() + ";";
    try {
        std::rethrow_if_nested(e);
    } catch (const std::exception &inner) {
        out += unwrap(inner, level + 1);
    }
    return out;
}

// Objects allocated here and freed by another thread, some of them while
// that thread unwinds.
__attribute__((noinline)) void cross_thread(int rounds, Digest &out) {
    std::vector<std::unique_ptr<std::string>> made;
    for (int i = 0; i < rounds; i++)
        made.emplace_back(new std::string(std::to_string(i * 7919) + "-cross-thread-object"));
    std::thread worker([&made, &out] {
        for (size_t i = 0; i < made.size(); i++) {
            try {
                auto owned = std::move(made[i]);
                if (i % 4 == 0) throw std::runtime_error(*owned);
                out.add(*owned);
            } catch (const std::exception &e) {
                out.add(std::string(e.what()) + "!");
            }
        }
    });
    worker.join();
}

}  // namespace

int main() {
    std::vector<std::exception_ptr> kept;
    for (int round = 0; round < 300; round++) {
        kept.push_back(capture(round));
        if (kept.size() > 17) kept.erase(kept.begin(), kept.begin() + 5);
        if (round % 10 == 0) {
            for (auto &p : kept) digest.add(describe(p));
        }
    }
    long layered_chars = 0;
    for (int n = 1; n <= 40; n++) {
        try {
            layered(n % 8);
        } catch (const std::exception &e) {
            std::string s = unwrap(e);
            layered_chars += (long)s.size();
            digest.add(s);
        }
    }
    Digest threads;
    cross_thread(2000, threads);

    std::printf("kept exceptions: %zu\n", kept.size());
    std::printf("last: %s\n", describe(kept.back()).substr(0, 120).c_str());
    std::printf("destructor strings: %ld\n", destructor_strings);
    std::printf("layered chars: %ld\n", layered_chars);
    std::printf("digest: %016llx\n", (unsigned long long)digest.h);
    std::printf("thread digest: %016llx\n", (unsigned long long)threads.h);
    return 0;
}
