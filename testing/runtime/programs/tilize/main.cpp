// Tilize test host: main ROWS COLS IN.bin TILED.bin ROUNDTRIP.bin (float32 data)
#include <fstream>
#include <string>
#include <vector>

#include <tt-metalium/tilize_utils.hpp>

int main(int argc, char** argv) {
    if (argc != 6) return 2;
    const uint32_t rows = std::stoul(argv[1]), cols = std::stoul(argv[2]);
    std::vector<float> in(static_cast<size_t>(rows) * cols);
    std::ifstream(argv[3], std::ios::binary).read(reinterpret_cast<char*>(in.data()), in.size() * 4);
    const auto tiled = tilize_nfaces(in, rows, cols);
    std::ofstream(argv[4], std::ios::binary).write(reinterpret_cast<const char*>(tiled.data()), tiled.size() * 4);
    const auto back = untilize_nfaces(tiled, rows, cols);
    std::ofstream(argv[5], std::ios::binary).write(reinterpret_cast<const char*>(back.data()), back.size() * 4);
    return 0;
}
