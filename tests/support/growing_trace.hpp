// A trace file written the way a recorder writes it: the header first
// (marked unfinished), then chunks as they fill, then the finished header.
// For tests of what follows a file while it grows (the follower, the
// incremental model).
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "../../tracer/src/format.hpp"

namespace test {

using Bytes = std::vector<std::uint8_t>;

// The header as the writer first writes it: the same, but not yet complete.
inline Bytes unfinishedHeader(const Bytes& file) {
    namespace f = fiberscope::trace::format;
    std::uint32_t header_size;
    std::memcpy(&header_size, file.data() + 12, 4);
    Bytes header(file.begin(), file.begin() + 16 + header_size);
    f::HeaderFixed fixed;
    std::memcpy(&fixed, header.data() + f::kHeaderFixedOffset, sizeof fixed);
    fixed.flags &= ~static_cast<std::uint32_t>(f::kFlagComplete);
    fixed.end_ticks = 0;
    std::memcpy(header.data() + f::kHeaderFixedOffset, &fixed, sizeof fixed);
    std::uint32_t version;
    std::memcpy(&version, header.data() + 8, 4);
    if (version >= 2) {
        const std::uint32_t crc = f::headerCrc(header.data(), header.size());
        std::memcpy(header.data() + f::kHeaderCrcOffset, &crc, 4);
    }
    return header;
}

// Writes a file in steps, as a recorder would.
class GrowingFile {
public:
    explicit GrowingFile(std::string path) : path_(std::move(path)) { unlink(path_.c_str()); }
    ~GrowingFile() {
        if (fd_ >= 0) close(fd_);
        unlink(path_.c_str());
    }
    void append(const std::uint8_t* data, std::size_t size) {
        if (fd_ < 0) fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        REQUIRE(fd_ >= 0);
        REQUIRE(::write(fd_, data, size) == static_cast<ssize_t>(size));
    }
    void rewrite(const Bytes& bytes, std::size_t at) {
        REQUIRE(::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(at)) == static_cast<ssize_t>(bytes.size()));
    }
    void truncate(std::size_t size) { REQUIRE(::ftruncate(fd_, static_cast<off_t>(size)) == 0); }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    int fd_ = -1;
};

// Writes `file` (a finished trace) to `out` the way a recorder does, cut at
// `cuts` (byte offsets, sorted): first its header marked unfinished, then
// the rest piece by piece, then the finished header. Calls
// after_write(written, finished) after every write.
template <class AfterWrite>
void writeInPieces(GrowingFile& out, const Bytes& file, std::vector<std::size_t> cuts, AfterWrite&& after_write) {
    const Bytes header = unfinishedHeader(file);
    std::size_t written = 0;
    cuts.push_back(file.size());
    for (std::size_t cut : cuts) {
        if (cut <= written) continue;
        Bytes piece(file.begin() + static_cast<std::ptrdiff_t>(written), file.begin() + static_cast<std::ptrdiff_t>(cut));
        // The header bytes go out as the unfinished header.
        for (std::size_t k = written; k < cut && k < header.size(); ++k) piece[k - written] = header[k];
        out.append(piece.data(), piece.size());
        written = cut;
        after_write(written, false);
    }
    out.rewrite(Bytes(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(header.size())), 0);
    after_write(written, true);
}

} // namespace test
