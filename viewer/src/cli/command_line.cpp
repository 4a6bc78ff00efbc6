#include "cli/command_line.hpp"

#include "cli/values.hpp"

#include <cstring>

namespace fiberscope::cli {

std::string HelpFormatter::make_usage(const CLI::App* app, std::string name) const {
    if (const auto it = synopsis_.find(app); it != synopsis_.end()) return "usage: " + name + " " + it->second + "\n";
    return CLI::Formatter::make_usage(app, std::move(name));
}

std::string HelpFormatter::make_option_usage(const CLI::Option* option) const {
    const std::string name = make_option_name(option, true);
    return optional_.count(option) ? "[" + name + "]" : name;
}

std::string HelpFormatter::make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    // The footer holds the command's longer explanation: it reads better
    // between the synopsis and the options than after them.
    std::string out = make_usage(app, name);
    if (!app->get_description().empty()) out += "\n" + app->get_description() + "\n";
    if (!app->get_footer().empty()) out += "\n" + app->get_footer() + "\n";
    out += make_positionals(app);
    out += make_groups(app, mode);
    out += make_subcommands(app, mode);
    return out;
}

std::string oneLineFailure(const CLI::App* top, const CLI::Error& error) {
    // The innermost command being parsed when the error came.
    const CLI::App* failing = top;
    while (!failing->get_subcommands().empty()) failing = failing->get_subcommands().front();
    const std::string command = failing == top ? top->get_name() : top->get_name() + " " + failing->get_name();
    // CLI11 says a value is missing as "--top: 1 required N missing"; the
    // rest of its messages read well as they are.
    std::string message = error.what();
    if (const std::size_t required = message.find(": 1 required ");
        error.get_name() == "ArgumentMismatch" && required != std::string::npos && message.ends_with(" missing")) {
        const std::size_t type = required + std::strlen(": 1 required ");
        message = message.substr(0, required) + " needs a value (" +
                  message.substr(type, message.size() - std::strlen(" missing") - type) + ")";
    }
    // CLI11 quotes values in its messages, so they too go through
    // printable(): a value may contain a newline or an escape sequence.
    return command + ": " + printable(message, 300) + "; run '" + command +
           " --help'\n";
}

std::string displayName(const std::string& names) {
    std::string first;
    std::size_t start = 0;
    while (start <= names.size()) {
        const std::size_t comma = std::min(names.find(',', start), names.size());
        const std::string name = names.substr(start, comma - start);
        if (name.rfind("--", 0) == 0) return name;
        if (first.empty()) first = name;
        start = comma + 1;
    }
    return first;
}

std::string leftoverComplaint(const CLI::App& app, const std::string& extra_positional) {
    std::vector<std::string> rest = app.remaining();
    // CLI11 keeps the "--" that ends the options among the leftovers even
    // when what follows it went to the positionals: it is no complaint.
    std::erase(rest, "--");
    if (rest.empty()) return {};
    const std::string& first = rest.front();
    if (first.size() > 1 && first[0] == '-') return "unknown option '" + printable(first) + "'";
    return extra_positional + " ('" + printable(first) + "' is extra)";
}

} // namespace fiberscope::cli
