// CRC-32 (IEEE, reflected, polynomial 0xEDB88320), table driven.
#include <array>

#include "format.hpp"

namespace fiberscope::trace::format {

static constexpr std::array<std::uint32_t, 256> makeTable() {
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
    return table;
}
static constexpr auto kTable = makeTable();

static std::uint32_t update(std::uint32_t c, const std::uint8_t* bytes, std::size_t size) noexcept {
    for (std::size_t i = 0; i < size; ++i) c = kTable[(c ^ bytes[i]) & 0xFF] ^ (c >> 8);
    return c;
}

std::uint32_t crc32(const void* data, std::size_t size) noexcept {
    return update(0xFFFFFFFFu, static_cast<const std::uint8_t*>(data), size) ^ 0xFFFFFFFFu;
}

std::uint32_t headerCrc(const void* header, std::size_t size) noexcept {
    auto* bytes = static_cast<const std::uint8_t*>(header);
    if (size < kHeaderCrcOffset + 4) return crc32(bytes, size);
    static constexpr std::uint8_t kZero[4] = {};
    std::uint32_t c = update(0xFFFFFFFFu, bytes, kHeaderCrcOffset);
    c = update(c, kZero, 4);
    c = update(c, bytes + kHeaderCrcOffset + 4, size - kHeaderCrcOffset - 4);
    return c ^ 0xFFFFFFFFu;
}

} // namespace fiberscope::trace::format
