#include "ui/markdown.hpp"

#include <imgui.h>
#include <md4c.h>

#include <algorithm>
#include <cstring>

#include "lessons/catalog.hpp"
#include "ui/colors.hpp"

namespace fiberscope::viewer {

namespace {

struct Builder {
    Document document;
    std::vector<RunStyle> spans; // open span styles
    std::string href;
    int list_depth = 0;
    bool in_block = false;

    TextBlock& block() {
        if (document.blocks.empty()) document.blocks.emplace_back();
        return document.blocks.back();
    }
    void open(BlockKind kind, int level) {
        document.blocks.push_back(TextBlock{kind, level, {}});
        in_block = true;
    }
    RunStyle style() const { return spans.empty() ? RunStyle::Normal : spans.back(); }
};

int enterBlock(MD_BLOCKTYPE type, void* detail, void* user) {
    auto& b = *static_cast<Builder*>(user);
    switch (type) {
    case MD_BLOCK_H: b.open(BlockKind::Heading, static_cast<int>(static_cast<MD_BLOCK_H_DETAIL*>(detail)->level)); break;
    case MD_BLOCK_P:
        // A paragraph inside a list item continues the item.
        if (!(b.list_depth && !b.document.blocks.empty() && b.document.blocks.back().kind == BlockKind::ListItem &&
              b.document.blocks.back().runs.empty()))
            b.open(BlockKind::Paragraph, 0);
        break;
    case MD_BLOCK_UL:
    case MD_BLOCK_OL: ++b.list_depth; break;
    case MD_BLOCK_LI: b.open(BlockKind::ListItem, b.list_depth); break;
    case MD_BLOCK_CODE: b.open(BlockKind::CodeBlock, 0); break;
    case MD_BLOCK_HR: b.open(BlockKind::Rule, 0); break;
    case MD_BLOCK_QUOTE: b.open(BlockKind::Quote, 0); break;
    default: break;
    }
    return 0;
}

int leaveBlock(MD_BLOCKTYPE type, void*, void* user) {
    auto& b = *static_cast<Builder*>(user);
    if (type == MD_BLOCK_UL || type == MD_BLOCK_OL) --b.list_depth;
    return 0;
}

int enterSpan(MD_SPANTYPE type, void* detail, void* user) {
    auto& b = *static_cast<Builder*>(user);
    switch (type) {
    case MD_SPAN_EM: b.spans.push_back(RunStyle::Emphasis); break;
    case MD_SPAN_STRONG: b.spans.push_back(RunStyle::Strong); break;
    case MD_SPAN_CODE: b.spans.push_back(RunStyle::Code); break;
    case MD_SPAN_A: {
        auto* a = static_cast<MD_SPAN_A_DETAIL*>(detail);
        b.href.assign(a->href.text, a->href.size);
        b.spans.push_back(RunStyle::Link);
        break;
    }
    default: b.spans.push_back(b.style()); break;
    }
    return 0;
}

int leaveSpan(MD_SPANTYPE, void*, void* user) {
    auto& b = *static_cast<Builder*>(user);
    if (!b.spans.empty()) b.spans.pop_back();
    return 0;
}

int onText(MD_TEXTTYPE type, const MD_CHAR* data, MD_SIZE size, void* user) {
    auto& b = *static_cast<Builder*>(user);
    std::string chunk(data, size);
    if (type == MD_TEXT_SOFTBR) chunk = " ";
    if (type == MD_TEXT_BR) chunk = "\n";
    if (type == MD_TEXT_ENTITY) {
        if (chunk == "&amp;") chunk = "&";
        else if (chunk == "&lt;") chunk = "<";
        else if (chunk == "&gt;") chunk = ">";
        else if (chunk == "&nbsp;") chunk = " ";
    }
    TextRun run{chunk, b.style(), {}};
    if (run.style == RunStyle::Link) run.target = b.href;
    if (run.style == RunStyle::Code && chunk.rfind(kCheckpointPrefix, 0) == 0) {
        run.style = RunStyle::Checkpoint;
        run.target = chunk;
    }
    TextBlock& block = b.block();
    // Merge with the previous run of the same style (md4c splits text often).
    if (!block.runs.empty() && block.runs.back().style == run.style && run.style != RunStyle::Checkpoint &&
        block.runs.back().target == run.target)
        block.runs.back().text += run.text;
    else
        block.runs.push_back(std::move(run));
    return 0;
}

ImVec4 toVec4(Color c) {
    return ImVec4((c & 0xFF) / 255.0f, ((c >> 8) & 0xFF) / 255.0f, ((c >> 16) & 0xFF) / 255.0f, ((c >> 24) & 0xFF) / 255.0f);
}

// Draws runs word by word, wrapping at the window's content width.
void drawRuns(const std::vector<TextRun>& runs, const MarkdownFonts& fonts, float indent,
              const std::function<void(const std::string&)>& on_checkpoint,
              const std::function<bool(const std::string&)>& exists, Color base) {
    const float right = ImGui::GetWindowContentRegionMax().x + ImGui::GetWindowPos().x - 4;
    const float left = ImGui::GetCursorScreenPos().x + indent;
    float x = left;
    float y = ImGui::GetCursorScreenPos().y;
    const float line = ImGui::GetTextLineHeightWithSpacing();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    for (std::size_t r = 0; r < runs.size(); ++r) {
        const TextRun& run = runs[r];
        ImFont* font = run.style == RunStyle::Code || run.style == RunStyle::Checkpoint ? fonts.mono : fonts.regular;
        Color color = base;
        if (run.style == RunStyle::Emphasis) color = rgba(200, 215, 240);
        if (run.style == RunStyle::Strong) color = rgba(255, 255, 255);
        if (run.style == RunStyle::Code) color = rgba(170, 220, 170);
        if (run.style == RunStyle::Link) color = rgba(120, 180, 255);
        const bool checkpoint = run.style == RunStyle::Checkpoint;
        const bool present = checkpoint && exists(run.target);
        if (checkpoint) color = present ? palette::mark : palette::text_dim;
        ImGui::PushFont(font);
        // Split into words, keeping the spaces with the word before them.
        std::size_t i = 0;
        const std::string& t = checkpoint ? run.text : run.text;
        while (i < t.size()) {
            if (t[i] == '\n') {
                x = left;
                y += line;
                ++i;
                continue;
            }
            std::size_t j = i;
            // A checkpoint link is one unbreakable word.
            if (checkpoint) j = t.size();
            else {
                while (j < t.size() && t[j] != ' ' && t[j] != '\n') ++j;
                while (j < t.size() && t[j] == ' ') ++j;
            }
            const std::string word = t.substr(i, j - i);
            const ImVec2 size = ImGui::CalcTextSize(word.c_str());
            if (x + size.x > right && x > left) {
                x = left;
                y += line;
            }
            const ImVec2 at(x, y);
            if (run.style == RunStyle::Code || checkpoint)
                dl->AddRectFilled(ImVec2(at.x - 1, at.y), ImVec2(at.x + size.x + 1, at.y + size.y), rgba(40, 44, 54), 3.0f);
            dl->AddText(at, color, word.c_str());
            if (checkpoint && present) {
                ImGui::SetCursorScreenPos(at);
                ImGui::PushID(static_cast<int>(r * 131 + i));
                if (ImGui::InvisibleButton("checkpoint", ImVec2(std::max(size.x, 1.0f), size.y))) on_checkpoint(run.target);
                if (ImGui::IsItemHovered()) {
                    dl->AddLine(ImVec2(at.x, at.y + size.y), ImVec2(at.x + size.x, at.y + size.y), color);
                    ImGui::SetTooltip("Jump the timeline and the scheduler state to this moment");
                }
                ImGui::PopID();
            }
            x += size.x;
            i = j;
        }
        ImGui::PopFont();
    }
    ImGui::SetCursorScreenPos(ImVec2(ImGui::GetWindowPos().x + ImGui::GetStyle().WindowPadding.x - ImGui::GetScrollX(), y + line));
    ImGui::Dummy(ImVec2(1, 2));
    (void)toVec4;
}

} // namespace

Document parseMarkdown(const std::string& text) {
    Builder builder;
    MD_PARSER parser{};
    parser.flags = MD_FLAG_NOHTML | MD_FLAG_TABLES | MD_FLAG_STRIKETHROUGH;
    parser.enter_block = enterBlock;
    parser.leave_block = leaveBlock;
    parser.enter_span = enterSpan;
    parser.leave_span = leaveSpan;
    parser.text = onText;
    md_parse(text.data(), static_cast<MD_SIZE>(text.size()), &parser, &builder);
    return builder.document;
}

void drawMarkdown(const Document& document, const MarkdownFonts& fonts,
                  const std::function<void(const std::string&)>& on_checkpoint,
                  const std::function<bool(const std::string&)>& exists) {
    for (const TextBlock& block : document.blocks) {
        switch (block.kind) {
        case BlockKind::Heading: {
            ImGui::Spacing();
            const Color c = block.level <= 1 ? rgba(140, 190, 255) : rgba(190, 210, 240);
            drawRuns(block.runs, fonts, 0, on_checkpoint, exists, c);
            if (block.level <= 2) ImGui::Separator();
            break;
        }
        case BlockKind::Paragraph: drawRuns(block.runs, fonts, 0, on_checkpoint, exists, palette::text); break;
        case BlockKind::Quote: drawRuns(block.runs, fonts, 12, on_checkpoint, exists, palette::text_dim); break;
        case BlockKind::ListItem: {
            const float indent = 14.0f * static_cast<float>(block.level);
            const ImVec2 at = ImGui::GetCursorScreenPos();
            ImGui::GetWindowDrawList()->AddCircleFilled(ImVec2(at.x + indent - 8, at.y + ImGui::GetTextLineHeight() / 2), 2.5f,
                                                        palette::text_dim);
            drawRuns(block.runs, fonts, indent, on_checkpoint, exists, palette::text);
            break;
        }
        case BlockKind::CodeBlock: {
            std::string code;
            for (const auto& run : block.runs) code += run.text;
            while (!code.empty() && code.back() == '\n') code.pop_back();
            ImGui::PushFont(fonts.mono);
            ImGui::PushStyleColor(ImGuiCol_ChildBg, ImVec4(0.13f, 0.14f, 0.17f, 1));
            const float h = ImGui::GetTextLineHeightWithSpacing() * (1 + static_cast<float>(std::count(code.begin(), code.end(), '\n'))) + 10;
            ImGui::BeginChild(ImGui::GetID(&block), ImVec2(0, h), false, ImGuiWindowFlags_HorizontalScrollbar);
            ImGui::TextColored(ImVec4(0.67f, 0.86f, 0.67f, 1), "%s", code.c_str());
            ImGui::EndChild();
            ImGui::PopStyleColor();
            ImGui::PopFont();
            break;
        }
        case BlockKind::Rule: ImGui::Separator(); break;
        }
    }
}

} // namespace fiberscope::viewer
