// File metadata, sizes, durability and directories (issue 12, section 3):
// stat, length, setLength, sync, syncData, deleteFile, rename, makeDir,
// deleteDir, openDir, readDir. Run on both backends (the suite runs once per
// FIBERSCOPE_BACKEND). Every test works in its own directory under /tmp,
// made here and removed at the end, pass or fail.
#include "test_support.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <fiberscope/trace.hpp>
#include <fiberscope/trace_reader.hpp>

#include "trace_tools.hpp"

using namespace fiberscope;
using namespace std::chrono_literals;

namespace {

// A fresh directory under /tmp, removed with everything in it when the test ends.
struct TempDir {
    std::string path;
    explicit TempDir(const char* name) {
        std::string pattern = "/tmp/fiberscope-dirs-" + std::to_string(getpid()) + "-" + name + "-XXXXXX";
        if (!mkdtemp(pattern.data())) FAIL("mkdtemp failed: " << std::strerror(errno));
        path = pattern;
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    std::string operator/(std::string_view name) const { return path + "/" + std::string(name); }
};

std::span<const std::byte> bytesOf(std::string_view text) { return std::as_bytes(std::span(text.data(), text.size())); }

// Every name readDir gives for `dir` (which it reads to the end), checking
// that no name repeats and that "." and ".." are not among them.
std::vector<std::string> listAll(EventLoop& loop, Dir dir, std::span<std::byte> buffer) {
    std::vector<std::string> names;
    DirIterator it(dir, buffer);
    for (;;) {
        auto entry = loop.readDir(it);
        REQUIRE(entry);
        if (!*entry) break;
        const DirEntry& e = **entry;
        REQUIRE(!e.name.empty());
        REQUIRE(e.name != ".");
        REQUIRE(e.name != "..");
        // NUL-terminated in the buffer, as the header promises.
        REQUIRE(e.name.data()[e.name.size()] == '\0');
        names.emplace_back(e.name);
    }
    // At the end it stays at the end.
    auto again = loop.readDir(it);
    REQUIRE(again);
    REQUIRE(!*again);
    return names;
}

} // namespace

TEST_CASE("stat: size, kind, mode, inode, links and times of a file and a path", "[dirs]") {
    auto loop = test::makeLoop(2);
    TempDir tmp("stat");
    const std::string path = tmp / "data";
    auto file = loop->createFile(path, {.read = true, .mode = 0640});
    REQUIRE(file);
    auto empty = loop->stat(*file);
    REQUIRE(empty);
    CHECK(empty->size == 0);
    CHECK(empty->kind == FileKind::regular);

    REQUIRE(*loop->pwrite(*file, bytesOf("hello, directory"), 0) == 16);
    REQUIRE(*loop->pwrite(*file, bytesOf("!"), 99) == 1);
    auto by_file = loop->stat(*file);
    REQUIRE(by_file);
    CHECK(by_file->size == 100);
    CHECK(by_file->kind == FileKind::regular);
    const mode_t mask = umask(0);
    umask(mask);
    CHECK(by_file->mode == (0640u & ~static_cast<unsigned>(mask)));
    CHECK(by_file->links == 1);
    struct stat native {};
    REQUIRE(::stat(path.c_str(), &native) == 0);
    CHECK(by_file->inode == native.st_ino);
    // Realtime nanoseconds: within a minute of now.
    const auto wall = std::chrono::system_clock::now().time_since_epoch();
    CHECK(std::chrono::abs(by_file->modified - wall) < 60s);
    CHECK(std::chrono::abs(by_file->changed - wall) < 60s);
    CHECK(by_file->accessed.count() > 0);
    CHECK(by_file->modified.count() == native.st_mtim.tv_sec * 1'000'000'000LL + native.st_mtim.tv_nsec);

    auto by_path = loop->stat(path);
    REQUIRE(by_path);
    CHECK(by_path->size == 100);
    CHECK(by_path->inode == by_file->inode);
    auto length = loop->length(*file);
    REQUIRE(length);
    CHECK(*length == 100);

    auto dir = loop->stat(tmp.path);
    REQUIRE(dir);
    CHECK(dir->kind == FileKind::directory);
    CHECK(dir->links >= 2);
    auto null = loop->stat("/dev/null");
    REQUIRE(null);
    CHECK(null->kind == FileKind::character_device);

    // A symlink is followed unless asked not to.
    REQUIRE(symlink("data", (tmp / "link").c_str()) == 0);
    auto followed = loop->stat(tmp / "link");
    REQUIRE(followed);
    CHECK(followed->kind == FileKind::regular);
    CHECK(followed->size == 100);
    auto link = loop->stat(tmp / "link", Dir::cwd(), {.follow_symlinks = false});
    REQUIRE(link);
    CHECK(link->kind == FileKind::symlink);
    CHECK(link->size == 4); // "data"

    REQUIRE(mkfifo((tmp / "fifo").c_str(), 0600) == 0);
    auto fifo = loop->stat(tmp / "fifo");
    REQUIRE(fifo);
    CHECK(fifo->kind == FileKind::fifo);

    // Relative to an open Dir.
    auto opened = loop->openDir(tmp.path);
    REQUIRE(opened);
    auto relative = loop->stat("data", *opened);
    REQUIRE(relative);
    CHECK(relative->inode == by_file->inode);
    REQUIRE(loop->close(*opened));

    REQUIRE(loop->close(*file));
    // A closed File: a named error, not a crash.
    CHECK(loop->stat(*file).error() == Errc::BadFileDescriptor);
    CHECK(loop->length(*file).error() == Errc::BadFileDescriptor);
    CHECK(loop->stat(File{}).error() == Errc::BadFileDescriptor);
}

TEST_CASE("setLength grows with zeros and shrinks; sync and syncData succeed", "[dirs]") {
    auto loop = test::makeLoop(2);
    TempDir tmp("length");
    auto file = loop->createFile(tmp / "f", {.read = true});
    REQUIRE(file);
    REQUIRE(*loop->pwrite(*file, bytesOf("abcdef"), 0) == 6);
    REQUIRE(loop->setLength(*file, 1 << 20));
    CHECK(*loop->length(*file) == 1u << 20);
    std::byte tail[16];
    REQUIRE(*loop->pread(*file, tail, (1 << 20) - 16) == 16);
    CHECK(std::all_of(std::begin(tail), std::end(tail), [](std::byte b) { return b == std::byte{0}; }));
    REQUIRE(loop->setLength(*file, 3));
    CHECK(*loop->length(*file) == 3);
    char back[8] = {};
    REQUIRE(*loop->pread(*file, std::as_writable_bytes(std::span(back)), 0) == 3);
    CHECK(std::string(back) == "abc");
    REQUIRE(loop->setLength(*file, 0));
    CHECK(*loop->length(*file) == 0);

    REQUIRE(*loop->pwrite(*file, bytesOf("durable"), 0) == 7);
    REQUIRE(loop->sync(*file));
    REQUIRE(loop->syncData(*file));
    // From fibers on other threads too.
    std::vector<Future<bool>> syncs;
    for (int i = 0; i < 8; ++i)
        syncs.push_back(loop->async([&, i] { return bool(i % 2 ? loop->sync(*file) : loop->syncData(*file)); }));
    for (auto& s : syncs) CHECK(s.await());

    CHECK(loop->setLength(*file, ~std::uint64_t{0}).error() == Errc::FileTooBig);
    REQUIRE(loop->close(*file));
    CHECK(loop->setLength(*file, 0).error() == Errc::BadFileDescriptor);
    CHECK(loop->sync(*file).error() == Errc::BadFileDescriptor);
    CHECK(loop->syncData(*file).error() == Errc::BadFileDescriptor);

    // Not open for writing: ftruncate says EINVAL.
    auto read_only = loop->openFile(tmp / "f");
    REQUIRE(read_only);
    CHECK(loop->setLength(*read_only, 10).error() == Errc::InvalidArgument);
    REQUIRE(loop->close(*read_only));
}

TEST_CASE("makeDir, openDir and readDir list exactly the files created, thousands of them", "[dirs]") {
    auto loop = test::makeLoop(4);
    TempDir tmp("list");
    const std::string root = tmp / "many";
    REQUIRE(loop->makeDir(root, 0700));
    auto made = loop->stat(root);
    REQUIRE(made);
    CHECK(made->kind == FileKind::directory);
    CHECK((made->mode & 0777) == 0700);

    auto dir = loop->openDir(root);
    REQUIRE(dir);
    {
        // An empty directory: no entries ("." and ".." are skipped).
        std::byte buffer[1024];
        CHECK(listAll(*loop, *dir, buffer).empty());
    }

    // Created from fibers on four threads, relative to the open Dir.
    const long count = std::max(test::scaled(3000), 500L);
    std::set<std::string> expected;
    for (long i = 0; i < count; ++i) expected.insert("entry-" + std::to_string(i) + (i % 7 ? "" : "-with-a-longer-name"));
    const std::vector<std::string> names(expected.begin(), expected.end());
    std::atomic<std::size_t> next{0}; // relaxed: only hands out distinct indices
    std::vector<Future<bool>> makers;
    for (int f = 0; f < 8; ++f)
        makers.push_back(loop->async([&] {
            for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < names.size();) {
                auto file = loop->createFile(names[i], {.exclusive = true}, *dir);
                if (!file || !loop->close(*file)) return false;
            }
            return true;
        }));
    for (auto& m : makers) REQUIRE(m.await());
    REQUIRE(loop->makeDir("sub", 0777, *dir));
    expected.insert("sub");

    // The directory was read (to its end) above: a fresh Dir starts at the top.
    REQUIRE(loop->close(*dir));
    for (std::size_t size : {std::size_t{64 * 1024}, DirIterator::kMinBuffer}) {
        INFO("buffer of " << size << " bytes");
        auto fresh = loop->openDir(root);
        REQUIRE(fresh);
        std::vector<std::byte> buffer(size);
        const auto listed = listAll(*loop, *fresh, buffer);
        CHECK(listed.size() == expected.size());
        CHECK(std::set<std::string>(listed.begin(), listed.end()) == expected);
        REQUIRE(loop->close(*fresh));
    }

    // Kinds and inodes, read on another fiber (which may move between threads).
    auto kinds = loop->async([&] {
        auto fresh = loop->openDir(root);
        if (!fresh) return std::string("openDir failed");
        std::vector<std::byte> buffer(4096);
        DirIterator it(*fresh, buffer);
        std::size_t files = 0, dirs = 0;
        std::string problem;
        for (;;) {
            auto entry = loop->readDir(it);
            if (!entry) { problem = std::string("readDir: ") + entry.error().name(); break; }
            if (!*entry) break;
            const DirEntry e = **entry;
            if (e.kind == FileKind::unknown) {
                // The filesystem did not say: stat tells.
                auto st = loop->stat(e.name, *fresh);
                if (!st) { problem = "stat of an entry failed"; break; }
                (st->kind == FileKind::directory ? dirs : files)++;
            } else {
                (e.kind == FileKind::directory ? dirs : files)++;
            }
            if (e.inode == 0) problem = "an entry without an inode";
            loop->yield();
        }
        (void)loop->close(*fresh);
        if (problem.empty() && (dirs != 1 || files != names.size())) problem = "wrong kinds";
        return problem;
    });
    CHECK(kinds.await() == "");

    // deleteDir of a non-empty directory is refused; emptied, it goes.
    CHECK(loop->deleteDir(root).error() == Errc::DirectoryNotEmpty);
    for (const std::string& name : names) REQUIRE(loop->deleteFile(root + "/" + name));
    REQUIRE(loop->deleteDir(root + "/sub"));
    REQUIRE(loop->deleteDir(root));
    CHECK(loop->stat(root).error() == Errc::FileNotFound);
}

TEST_CASE("rename, deleteFile and deleteDir, between directories", "[dirs]") {
    auto loop = test::makeLoop(2);
    TempDir tmp("rename");
    REQUIRE(loop->makeDir(tmp / "a"));
    REQUIRE(loop->makeDir(tmp / "b"));
    auto a = loop->openDir(tmp / "a");
    auto b = loop->openDir(tmp / "b");
    REQUIRE(a);
    REQUIRE(b);
    auto file = loop->createFile("one", {}, *a);
    REQUIRE(file);
    REQUIRE(*loop->pwrite(*file, bytesOf("moved"), 0) == 5);
    REQUIRE(loop->close(*file));
    const auto inode = loop->stat("one", *a)->inode;

    REQUIRE(loop->rename("one", "two", *a, *b));
    CHECK(loop->stat("one", *a).error() == Errc::FileNotFound);
    auto moved = loop->stat("two", *b);
    REQUIRE(moved);
    CHECK(moved->inode == inode);
    CHECK(moved->size == 5);
    // Within one directory, by absolute paths, replacing a file that exists.
    auto other = loop->createFile(tmp / "b/three");
    REQUIRE(other);
    REQUIRE(loop->close(*other));
    REQUIRE(loop->rename(tmp / "b/two", tmp / "b/three"));
    CHECK(loop->stat(tmp / "b/three")->inode == inode);
    CHECK(loop->stat(tmp / "b/two").error() == Errc::FileNotFound);
    // A directory renamed.
    REQUIRE(loop->rename(tmp / "a", tmp / "c"));
    CHECK(loop->stat(tmp / "c")->kind == FileKind::directory);

    REQUIRE(loop->deleteFile("three", *b));
    CHECK(loop->stat("three", *b).error() == Errc::FileNotFound);
    REQUIRE(loop->close(*a));
    REQUIRE(loop->close(*b));
    REQUIRE(loop->deleteDir(tmp / "b"));
    REQUIRE(loop->deleteDir(tmp / "c"));
    auto top = loop->openDir(tmp.path);
    REQUIRE(top);
    std::vector<std::byte> buffer(1024);
    CHECK(listAll(*loop, *top, buffer).empty());
    REQUIRE(loop->close(*top));
}

TEST_CASE("files and directories: every error is a named Errc", "[dirs][errors]") {
    auto loop = test::makeLoop(2);
    TempDir tmp("errors");
    const std::string missing = tmp / "missing";
    const std::string file_path = tmp / "file";
    auto file = loop->createFile(file_path);
    REQUIRE(file);
    REQUIRE(loop->close(*file));
    REQUIRE(loop->makeDir(tmp / "full"));
    auto inner = loop->createFile(tmp / "full/x");
    REQUIRE(inner);
    REQUIRE(loop->close(*inner));

    // Missing paths.
    CHECK(loop->stat(missing).error() == Errc::FileNotFound);
    CHECK(loop->stat(missing + "/below").error() == Errc::FileNotFound);
    CHECK(loop->deleteFile(missing).error() == Errc::FileNotFound);
    CHECK(loop->deleteDir(missing).error() == Errc::FileNotFound);
    CHECK(loop->openDir(missing).error() == Errc::FileNotFound);
    CHECK(loop->rename(missing, tmp / "elsewhere").error() == Errc::FileNotFound);
    CHECK(loop->makeDir(missing + "/below").error() == Errc::FileNotFound);

    // The wrong kind of file.
    CHECK(loop->openDir(file_path).error() == Errc::NotDir);
    CHECK(loop->stat(file_path + "/below").error() == Errc::NotDir);
    CHECK(loop->deleteDir(file_path).error() == Errc::NotDir);
    CHECK(loop->deleteFile(tmp / "full").error() == Errc::IsDir);
    CHECK(loop->rename(file_path, tmp / "full").error() == Errc::IsDir);
    CHECK(loop->makeDir(file_path).error() == Errc::PathAlreadyExists);
    CHECK(loop->makeDir(tmp / "full").error() == Errc::PathAlreadyExists);

    // Directories that are not empty.
    CHECK(loop->deleteDir(tmp / "full").error() == Errc::DirectoryNotEmpty);
    REQUIRE(loop->makeDir(tmp / "empty"));
    CHECK(loop->rename(tmp / "empty", tmp / "full").error() == Errc::DirectoryNotEmpty);

    // Names: too long, empty, with a NUL.
    CHECK(loop->stat(tmp / std::string(300, 'n')).error() == Errc::NameTooLong);
    CHECK(loop->makeDir(std::string(5000, 'n')).error() == Errc::NameTooLong);
    CHECK(loop->stat("").error() == Errc::InvalidArgument);
    CHECK(loop->deleteFile(std::string_view("a\0b", 3)).error() == Errc::InvalidArgument);
    CHECK(loop->rename(file_path, "").error() == Errc::InvalidArgument);

    // Permissions (root ignores them: checked only when they apply).
    if (geteuid() != 0) {
        REQUIRE(chmod((tmp / "full").c_str(), 0500) == 0);
        CHECK(loop->deleteFile(tmp / "full/x").error() == Errc::AccessDenied);
        CHECK(loop->makeDir(tmp / "full/y").error() == Errc::AccessDenied);
        REQUIRE(chmod((tmp / "full").c_str(), 0700) == 0);
    }

    // Closed and made-up directories, and too small a buffer.
    auto dir = loop->openDir(tmp.path);
    REQUIRE(dir);
    std::byte small[DirIterator::kMinBuffer - 1];
    DirIterator tiny(*dir, small);
    CHECK(loop->readDir(tiny).error() == Errc::InvalidArgument);
    REQUIRE(loop->close(*dir));
    CHECK(loop->close(*dir).error() == Errc::BadFileDescriptor);
    std::byte buffer[1024];
    DirIterator closed(*dir, buffer);
    CHECK(loop->readDir(closed).error() == Errc::BadFileDescriptor);
    CHECK(loop->stat("file", *dir).error() == Errc::BadFileDescriptor);
    CHECK(loop->close(Dir::cwd()).error() == Errc::BadFileDescriptor);
    // readDir of a File that is no directory.
    auto plain = loop->openFile(file_path);
    REQUIRE(plain);
    DirIterator not_dir(Dir{plain->fd}, buffer);
    CHECK(loop->readDir(not_dir).error() == Errc::NotDir);
    REQUIRE(loop->close(*plain));
}

TEST_CASE("a trace records the file and directory operations by name", "[dirs][trace]") {
    TempDir tmp("trace");
    const std::string trace_path = tmp / "ops.fstrace";
    {
        trace::Recorder recorder(trace_path);
        REQUIRE(recorder.ok());
        auto loop = test::makeLoop(2);
        REQUIRE(loop->makeDir(tmp / "d"));
        auto dir = loop->openDir(tmp / "d");
        REQUIRE(dir);
        auto file = loop->createFile("f", {.read = true}, *dir);
        REQUIRE(file);
        REQUIRE(loop->stat(*file));
        REQUIRE(loop->setLength(*file, 10));
        REQUIRE(loop->sync(*file));
        REQUIRE(loop->syncData(*file));
        REQUIRE(loop->close(*file));
        std::byte buffer[1024];
        REQUIRE(listAll(*loop, *dir, buffer).size() == 1);
        REQUIRE(loop->rename("f", "g", *dir, *dir));
        REQUIRE(loop->deleteFile("g", *dir));
        REQUIRE(loop->close(*dir));
        REQUIRE(loop->deleteDir(tmp / "d"));
        loop.reset();
        REQUIRE(recorder.stop());
    }
    trace::Trace trace;
    trace::ReadError error;
    const bool read = trace::readTrace(trace_path, trace, error, {.strict = true});
    INFO(error.text());
    REQUIRE(read);
    std::multiset<std::string> submitted, completed;
    for (const trace::Event& e : trace.events) {
        if (e.kind == trace::EventKind::Submit) submitted.insert(trace::opcodeName(e.small));
        if (e.kind == trace::EventKind::Complete) completed.insert(trace::opcodeName(e.small));
    }
    // Every one by name (not "op N"), submitted and completed as often as called.
    struct Expected {
        const char* name;
        std::size_t times;
    };
    const Expected expected[] = {{"statx", 1},    {"ftruncate", 1}, {"fsync", 2},      {"mkdirat", 1},
                                 {"renameat", 1}, {"unlinkat", 2},  {"getdents64", 2}, {"openat", 2}};
    for (const Expected& op : expected) {
        INFO(op.name);
        CHECK(submitted.count(op.name) == completed.count(op.name));
        // A directory read takes as many getdents64 calls as the kernel
        // needs to hand over the entries, plus the one that finds the end:
        // at least two here, but the split is the filesystem's (a TSan run
        // saw three).
        if (std::string_view(op.name) == "getdents64") CHECK(submitted.count(op.name) >= op.times);
        else CHECK(submitted.count(op.name) == op.times);
    }
}
