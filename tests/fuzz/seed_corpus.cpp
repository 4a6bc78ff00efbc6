// Writes each hostile pattern (hostile_traces.hpp) at a few sizes into DIR,
// as seeds for the fuzzer: scripts/test.sh puts them beside the lessons'
// recorded traces and the regression corpus.
#include <cstdio>
#include <fstream>
#include <string>

#include "hostile_traces.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: fuzz_seed_corpus DIR\n");
        return 2;
    }
    int index = 0;
    for (const auto& pattern : fiberscope::testing::hostilePatterns())
        for (std::size_t n : {1u, 8u, 64u}) {
            const auto bytes = pattern.make(n);
            const std::string path = std::string(argv[1]) + "/hostile-" + std::to_string(index++) + ".fstrace";
            std::ofstream out(path, std::ios::binary);
            out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
            if (!out) {
                std::fprintf(stderr, "fuzz_seed_corpus: cannot write %s\n", path.c_str());
                return 1;
            }
        }
    return 0;
}
