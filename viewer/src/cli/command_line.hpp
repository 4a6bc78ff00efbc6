// CLI11 set up the way the `fiberscope` command wants it: help that starts
// with "usage: fiberscope COMMAND ...", errors that are one line naming the
// option and the value and pointing at the command's --help, and options
// whose text goes through the strict parsers of cli/values.hpp.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

namespace fiberscope::cli {

// Help text: the usage line first, then what the command does, then its
// options; the top level lists its subcommands under "commands:".
class HelpFormatter : public CLI::Formatter {
public:
    // Replaces the generated synopsis after "usage: fiberscope COMMAND" (for
    // `record`, whose PROGRAM [ARGS...] CLI11 does not parse itself).
    void setSynopsis(const CLI::App* app, std::string synopsis) { synopsis_[app] = std::move(synopsis); }

    // Positionals show in the synopsis as required ("FILE") unless marked
    // optional ("[FILE]"): the commands check for them themselves, to say
    // what is missing in their own words, so CLI11 sees them all as optional.
    void markOptional(const CLI::Option* positional) { optional_.insert(positional); }

    std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override;
    std::string make_usage(const CLI::App* app, std::string name) const override;
    std::string make_option_usage(const CLI::Option* option) const override;

private:
    std::map<const CLI::App*, std::string> synopsis_;
    std::set<const CLI::Option*> optional_;
};

// The one line printed for a parse error (CLI11's failure_message): which
// command, what is wrong, where the help is.
std::string oneLineFailure(const CLI::App* top, const CLI::Error& error);

// Adds an option taking one value that `parse` turns into `target`. A value
// it rejects fails the parse with "<option>: <parse's message>".
// The name an option's errors use: its long name ("--output" of "-o,--output").
std::string displayName(const std::string& names);

template <class T>
CLI::Option* addParsedOption(CLI::App& app, const std::string& names, T& target,
                             std::function<bool(std::string_view, T&, std::string&)> parse, const std::string& help,
                             const std::string& type_name) {
    auto apply = [&target, parse = std::move(parse), shown = displayName(names)](const std::string& text) {
        T value{};
        std::string error;
        if (!parse(text, value, error)) throw CLI::ValidationError(shown, error);
        target = value;
    };
    return app.add_option_function<std::string>(names, std::move(apply), help)->type_name(type_name);
}

// What is left over after parsing (CLI11's remaining(): options the command
// does not have, positionals beyond its own), as a one-line complaint, or
// empty when nothing is left. `extra_positional` words the second case, e.g.
// "one trace file at a time".
std::string leftoverComplaint(const CLI::App& app, const std::string& extra_positional);

} // namespace fiberscope::cli
