// Lesson narratives: Markdown (parsed by md4c) turned into plain blocks of
// styled runs, and drawn with ImGui with word wrapping. Code spans of the
// form `checkpoint: NAME` become links to that checkpoint in the trace.
#pragma once

#include <functional>
#include <string>
#include <vector>

struct ImFont;

namespace fiberscope::viewer {

enum class RunStyle : unsigned char { Normal, Emphasis, Strong, Code, Link, Checkpoint };

struct TextRun {
    std::string text;
    RunStyle style = RunStyle::Normal;
    std::string target; // Link: href; Checkpoint: the mark's full label
};

enum class BlockKind : unsigned char { Paragraph, Heading, ListItem, CodeBlock, Rule, Quote };

struct TextBlock {
    BlockKind kind = BlockKind::Paragraph;
    int level = 0; // heading level, or list nesting depth (1 = top)
    std::vector<TextRun> runs;
};

struct Document {
    std::vector<TextBlock> blocks;
};

// Parses Markdown (CommonMark + tables/strikethrough ignored gracefully).
Document parseMarkdown(const std::string& text);

struct MarkdownFonts {
    ImFont* regular = nullptr;
    ImFont* mono = nullptr;
};

// Draws the document in the current ImGui window, wrapping at its width.
// `on_checkpoint` is called when a checkpoint link is clicked; `exists`
// says whether a checkpoint is in the loaded trace (missing ones are drawn dim).
void drawMarkdown(const Document& document, const MarkdownFonts& fonts,
                  const std::function<void(const std::string&)>& on_checkpoint,
                  const std::function<bool(const std::string&)>& exists);

} // namespace fiberscope::viewer
