#include "apps/common/cli.h"

#include <cctype>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <utility>

#include "core/error.h"

namespace tunecnn {

std::optional<std::size_t> parse_byte_count(const std::string& text) {
  std::size_t used = 0;
  unsigned long long bytes = 0;
  try {
    bytes = std::stoull(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (text.empty() || text[0] == '-' || used != text.size()) return std::nullopt;
  return static_cast<std::size_t>(bytes);
}

std::optional<std::size_t> parse_memory_size(const std::string& text) {
  const std::size_t digits = text.find_first_not_of("0123456789");
  const std::optional<std::size_t> number = parse_byte_count(text.substr(0, digits));
  if (!number || digits == std::string::npos) return number;
  std::string unit = text.substr(digits);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const auto& [prefix, shift] : {std::pair{'K', 10}, std::pair{'M', 20}, std::pair{'G', 30}}) {
    if (unit != std::string(1, prefix) && unit != std::string(1, prefix) + "B" &&
        unit != std::string(1, prefix) + "IB")
      continue;
    if (*number > (SIZE_MAX >> shift)) return std::nullopt;
    return *number << shift;
  }
  return std::nullopt;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

void add_allocator_cache_option(CommandLine& cli) {
  cli.option("allocator-cache", "keep",
             "what the CPU allocator does with freed blocks: keep (hold each for reuse: no page faults "
             "from step to step) or bounded (never hold more than the highest live total: less memory, "
             "steps 13-41% slower)");
}

CachePolicy allocator_cache_option(const CommandLine& cli) {
  try {
    return parse_cache_policy(cli.get("allocator-cache"));
  } catch (const Error& e) {
    throw UsageError(std::string("--allocator-cache: ") + e.what());
  }
}

void add_recompute_activations_option(CommandLine& cli) {
  cli.flag("recompute-activations",
           "keep less for backward: BatchNorm(+ReLU) and depthwise conv outputs are released once the "
           "next layer has read them and rebuilt in backward from what is kept (one pass each; "
           "MobileNet-224's step holds 0.47x the memory, about 10% slower), and LRN's saved base; on "
           "either device");
}

Shape parse_chw(const std::string& text, const std::string& option) {
  Shape shape;
  for (std::string rest = text; !rest.empty();) {
    const auto comma = rest.find(',');
    const std::optional<std::size_t> value = parse_byte_count(rest.substr(0, comma));
    TUNECNN_CHECK(value && *value > 0, "--", option, " must be C,H,W with positive sizes, got '", text, "'");
    shape.push_back(static_cast<std::int64_t>(*value));
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
  }
  TUNECNN_CHECK(shape.size() == 3, "--", option, " must be C,H,W, got '", text, "'");
  return shape;
}

CommandLine::CommandLine(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

void CommandLine::option(const std::string& name, const std::string& default_value,
                         const std::string& help) {
  order_.push_back(name);
  specs_[name] = Spec{default_value, help, false};
}

void CommandLine::flag(const std::string& name, const std::string& help) {
  order_.push_back(name);
  specs_[name] = Spec{"", help, true};
}

bool CommandLine::parse(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << help();
      return false;
    }
    // A one-letter option is written with one dash, as in `-o FILE`.
    if (arg.size() == 2 && arg[0] == '-' && specs_.count(arg.substr(1))) arg = "-" + arg;
    if (!positional_name_.empty() && (arg.empty() || arg[0] != '-')) {
      positional_.push_back(arg);
      continue;
    }
    if (arg.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + arg + "' (options start with --; see --help)");
    std::string name = arg.substr(2), value;
    if (const auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto spec = specs_.find(name);
    if (spec == specs_.end()) throw UsageError("unknown option --" + name + " (see --help)");
    if (spec->second.is_flag) {
      values_[name] = "1";
      continue;
    }
    if (value.empty() && arg.find('=') == std::string::npos) {
      if (i + 1 >= argc) throw UsageError("option --" + name + " needs a value");
      value = argv[++i];
      if (value.rfind("--", 0) == 0)
        throw UsageError("option --" + name + " needs a value, but the next argument is the option " + value +
                         " (write --" + name + "=VALUE for a value that starts with --)");
    }
    values_[name] = value;
  }
  return true;
}

std::string CommandLine::get(const std::string& name) const {
  auto spec = specs_.find(name);
  TUNECNN_CHECK(spec != specs_.end(), "option --", name, " was never declared");
  auto value = values_.find(name);
  return value != values_.end() ? value->second : spec->second.default_value;
}

int CommandLine::get_int(const std::string& name) const {
  const std::string text = get(name);
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < INT_MIN || value > INT_MAX)
    throw UsageError("--" + name + " expects a whole number, got '" + text + "'");
  return static_cast<int>(value);
}

double CommandLine::get_double(const std::string& name) const {
  const std::string text = get(name);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0') throw UsageError("--" + name + " expects a number, got '" + text + "'");
  return value;
}

bool CommandLine::has(const std::string& name) const { return !get(name).empty(); }

void CommandLine::positionals(const std::string& name, const std::string& help) {
  positional_name_ = name;
  positional_help_ = help;
}

std::string CommandLine::help() const {
  std::string out = "usage: " + program_ + " [options]" + (positional_name_.empty() ? "" : " " + positional_name_ + "...") +
                    "\n\n" + summary_ + "\n\n" +
                    (positional_name_.empty() ? "" : positional_name_ + ": " + positional_help_ + "\n\n") + "options:\n";
  for (const std::string& name : order_) {
    const Spec& spec = specs_.at(name);
    std::string left = (name.size() == 1 ? "  -" : "  --") + name + (spec.is_flag ? "" : " VALUE");
    left.resize(std::max<std::size_t>(left.size() + 2, 26), ' ');
    out += left + spec.help;
    if (!spec.is_flag && !spec.default_value.empty()) out += " (default: " + spec.default_value + ")";
    out += "\n";
  }
  return out + "  --help                  this text\n";
}

}  // namespace tunecnn
